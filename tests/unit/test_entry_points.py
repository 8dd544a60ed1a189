"""ssebench.host.entry_points reads what importlib.metadata reads, without importing it."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from ssebench.host import entry_points as entry_points


@pytest.mark.parametrize("group", ["ssebench.backends", "ssebench.agents", "console_scripts"])
def test_the_installed_entry_points_are_importlib_metadatas(group: str) -> None:
    ours = sorted((e.name, e.value) for e in entry_points.entry_points(group))
    theirs = sorted((e.name, e.value) for e in metadata.entry_points(group=group))
    assert ours == theirs


def write_distribution(folder: Path, name: str, text: str) -> None:
    info = folder / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "entry_points.txt").write_text(text)


def test_the_first_distribution_of_a_name_wins_and_values_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    write_distribution(
        first,
        "Some_Plugin",
        "# a comment\n[other]\nx = os:sep\n\n[ssebench.test]\npath = os.path:join\nmodule = json\n",
    )
    write_distribution(second, "some.plugin", "[ssebench.test]\nshadowed = os:sep\n")
    write_distribution(second, "another", "[ssebench.test]\nnested = os:path.join [extra]\n")
    monkeypatch.setattr(sys, "path", [str(first), str(tmp_path / "missing"), str(second)])
    found = entry_points.entry_points("ssebench.test")
    assert [(e.name, e.value) for e in found] == [
        ("path", "os.path:join"),
        ("module", "json"),
        ("nested", "os:path.join [extra]"),
    ]
    import json
    import os.path

    assert [e.load() for e in found] == [os.path.join, json, os.path.join]
    assert [(e.name, e.value) for e in metadata.entry_points(group="ssebench.test")] == [
        (e.name, e.value) for e in found
    ]


def test_a_malformed_value_is_an_import_error() -> None:
    with pytest.raises(ImportError, match="malformed"):
        entry_points.EntryPoint("x", "not a value!", "g").load()


def test_a_zip_file_on_the_path_is_left_to_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "plugins.zip"
    archive.write_bytes(b"")
    monkeypatch.setattr(sys, "path", [str(archive)])
    asked: list[str] = []

    def recorded(group: str) -> list[entry_points.EntryPoint]:
        asked.append(group)
        return []

    monkeypatch.setattr(entry_points, "_from_importlib_metadata", recorded)
    assert entry_points.entry_points("g") == []
    assert asked == ["g"]


def test_loading_a_backend_does_not_import_importlib_metadata() -> None:
    script = (
        "import sys\n"
        "from ssebench.backends import load_backend\n"
        "load_backend('docker')\n"
        "print('importlib.metadata' in sys.modules, 'email' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.split() == ["False", "False"], done.stderr
