"""Imported SWE-bench-format instances, run for real on Docker through
`ssebench dataset check`: the reference is resolved, the dummy is not, and a patch
that fixes the bug but breaks a PASS_TO_PASS test is not; per-test outcomes are in
result.json.

One import and one check (six runs, two at once) serve every test of the module.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli import ssebench
from tests.docker.conftest import SESSION_PREFIX
from tests.swebench_project import import_shapes

pytestmark = pytest.mark.docker
SOUND = ("acme-shapes-1", "acme-shapes-3")
OVEREAGER = "acme-shapes-1-overeager"


@pytest.fixture(scope="module")
def check_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("swebench-runs")
    # Three instances cover both shapes, the pinned dependency and the broken PASS_TO_PASS
    # test (acme__shapes-2, classic like -3, is covered by the unit tests' import).
    dataset = import_shapes(root, "acme__shapes-1", "acme__shapes-1-overeager", "acme__shapes-3")
    report_path = root / "check.json"
    checked = ssebench(
        "dataset", "check", str(dataset), "--jobs", "2", "--results", str(root / "results"),
        "--report", str(report_path), "--run-id-prefix", f"{SESSION_PREFIX}-swe",
        timeout=1500,
    )  # fmt: skip
    # One task is broken on purpose (its reference patch breaks a PASS_TO_PASS test).
    assert checked.returncode == 1, checked.stdout[-3000:] + checked.stderr[-3000:]
    report: dict[str, Any] = json.loads(report_path.read_text())
    return report


def verdict(report: dict[str, Any], task: str) -> dict[str, Any]:
    found: dict[str, Any] = next(item for item in report["tasks"] if item["task"] == task)
    return found


def result_of(report: dict[str, Any], task: str, agent: str) -> dict[str, Any]:
    run_dir = Path(verdict(report, task)["runs"][agent]["run_dir"])
    result: dict[str, Any] = json.loads((run_dir / "result.json").read_text())
    return result


@pytest.mark.parametrize("task", SOUND)
def test_reference_is_resolved_and_dummy_is_not(check_report: dict[str, Any], task: str) -> None:
    found = verdict(check_report, task)
    assert found["sound"], found["problems"]
    assert found["runs"]["reference"]["status"] == "passed"
    assert found["runs"]["dummy"]["status"] == "failed"
    assert found["runs"]["dummy"]["error_msg"] == "Not resolved"


def test_per_test_outcomes_are_in_result_json(check_report: dict[str, Any]) -> None:
    reference = result_of(check_report, "acme-shapes-1", "reference")
    tests = reference["tests"]
    assert tests["grader"] == "swebench" and tests["resolved"] is True
    assert tests["FAIL_TO_PASS"] == {
        "success": ["tests/test_geometry.py::test_perimeter_rect"],
        "failure": [],
    }
    assert sorted(tests["PASS_TO_PASS"]["success"]) == [
        "tests/test_geometry.py::test_area_circle",
        "tests/test_geometry.py::test_area_rect",
    ]
    dummy = result_of(check_report, "acme-shapes-1", "dummy")
    assert dummy["tests"]["FAIL_TO_PASS"]["failure"] == [
        "tests/test_geometry.py::test_perimeter_rect"
    ]
    assert dummy["tests"]["outcomes"]["tests/test_geometry.py::test_perimeter_rect"] == "FAILED"


def test_the_pinned_pypi_dependency_is_installed(check_report: dict[str, Any]) -> None:
    """acme-shapes-3 imports attrs (pinned in its specification): its tests ran."""
    reference = result_of(check_report, "acme-shapes-3", "reference")
    assert reference["tests"]["outcomes"] == {
        "tests/test_point.py::test_distance_345": "PASSED",
        "tests/test_point.py::test_points_compare_by_value": "PASSED",
    }


def test_a_fix_that_breaks_a_pass_to_pass_test_is_not_resolved(
    check_report: dict[str, Any],
) -> None:
    found = verdict(check_report, OVEREAGER)
    assert found["problems"] == ["the reference run is failed (Not resolved), not passed"]
    result = result_of(check_report, OVEREAGER, "reference")
    assert result["status"] == "failed"
    assert result["tests"]["FAIL_TO_PASS"]["failure"] == []  # the bug is fixed
    assert result["tests"]["PASS_TO_PASS"]["failure"] == ["tests/test_geometry.py::test_area_rect"]
    assert check_report["sound"] == 2 and check_report["broken"] == 1
