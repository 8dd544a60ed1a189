"""`ssebench tasks check`: the in-image script played on this machine against a folder
laid out as the case image lays it out, and the verdict made from its steps. The run
inside a real case image is tests/docker/test_task_check.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ssebench.errors import UserError
from ssebench.images.case_checks import SCRIPT, Step, TaskCheck, check_argv, parse_steps
from ssebench.tasks.model import load_task
from tests.conftest import TINY_DATASET

TINY_ADD = TINY_DATASET / "tiny-add"


def lay_out(tmp_path: Path, **changes: str) -> Path:
    """tiny-add as its case image holds it: the source at source_dir, the private files
    under the task folder; changes replaces task.yaml's commands."""
    task = load_task(TINY_ADD, dataset="tiny")
    source = tmp_path / "src" / "tiny"
    shutil.copytree(TINY_ADD / "repo", source)
    private = tmp_path / "ssebench-task"
    shutil.copytree(TINY_ADD / "hidden", private / "hidden")
    shutil.copy(TINY_ADD / "reference.patch", private / "reference.patch")
    metadata = {**task.container_metadata(), "source_dir": str(source), **changes}
    (private / "task.json").write_text(json.dumps(metadata))
    return private


def play(private: Path, timeout: int = 60) -> tuple[Step, ...]:
    env = {
        **os.environ,
        "SSEBENCH_CHECK_TASK_DIR": str(private),
        "SSEBENCH_CHECK_TIMEOUT": str(timeout),
    }
    done = subprocess.run(
        [sys.executable, "-"],
        input=SCRIPT.read_text(),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return parse_steps(done.stdout)


def test_a_good_task_passes_every_step_it_must(tmp_path: Path) -> None:
    check = TaskCheck(task="tiny-add", image="i", steps=play(lay_out(tmp_path)))
    assert [(s.outcome, s.step, s.exit_code == 0) for s in check.steps] == [
        ("unpatched", "build", True),
        ("unpatched", "test", True),
        ("unpatched", "hidden_test", False),
        ("patched", "patch", True),
        ("patched", "build", True),
        ("patched", "test", True),
        ("patched", "hidden_test", True),
    ]
    assert check.ok and check.problems == []
    assert check.steps[2].line().split() == ["unpatched", "hidden_test", "exit", "1", "ok"]


def test_hidden_tests_that_pass_unpatched_are_the_problem_named(tmp_path: Path) -> None:
    check = TaskCheck("tiny-add", "i", play(lay_out(tmp_path, hidden_test="true")))
    assert check.problems == ["unpatched hidden_test exited 0 (it must fail)"]
    assert check.steps[2].line().endswith("exit 0     WRONG: it must fail")


def test_commands_run_unprivileged_in_a_copy_with_their_own_home(tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("the switch to an unprivileged user happens when the check runs as root")
    probe = 'test "$(id -u)" = 65534 && test -w "$HOME" && test -w "$TMPDIR" && ! test -e .git'
    private = lay_out(tmp_path, build=probe)
    (tmp_path / "src" / "tiny" / ".git").mkdir()
    steps = play(private)
    assert steps[0].exit_code == 0


def test_a_command_out_of_time_is_a_timeout_not_a_failure(tmp_path: Path) -> None:
    steps = play(lay_out(tmp_path, hidden_test="sleep 30"), timeout=1)
    check = TaskCheck("tiny-add", "i", steps)
    hidden = steps[2]
    assert (hidden.step, hidden.exit_code, hidden.detail) == (
        "hidden_test",
        None,
        "no exit within 1s",
    )
    assert "unpatched hidden_test no exit within 1s (it must fail)" in check.problems


def test_a_patch_that_does_not_apply_stops_the_patched_outcome(tmp_path: Path) -> None:
    private = lay_out(tmp_path)
    (private / "reference.patch").write_text("--- a/none.py\n+++ b/none.py\n@@ -1 +1 @@\n-x\n+y\n")
    check = TaskCheck("tiny-add", "i", play(private))
    assert check.problems[0].startswith("patched patch exited 1")
    assert [step.step for step in check.steps if step.outcome == "patched"] == ["patch"]


def test_missing_steps_are_named() -> None:
    check = TaskCheck("t", "i", (Step("unpatched", "build", 0),))
    assert not check.ok
    assert check.problems[0].startswith("unpatched test, unpatched hidden_test, patched patch")


def test_the_container_has_no_network_and_few_capabilities() -> None:
    argv = check_argv("ssebench/case/tiny/tiny-add:abc", load_task(TINY_ADD, "tiny"), None)
    assert argv[argv.index("--network") + 1] == "none"
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    added = {argv[i + 1] for i, word in enumerate(argv) if word == "--cap-add"}
    assert added == {"CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID"}
    assert argv[-3:] == ["python3", "ssebench/case/tiny/tiny-add:abc", "-"] and "--rm" in argv


def test_an_unexpected_line_is_one_clear_error() -> None:
    with pytest.raises(UserError, match="unexpected line"):
        parse_steps("Traceback (most recent call last):\n")


def test_tasks_check_from_a_catalog_is_refused_in_one_line() -> None:
    from tests.cli import ssebench

    done = ssebench("tasks", "check", "--catalog", "http://127.0.0.1:9", "--tasks", "x")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "ssebench: error: tasks check builds from the tasks' files: it needs --local, not --catalog"
    )
