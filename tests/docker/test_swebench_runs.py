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

from tests.cli import last_line_verdict, ssebench
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
    assert found["problems"] == [
        "the reference run is failed (Not resolved), not passed",
        "1 PASS_TO_PASS failed",
    ]
    assert found["failed_tests"] == {"PASS_TO_PASS": ["tests/test_geometry.py::test_area_rect"]}
    result = result_of(check_report, OVEREAGER, "reference")
    assert result["status"] == "failed"
    assert result["tests"]["FAIL_TO_PASS"]["failure"] == []  # the bug is fixed
    assert result["tests"]["PASS_TO_PASS"]["failure"] == ["tests/test_geometry.py::test_area_rect"]
    assert check_report["sound"] == 2 and check_report["broken"] == 1


def test_a_row_that_names_an_image_and_no_dockerfile_runs(
    check_report: dict[str, Any], tmp_path: Path
) -> None:
    """A 5.x row with `image` in place of `dockerfile` builds on that image: here the
    environment image that acme-shapes-1's own dockerfile gave in the check above."""
    from tests.docker.conftest import docker_lines, new_run_id
    from tests.swebench_project import DATASET_NAME, make_shapes_project

    (image,) = docker_lines(
        "images", "--format", "{{.Repository}}:{{.Tag}}",
        f"ssebench/environment/{DATASET_NAME}/acme-shapes-1",
    )  # fmt: skip
    project = make_shapes_project(tmp_path / "project")
    row = {key: value for key, value in project.instances[0].items() if key != "dockerfile"}
    row.update(instance_id="acme__shapes-21", image=image)
    instances = tmp_path / "instances.json"
    instances.write_text(json.dumps([row]))
    dataset = tmp_path / "imaged"
    imported = ssebench(
        "dataset", "import", "swebench", str(instances), "--out", str(dataset),
        "--repos", str(project.repos),
    )  # fmt: skip
    assert imported.returncode == 0, imported.stdout + imported.stderr
    dockerfile = (dataset / "acme-shapes-21" / "environment" / "Dockerfile").read_text()
    assert f"\nFROM {image}\n" in dockerfile
    for agent, expected in (("reference", "passed"), ("dummy", "failed")):
        done = ssebench(
            "run", "--local", str(dataset), "--task", "acme-shapes-21", "--agent", agent,
            "--results", str(tmp_path / "results"), "--run-id", new_run_id(f"imaged-{agent}"),
            timeout=900,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr[-2000:]
        assert last_line_verdict(done.stdout)[0] == expected, done.stdout[-2000:]
