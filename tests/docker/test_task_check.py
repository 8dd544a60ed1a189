"""`ssebench tasks check` in a real case image: a pilot task's build and tests run with
the image's toolchain, and the container is gone afterwards."""

from __future__ import annotations

import json

import pytest

from tests.cli import ssebench
from tests.conftest import PILOT_DATASET
from tests.docker.conftest import docker_lines

pytestmark = pytest.mark.docker


def test_a_pilot_task_checks_out_in_its_case_image() -> None:
    done = ssebench(
        "tasks", "check", "--local", str(PILOT_DATASET), "--tasks", "go-jsonptr-escape",
        "--json", timeout=1200,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (check,) = json.loads(done.stdout)["tasks"]
    assert check["ok"] and check["problems"] == []
    assert check["image"].startswith("ssebench/case/pilot/go-jsonptr-escape:")
    steps = {(s["outcome"], s["step"]): s["exit_code"] for s in check["steps"]}
    assert steps[("unpatched", "build")] == 0 and steps[("patched", "hidden_test")] == 0
    assert steps[("unpatched", "hidden_test")] not in (0, None)
    # The Go toolchain of the image ran the tests (its output is on stderr).
    assert "--- FAIL: TestHidden" in done.stderr
    assert not docker_lines("ps", "--all", "--quiet", "--filter", "label=ssebench.check")
