"""The README's first set-up command, as a newcomer runs it."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.docker


def test_quickstart_runs_a_pilot_task_end_to_end() -> None:
    done = subprocess.run(
        ["scripts/quickstart.sh"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ, "TASK": "c-varint-u64max"},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    status, run_dir = done.stdout.strip().splitlines()[-1].split("\t")
    assert status == "passed"
    assert run_dir.startswith(str(ROOT / "results" / "c-varint-u64max" / "none" / "reference"))
