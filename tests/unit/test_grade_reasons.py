"""Why `ssebench grade` says a prediction is not resolved: the given-patch agent's
"does not apply" is read from the run's result.json as every file of a run directory
is, never through a link (a run directory holds what an agent's run left)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from ssebench.cli.grade import DOES_NOT_APPLY, DOES_NOT_APPLY_REASON, _reason


def failed_run(run_dir: Path) -> SimpleNamespace:
    return SimpleNamespace(status="failed", run_dir=run_dir, error_msg="Not resolved")


def test_a_patch_that_does_not_apply_is_named(tmp_path: Path) -> None:
    (tmp_path / "result.json").write_text(json.dumps({"agent_exit_code": DOES_NOT_APPLY}))
    assert _reason(failed_run(tmp_path)) == DOES_NOT_APPLY_REASON


def test_a_result_json_that_is_a_link_is_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"agent_exit_code": DOES_NOT_APPLY}))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "result.json").symlink_to(elsewhere)
    assert _reason(failed_run(run_dir)) == "Not resolved"
