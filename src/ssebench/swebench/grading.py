"""Deciding a run of an imported task with the official `swebench` package.

The container ran the instance's test command between the harness's markers (markers.py);
this reads that output back from the run's evaluator.log and applies the package's
log parser (swebench.harness.log_parsers, named by the instance) and its grading rules
(swebench.harness.grading: the FAIL_TO_PASS / PASS_TO_PASS report and the resolution
status). The run passes only when the instance is fully resolved.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from ssebench.errors import UserError
from ssebench.results import files as run_files
from ssebench.swebench.markers import hidden_step_output, with_exit_status
from ssebench.swebench.package import package_version, parser_registry, swebench_module
from ssebench.tasks.model import Task

GRADING_FILE = "swebench.json"
EVALUATOR_LOG = "evaluator.log"
# evaluator.log holds what the agent's code printed: read at most its last this many bytes.
MAX_LOG_BYTES = 64 * 1024 * 1024
NOT_RESOLVED = "Not resolved"
NO_TEST_OUTPUT = "Not resolved: no test results in the output"


def load_grading(task: Task) -> dict[str, Any]:
    """The instance's grading data (swebench.json in the task folder). Raises UserError."""
    path = task.path / GRADING_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UserError(f"{path}: cannot be read ({error}); import the task again") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: must be a JSON object; import the task again")
    return data


def report_for_output(grading: dict[str, Any], output: str) -> dict[str, Any]:
    """Per-test outcomes and the verdict of the package for one test output.

    Returns {"resolved", "resolution", "parsed", "FAIL_TO_PASS": {"success", "failure"},
    "PASS_TO_PASS": {...}, "outcomes": {test: status}}. Raises UserError when the
    package is missing or does not know the instance's log parser.
    """
    constants = swebench_module("harness.constants")
    rules = swebench_module("harness.grading")
    parser = grading["log_parser"]
    if parser not in parser_registry():
        raise UserError(f"The swebench package has no log parser {parser!r}")
    spec = swebench_module("types").TestSpec(
        instance_id=grading["instance_id"],
        image="",
        eval_script_list=[],
        repo=grading["repo"],
        version=grading["version"],
        FAIL_TO_PASS=list(grading["FAIL_TO_PASS"]),
        PASS_TO_PASS=list(grading["PASS_TO_PASS"]),
        log_parser=parser,
        eval_type=grading["eval_type"],
    )
    # get_logs_eval reads a file, as the harness reads its container's log.
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".log") as file:
        file.write(output)
        file.flush()
        outcomes, parsed = rules.get_logs_eval(spec, file.name)
    gold = {
        "instance_id": spec.instance_id,
        "FAIL_TO_PASS": spec.FAIL_TO_PASS,
        "PASS_TO_PASS": spec.PASS_TO_PASS,
    }
    report = rules.get_eval_tests_report(
        outcomes, gold, eval_type=constants.EvalType(spec.eval_type)
    )
    resolved_status = constants.ResolvedStatus
    resolution = rules.get_resolution_status(report) if parsed else resolved_status.NO.value
    return {
        "resolved": parsed and resolution == resolved_status.FULL.value,
        "resolution": resolution,
        "parsed": parsed,
        "FAIL_TO_PASS": report["FAIL_TO_PASS"],
        "PASS_TO_PASS": report["PASS_TO_PASS"],
        "outcomes": dict(sorted(outcomes.items())),
    }


def grade_run(task: Task, run_dir: Path, grade: dict[str, Any]) -> dict[str, Any]:
    """The run's grade decided by the package: passed when resolved, else failed, with
    the per-test outcomes under "tests". Raises UserError (the runner records it as the
    run's error) when the package or the task's grading data is missing."""
    grading = load_grading(task)
    try:
        # The run directory's safe reader: regular files only, no link, no blocking read.
        log = run_files.read_file(run_dir, EVALUATOR_LOG, MAX_LOG_BYTES, tail=True)
        output = hidden_step_output(log.data.decode("utf-8", errors="replace"))
    except OSError:  # UnsafeFileError too
        output = None
    steps = grade.get("steps") or [{}]
    exit_code = steps[-1].get("exit_code") if isinstance(steps[-1], dict) else None
    if output is not None and isinstance(exit_code, int):
        output = with_exit_status(output, exit_code)
    report = report_for_output(grading, output or "")
    tests = {"grader": "swebench", "grader_version": package_version(), **report}
    if isinstance(grading.get("environment"), dict):
        # How the environment was made (its Python, resolution date, deviations from the
        # official spec), in every result, so that no grade hides a substitute.
        tests["environment"] = grading["environment"]
    if report["resolved"]:
        return {**grade, "status": "passed", "error_msg": None, "tests": tests}
    message = NOT_RESOLVED if report["parsed"] else NO_TEST_OUTPUT
    last = steps[-1] if isinstance(steps[-1], dict) else {}
    if last.get("name") == "hidden_test" and last.get("timed_out") is True:
        seconds = last.get("seconds")
        after = f" after {round(seconds)}s" if isinstance(seconds, (int, float)) else ""
        message = f"{NOT_RESOLVED}: the hidden tests timed out{after}"
    return {**grade, "status": "failed", "error_msg": message, "tests": tests}
