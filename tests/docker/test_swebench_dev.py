"""The real SWE-bench dev instances (../shared/datasets/swebench-dev/), imported with no
--specs (the official tables) and checked for real on Docker with `ssebench dataset check`.

The environments are made as on a machine that cannot pull: Python 3.9 from Debian
(ssebench/python:3.9, scripts/seed-python-image.sh, which .ci/run runs). pydicom's
tests fetch data files at test time, which grading (without network) cannot: a user's
spec for pydicom 2.0 and 2.2 (Python 3.9, the data files from PyPI's pydicom-data, and
a proxy on a closed loopback port so that a download fails at once instead of waiting
on each connection) wins over the official one for those versions. One import and one
check (eight runs, two at once) serve every test of the module.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli import ssebench
from tests.docker.conftest import SESSION_PREFIX
from tests.swebench_dev import INSTANCES, unpack_repositories

pytestmark = pytest.mark.docker
RESOLVED = ("pylint-dev-astroid-1268", "sqlfluff-sqlfluff-2386", "pydicom-pydicom-1194")
PYDICOM_SPECS = """specs:
  - repo: pydicom/pydicom
    versions: [2.0, 2.2]
    python: 3.9
    packages: numpy
    pip_packages: [pytest, pydicom-data==1.0.0]
    install: python -m pip install -e .
    test_cmd: pytest -rA
    eval_commands: ["export HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9"]
"""


@pytest.fixture(scope="module")
def check(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    root = tmp_path_factory.mktemp("swebench-dev")
    repos = unpack_repositories(root / "repos")
    dataset = root / "dev"
    specs = root / "pydicom-specs.yaml"
    specs.write_text(PYDICOM_SPECS)
    imported = ssebench(
        "dataset", "import", "swebench", str(INSTANCES), "--out", str(dataset),
        "--repos", str(repos), "--python-images", "debian", "--specs", str(specs),
    )  # fmt: skip
    assert imported.returncode == 0, imported.stdout + imported.stderr
    report_path = root / "check.json"
    started = time.monotonic()
    checked = ssebench(
        "dataset", "check", str(dataset), "--jobs", "2", "--results", str(root / "results"),
        "--report", str(report_path), "--run-id-prefix", f"{SESSION_PREFIX}-dev",
        timeout=2400,
    )  # fmt: skip
    print(f"dataset check of the 4 dev instances: {time.monotonic() - started:.0f} s")
    # pydicom-1458's record is spoiled.
    assert checked.returncode == 1, checked.stdout[-3000:] + checked.stderr[-3000:]
    report: dict[str, Any] = json.loads(report_path.read_text())
    return report, checked.stdout


def verdict(report: dict[str, Any], task: str) -> dict[str, Any]:
    found: dict[str, Any] = next(item for item in report["tasks"] if item["task"] == task)
    return found


@pytest.mark.parametrize("task", RESOLVED)
def test_the_gold_patch_is_resolved_and_the_dummy_is_not(
    check: tuple[dict[str, Any], str], task: str
) -> None:
    found = verdict(check[0], task)
    assert found["sound"], found["problems"]
    run_dir = Path(found["runs"]["reference"]["run_dir"])
    tests = json.loads((run_dir / "result.json").read_text())["tests"]
    assert tests["resolved"] is True and tests["FAIL_TO_PASS"]["failure"] == []
    assert tests["PASS_TO_PASS"]["failure"] == []


def test_every_dummy_run_is_not_resolved(check: tuple[dict[str, Any], str]) -> None:
    for item in check[0]["tasks"]:
        assert item["runs"]["dummy"]["status"] == "failed", item
        assert item["runs"]["dummy"]["error_msg"] == "Not resolved", item


def test_the_spoiled_record_is_reported_as_its_defect(check: tuple[dict[str, Any], str]) -> None:
    report, stdout = check
    spoiled = verdict(report, "pydicom-pydicom-1458")
    assert not spoiled["sound"]
    assert len(spoiled["failed_tests"]["PASS_TO_PASS"]) == 44
    assert all("/n/fs/" in name for name in spoiled["failed_tests"]["PASS_TO_PASS"])
    assert spoiled["problems"][1].startswith("the record's defect: 44 failed test IDs")
    assert "pydicom-pydicom-1458: the reference run failed 44 PASS_TO_PASS:" in stdout
    for name in spoiled["failed_tests"]["PASS_TO_PASS"]:
        assert f"\n  {name}\n" in stdout
    assert [item["task"] for item in report["tasks"] if not item["sound"]] == [
        "pydicom-pydicom-1458"
    ]
