from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ssebench.errors import TaskError
from ssebench.extensions import TaskResources
from ssebench.tasks import load_dataset, load_task
from ssebench.tasks.dataset import manifest_differences, write_manifest

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "datasets" / "tiny"


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    copy = tmp_path / "tiny"
    shutil.copytree(TINY, copy)
    return copy


def edit_task(dataset: Path, old: str, new: str) -> Path:
    file = dataset / "tiny-add" / "task.yaml"
    text = file.read_text()
    assert old in text
    file.write_text(text.replace(old, new))
    return file


def test_loads_the_fixture_task() -> None:
    task = load_task(TINY / "tiny-add", dataset="tiny")
    assert task.id == "tiny-add" and task.language == "python"
    assert task.source_dir == "/src/tiny"
    assert task.base_image == "debian:bookworm-slim"
    assert task.container_metadata()["hidden_test"].startswith("python3 -m unittest")


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("build: python3 -m compileall -q .\n", "", "build"),
        ("language: python", "language: cobol", "language"),
        ("id: tiny-add", "id: other-name", "id"),
        ("source_dir: /src/tiny", "source_dir: src/tiny", "source_dir"),
        ("packages: [python3]", "packages: python3", "packages"),
        ("prompt: |\n  add(2, 3) returns -1; it should return 5.\n", "prompt: 3\n", "prompt"),
        ("id: tiny-add", "id: tiny-add\nresources: {cpus: 0}", "resources"),
        ("id: tiny-add", "id: tiny-add\nresources: {memory_mb: 1.5}", "resources"),
        ("id: tiny-add", "id: tiny-add\nresources: {disk: 3}", "resources"),
    ],
)
def test_malformed_task_names_file_and_field(dataset: Path, old: str, new: str, field: str) -> None:
    file = edit_task(dataset, old, new)
    with pytest.raises(TaskError) as raised:
        load_task(file.parent)
    assert str(file) in str(raised.value)
    assert f"'{field}'" in str(raised.value)
    assert raised.value.field == field


def test_a_tasks_resources(dataset: Path) -> None:
    assert load_task(dataset / "tiny-add").resources == TaskResources()
    file = edit_task(dataset, "id: tiny-add", "id: tiny-add\nresources: {cpus: 2, memory_mb: 512}")
    assert load_task(file.parent).resources == TaskResources(cpus=2.0, memory_mb=512)


def test_missing_reference_patch_is_named(dataset: Path) -> None:
    (dataset / "tiny-add" / "reference.patch").unlink()
    with pytest.raises(TaskError, match=r"reference\.patch is missing"):
        load_task(dataset / "tiny-add")


def test_invalid_yaml_names_the_line(dataset: Path) -> None:
    (dataset / "tiny-add" / "task.yaml").write_text("id: [unclosed\n")
    with pytest.raises(TaskError, match=r"not valid YAML \(line"):
        load_task(dataset / "tiny-add")


def test_manifest_notices_a_changed_file(dataset: Path) -> None:
    loaded = load_dataset(dataset)
    assert manifest_differences(loaded) == []
    (dataset / "tiny-add" / "repo" / "tiny.py").write_text("def add(a, b):\n    return 0\n")
    assert manifest_differences(load_dataset(dataset)) == [
        "task tiny-add: files or metadata changed"
    ]
    write_manifest(load_dataset(dataset))
    assert manifest_differences(load_dataset(dataset)) == []


def test_dataset_commands(dataset: Path) -> None:
    def cli(*arguments: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ssebench.cli.main", *arguments], capture_output=True, text=True
        )

    assert cli("dataset", "validate", str(dataset)).returncode == 0
    assert cli("dataset", "manifest", str(dataset), "--check").returncode == 0
    edit_task(dataset, "add() subtracts", "add() is wrong")
    stale = cli("dataset", "manifest", str(dataset), "--check")
    assert stale.returncode == 1 and "out of date" in stale.stderr
    edit_task(dataset, "language: python", "language: cobol")
    broken = cli("dataset", "validate", str(dataset))
    assert broken.returncode == 1 and "'language'" in broken.stderr
    assert "Traceback" not in broken.stderr


def test_pilot_dataset_is_well_formed_and_its_manifest_current() -> None:
    pilot = load_dataset(Path(__file__).resolve().parents[2] / "datasets" / "pilot")
    assert len(pilot.tasks) >= 6
    assert {"python", "c", "go"} <= {task.language for task in pilot.tasks}
    assert manifest_differences(pilot) == []
