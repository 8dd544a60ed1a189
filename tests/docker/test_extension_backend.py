"""A backend from outside the package (tests/fixtures/ssebench_example_ext), written as
docs/writing-a-backend.md says, is selected by name and drives a real run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.docker.test_pilot_runs import ssebench_run

pytestmark = pytest.mark.docker


def test_logging_backend_drives_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "calls.log"
    monkeypatch.setenv("SSEBENCH_CALL_LOG", str(log))
    monkeypatch.setenv("SSEBENCH_BACKEND", "logging")
    assert os.environ["SSEBENCH_BACKEND"] == "logging"
    _, summary = ssebench_run(tmp_path / "results", "py-ini-quoted-comment", "reference")
    assert summary["status"] == "passed"
    assert summary["config"]["backend"] == "logging"  # type: ignore[index]
    calls = [line.split()[0] for line in log.read_text().splitlines()]
    assert calls == [
        "prepare_images",
        "copy_from_image",
        "start",
        "wait",
        "collect_results",
        "cleanup",
    ]
