"""`ssebench dataset import harbor` over the real tasks of ../shared/datasets/harbor-real
(their README names each one's source): what each becomes, and the errors."""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from ssebench.agents import load_agent
from ssebench.errors import UserError
from ssebench.harbor.importer import import_tasks, map_images, parse_image_map
from ssebench.runner import DEFAULT_TIMEOUT, RunSettings
from ssebench.tasks.dataset import load_dataset
from ssebench.tasks.model import load_task
from tests.cli import ssebench

REAL = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "harbor-real"
UBUNTU = {"ubuntu:24.04": "debian:bookworm-slim"}


def digest(folder: Path) -> str:
    files = sorted(path for path in folder.rglob("*") if path.is_file())
    return hashlib.sha256(b"".join(path.read_bytes() for path in files)).hexdigest()


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    before = digest(REAL)
    out = tmp_path_factory.mktemp("harbor") / "dataset"
    report = import_tasks([REAL], out, images=UBUNTU)
    assert digest(REAL) == before, "the import changed a source folder"
    assert len(report.imported) == 6, report.skipped
    return out


def test_the_real_tasks_become_a_dataset_that_loads(imported: Path) -> None:
    dataset = load_dataset(imported)
    assert sorted(task.id for task in dataset.tasks) == [
        "cookbook-multi-reward",
        "cookbook-simple-task",
        "hello-alpine",
        "hello-user",
        "hello-world",
        "tb1-evoeval-0",
    ]
    for task in dataset.tasks:
        assert task.verifier is not None
        assert task.reference_patch.name == "solution.sh"
        assert task.reference_patch.read_bytes().startswith(b"#!")
        assert task.source_dir == "/app"


def test_a_harbor_task_keeps_its_verifier_user_and_tests(imported: Path) -> None:
    task = load_task(imported / "hello-user")
    assert task.agent_user == "agent"
    assert task.verifier is not None
    assert (task.verifier.command, task.verifier.reward, task.verifier.user) == (
        "bash /tests/test.sh",
        "reward-file",
        "root",
    )
    assert task.verifier.timeout_sec == 120.0
    # [environment] cpus = 1, memory_mb = 2048: the run's RunSpec.resources.
    assert (task.resources.cpus, task.resources.memory_mb) == (1.0, 2048)
    hidden = imported / "hello-user" / "hidden" / "test.sh"
    assert hidden.read_bytes() == (REAL / "harbor-hello-user" / "tests" / "test.sh").read_bytes()
    assert task.prompt.startswith("Run `whoami` and write the output to `/app/whoami.txt`.")
    # The FROM line is mapped; the rest of the Dockerfile is the task's.
    dockerfile = (imported / "hello-user" / "environment" / "Dockerfile").read_text()
    source = (REAL / "harbor-hello-user" / "environment" / "Dockerfile").read_text()
    assert dockerfile == source.replace("FROM ubuntu:24.04", "FROM debian:bookworm-slim")


def test_a_terminal_bench_task_is_graded_by_pytest_summary(imported: Path) -> None:
    folder = imported / "tb1-evoeval-0"
    task = load_task(folder)
    assert task.verifier is not None
    assert task.verifier.reward == "pytest-summary"
    assert task.verifier.command == "bash /tests/run-tests.sh"
    assert dict(task.verifier.env) == {"TEST_DIR": "/tests"}
    assert (folder / "hidden" / "run-tests.sh").is_file()
    assert (folder / "hidden" / "test_outputs.py").is_file()
    # Its build context is the task folder without tests, solution and task files.
    assert sorted(path.name for path in (folder / "environment").iterdir()) == [
        "Dockerfile",
        "PROVENANCE.md",
    ]


def test_the_command_names_skips_mapped_images_and_unused_keys(tmp_path: Path) -> None:
    done = ssebench(
        "dataset", "import", "harbor", str(REAL), "--out", str(tmp_path / "d"),
        "--image-map", "ubuntu:24.04=debian:bookworm-slim",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == f"6 imported, 1 skipped; the dataset is {tmp_path / 'd'}"
    assert any(
        line.startswith("skipped ")
        and "harbor-separate-verifier-environment" in line
        and "environment_mode = separate is not supported yet" in line
        for line in lines
    ), lines
    assert "image ubuntu:24.04 built as debian:bookworm-slim (--image-map)" in lines
    unused = next(line for line in lines if line.startswith("keys not used by ssebench: "))
    assert "metadata" in unused and "task.version" in unused


def test_a_malformed_task_is_one_line_and_the_others_import(tmp_path: Path) -> None:
    sources = tmp_path / "tasks"
    shutil.copytree(REAL / "harbor-hello-world", sources / "good")
    shutil.copytree(REAL / "harbor-hello-world", sources / "bad")
    toml = sources / "bad" / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_sec = 120.0", 'timeout_sec = "soon"', 1))
    done = ssebench("dataset", "import", "harbor", str(sources), "--out", str(tmp_path / "d"))
    assert done.returncode == 0, done.stderr
    bad = [line for line in done.stdout.splitlines() if line.startswith("skipped ")]
    assert len(bad) == 1 and str(toml) in bad[0] and "timeout_sec" in bad[0], bad
    assert "Traceback" not in done.stdout + done.stderr


def test_nothing_imported_exits_1_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = ssebench(
        "dataset", "import", "harbor", str(tmp_path / "empty"), "--out", str(tmp_path / "d")
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "ssebench: error: no task was imported (see the lines above)"
    )
    missing = ssebench("dataset", "import", "harbor", str(tmp_path / "nope"), "--out", "x")
    assert missing.returncode == 1
    assert "nope: no such folder" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_image_maps_replace_only_the_named_images() -> None:
    mapped: dict[str, str] = {}
    text = "FROM ubuntu:24.04 AS build\nRUN echo FROM ubuntu:24.04\nFROM --platform=x alpine:3\n"
    result = map_images(text, {"ubuntu:24.04": "local/u", "alpine:3": "local/a"}, mapped)
    assert (
        result == "FROM local/u AS build\nRUN echo FROM ubuntu:24.04\nFROM --platform=x local/a\n"
    )
    assert mapped == {"ubuntu:24.04": "local/u", "alpine:3": "local/a"}
    assert parse_image_map(["a=b", "c:1=d/e:2"]) == {"a": "b", "c:1": "d/e:2"}
    for bad in ("a", "=b", "a="):
        with pytest.raises(UserError, match="give NAME=LOCAL"):
            parse_image_map([bad])


def test_the_task_yaml_written_is_plain_yaml(imported: Path) -> None:
    data = yaml.safe_load((imported / "cookbook-multi-reward" / "task.yaml").read_text())
    assert data["verifier"]["reward"] == "reward-file"
    assert data["agent"] == {"timeout_sec": 120.0}


def test_the_tasks_agent_timeout_is_a_runs_timeout_unless_one_is_given(
    imported: Path, tmp_path: Path
) -> None:
    task = load_task(imported / "hello-user")
    assert task.agent_timeout == 120
    untimed = dataclasses.replace(task, agent_timeout=None)

    def settings(**timeouts: Any) -> RunSettings:
        return RunSettings(
            task=task, agent=load_agent("dummy"), model=None, run_id="r",
            results_root=tmp_path, backend="docker", **timeouts,
        )  # fmt: skip

    following = settings(timeout=120, timeout_from_task=True)
    assert following.for_task(task, "r2").timeout == 120
    assert following.for_task(untimed, "r3").timeout == DEFAULT_TIMEOUT
    assert settings(timeout=50).for_task(task, "r4").timeout == 50
    done = ssebench("run", "--help")
    assert "default: the task's own" in " ".join(done.stdout.split())
