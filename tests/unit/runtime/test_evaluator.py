from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from ssebench.runtime import __version__
from ssebench.runtime.accounts import Accounts
from ssebench.runtime.evaluator import (
    Evaluator,
    Grading,
    Step,
    decide_status,
    model_error_message,
    result_document,
    write_result,
)
from ssebench.runtime.logs import LogFile, Redactor
from ssebench.runtime.repository import BaseRepository
from ssebench.runtime.workspace import Workspace

from .conftest import FIXED, Project, make_project

PATH = os.environ["PATH"]


def steps(*outcomes: tuple[str, bool]) -> list[Step]:
    return [Step(name, ok, 0 if ok else 1, 0.1) for name, ok in outcomes]


ALL_PASS = steps(("apply", True), ("build", True), ("test", True), ("hidden_test", True))


@pytest.mark.parametrize(
    ("grading", "timed_out", "expected"),
    [
        (Grading(ALL_PASS), False, ("passed", None)),
        (Grading(steps(("apply", False))), False, ("failed", "Patch apply failed")),
        (Grading(steps(("apply", True), ("build", False))), False, ("failed", "Build failed")),
        (
            Grading(steps(("apply", True), ("build", True), ("test", False))),
            False,
            ("failed", "Test failed"),
        ),
        (
            Grading(ALL_PASS[:3] + steps(("hidden_test", False))),
            False,
            ("failed", "Hidden test failed"),
        ),
        (
            Grading([*ALL_PASS[:3], Step("hidden_test", False, 124, 900.2, timed_out=True)]),
            False,
            ("failed", "Hidden test failed: timed out after 900s"),
        ),
        (Grading(ALL_PASS), True, ("failed", "Timeout (42s)")),
        (Grading(steps(("apply", False))), True, ("failed", "Timeout (42s)")),
        (
            Grading(ALL_PASS, error="Evaluator error: OSError"),
            True,
            ("error", "Evaluator error: OSError"),
        ),
    ],
)
def test_status_and_error_message(
    grading: Grading, timed_out: bool, expected: tuple[str, str | None]
) -> None:
    assert decide_status(grading, timed_out=timed_out, timeout=42) == expected


def test_a_model_error_comes_after_the_evaluators_own_error() -> None:
    failing = Grading(steps(("apply", True), ("build", False)))
    assert decide_status(failing, timed_out=False, timeout=1, model_error="Model error: x") == (
        "error",
        "Model error: x",
    )
    broken = Grading(ALL_PASS, error="Evaluator error: OSError")
    assert decide_status(broken, timed_out=False, timeout=1, model_error="Model error: x") == (
        "error",
        "Evaluator error: OSError",
    )


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("HTTP 500 from the proxy", "Model error: HTTP 500 from the proxy"),
        ("  budget\n exceeded\r\n\t(litellm)  ", "Model error: budget exceeded (litellm)"),
        ("\x1b[2Jcleared\x07\u202eevil", "Model error: [2Jclearedevil"),
        ("", "Model error"),
        (" \n ", "Model error"),
        (None, "Model error"),
        (42, "Model error"),
        ("y" * 500, "Model error: " + "y" * 197 + "..."),
    ],
)
def test_model_error_message_is_one_clipped_printable_line(reason: object, expected: str) -> None:
    assert model_error_message(reason) == expected


def test_result_document_has_the_whole_schema() -> None:
    patch = b"diff --git a/x b/x\n+1\ndiff --git a/y b/y\n"
    document = result_document(
        task_id="t",
        run_id="r1",
        grading=Grading(ALL_PASS, patch=patch),
        agent_exit_code=0,
        timed_out=False,
        stopped=True,
        timeout=10,
        started_at="2024-01-01T00:00:00.000Z",
        finished_at="2024-01-01T00:01:00.000Z",
    )
    assert document == {
        "schema": 1,
        "run_id": "r1",
        "task": "t",
        "status": "passed",
        "error_msg": None,
        "agent_exit_code": 0,
        "timed_out": False,
        "stopped": True,
        "steps": [
            {"name": n, "ok": True, "exit_code": 0, "seconds": 0.1, "timed_out": False}
            for n in ("apply", "build", "test", "hidden_test")
        ],
        "patch_bytes": len(patch),
        "patch_files": 2,
        "started_at": "2024-01-01T00:00:00.000Z",
        "finished_at": "2024-01-01T00:01:00.000Z",
        "runtime_version": __version__,
    }


def test_write_result_is_atomic_and_root_only(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text("{}")  # the runner's skeleton
    write_result(path, {"status": "passed"})
    assert json.loads(path.read_text()) == {"status": "passed"}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


def test_a_failed_write_leaves_the_old_result(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text('{"old": true}')
    with pytest.raises(TypeError):
        write_result(path, {"bad": object()})
    assert json.loads(path.read_text()) == {"old": True}
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


class Harness:
    def __init__(self, project: Project, accounts: Accounts, step_timeout: float = 60) -> None:
        layout = project.layout
        for directory in (layout.results, layout.private_dir):
            directory.mkdir(parents=True, exist_ok=True)
        self.project = project
        self.repository = BaseRepository.snapshot(
            source_dir=project.source,
            git_dir=layout.base_repository,
            base_commit=None,
            path_value=PATH,
        )
        self.log = LogFile(layout.results / "evaluator.log", Redactor([]))
        self.progress: list[str] = []
        self.evaluator = Evaluator(
            task=project.task,
            repository=self.repository,
            workspace=Workspace(
                layout.grading_workspace,
                runner=accounts.runner,
                repository=self.repository,
                private_dir=layout.private_dir,
                environment={"PATH": PATH},
                step_timeout=step_timeout,
            ),
            runner=accounts.runner,
            results_dir=layout.results,
            hidden_dir=layout.hidden_dir,
            runner_home_template=layout.runner_home_template,
            log=self.log,
            redactor=Redactor([]),
            progress=self.progress.append,
        )

    def grade(self) -> tuple[Grading, tuple[str, str | None]]:
        grading = self.evaluator.run()
        return grading, decide_status(grading, timed_out=False, timeout=1)


def test_the_fix_passes_every_step(project: Project, accounts: Accounts) -> None:
    harness = Harness(project, accounts)
    (project.source / "calc.py").write_text(FIXED)
    grading, status = harness.grade()
    assert status == ("passed", None)
    assert [s.name for s in grading.steps] == ["apply", "build", "test", "hidden_test"]
    assert (project.layout.results / "final.patch").read_bytes() == grading.patch
    log = (project.layout.results / "evaluator.log").read_text()
    assert "hidden_test" in log and "Ran 2 tests" in log


def test_no_change_fails_the_hidden_test(project: Project, accounts: Accounts) -> None:
    grading, status = Harness(project, accounts).grade()
    assert status == ("failed", "Hidden test failed")
    assert grading.patch == b""
    assert grading.steps[0].name == "apply" and grading.steps[0].ok


def test_the_agents_copy_of_the_hidden_test_is_overwritten(
    project: Project, accounts: Accounts
) -> None:
    (project.source / "tests" / "test_hidden.py").write_text("# a test that always passes\n")
    _grading, status = Harness(project, accounts).grade()
    assert status == ("failed", "Hidden test failed")


def test_breaking_the_visible_tests_fails_the_test_step(
    project: Project, accounts: Accounts
) -> None:
    (project.source / "calc.py").write_text("def add(a, b):\n    return 7\n")
    grading, status = Harness(project, accounts).grade()
    assert status == ("failed", "Test failed")
    assert [s.name for s in grading.steps] == ["apply", "build", "test"]


def test_a_syntax_error_fails_the_build(project: Project, accounts: Accounts) -> None:
    (project.source / "calc.py").write_text("def add(a, b:\n")
    grading, status = Harness(project, accounts).grade()
    assert status == ("failed", "Build failed")
    assert grading.steps[-1].exit_code != 0


def test_a_patch_that_does_not_apply(project: Project, accounts: Accounts) -> None:
    harness = Harness(project, accounts)
    bad = b"diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-nope\n+x\n"
    harness.repository.diff = lambda: bad  # type: ignore[method-assign]
    grading, status = harness.grade()
    assert status == ("failed", "Patch apply failed")
    assert len(grading.steps) == 1


def test_a_step_that_hangs_is_killed_at_the_step_timeout(
    tmp_path: Path, short_dir: Path, accounts: Accounts
) -> None:
    project = make_project(tmp_path, short_dir, {"build": "sleep 60"})
    grading, status = Harness(project, accounts, step_timeout=1).grade()
    assert status == ("failed", "Build failed: timed out after 1s")
    assert grading.steps[-1].timed_out and not grading.steps[-1].ok
    assert grading.steps[-1].exit_code == 124
    assert grading.steps[-1].seconds < 30


def test_a_broken_evaluator_is_an_error(project: Project, accounts: Accounts) -> None:
    harness = Harness(project, accounts)

    def broken() -> bytes:
        raise OSError("disk on fire")

    harness.repository.diff = broken  # type: ignore[method-assign]
    _grading, status = harness.grade()
    assert status == ("error", "Evaluator error: OSError")
    assert "disk on fire" in (project.layout.results / "evaluator.log").read_text()


def test_task_commands_run_with_the_runners_home_and_a_private_temp(
    tmp_path: Path, short_dir: Path, accounts: Accounts
) -> None:
    project = make_project(tmp_path, short_dir, {"build": "env > env.txt"})
    Harness(project, accounts).grade()
    seen = (project.layout.grading_workspace / "tree" / "env.txt").read_text().splitlines()
    assert "LANG=C.UTF-8" in seen
    assert f"HOME={accounts.runner.home}" in seen
    assert f"TMPDIR={project.layout.grading_workspace / 'tmp'}" in seen
