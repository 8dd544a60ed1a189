from __future__ import annotations

import re
from pathlib import Path

import pytest

from ssebench.errors import UserError
from ssebench.results.directory import RunDirectory, check_run_id, new_run_id, path_component


def test_default_run_id_shape() -> None:
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", new_run_id())
    assert check_run_id(new_run_id())


@pytest.mark.parametrize("bad", ["latest", "", "a/b", "x" * 65, "..", "sp ace", "é"])
def test_bad_run_ids_are_refused(bad: str) -> None:
    with pytest.raises(UserError, match="Invalid run ID"):
        check_run_id(bad)


def test_layout_and_latest_link(tmp_path: Path) -> None:
    first = RunDirectory.for_run(tmp_path, task="t", model="openai/gpt-4o", agent="a", run_id="r1")
    assert first.path == tmp_path / "t" / "openai__gpt-4o" / "a" / "r1"
    first.create()
    assert first.archive.is_dir() and first.result_file.read_text() == ""
    second = RunDirectory.for_run(tmp_path, task="t", model="openai/gpt-4o", agent="a", run_id="r2")
    second.create()
    assert (second.path.parent / "latest").resolve() == second.path
    assert (
        RunDirectory.for_run(tmp_path, task="t", model=None, agent="a", run_id="r").path.parts[-3]
        == "none"
    )
    assert path_component("..") == "_"


def test_an_unusable_results_folder_is_a_user_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    run_dir = RunDirectory.for_run(blocker, task="t", model=None, agent="a", run_id="r")
    with pytest.raises(UserError, match="pass --results DIR"):
        run_dir.create()
