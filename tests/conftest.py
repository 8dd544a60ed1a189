"""Shared test set-up: what a test needs (markers), isolation, and leak checks.

A test marked docker, kubernetes or browser skips on a laptop without the thing, and
FAILS when CI=true: CI must never hide a missing engine behind a skip. The session
ends by printing how many tests were skipped, so a hidden skip shows.
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TINY_DATASET = ROOT / "tests" / "fixtures" / "datasets" / "tiny"
PILOT_DATASET = ROOT / "datasets" / "pilot"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
# Every container, volume and network the tests create carries this label.
TEST_LABEL = "ssebench.test"


@functools.cache
def docker_problem() -> str | None:
    """None when a Docker daemon answers, else why not."""
    try:
        done = subprocess.run(
            ["docker", "version", "--format", "{{.Server.Version}}"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"docker CLI: {type(error).__name__}"
    if done.returncode != 0:
        return f"Docker daemon not reachable: {done.stderr.strip()[:200]}"
    return None


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("docker"):
        problem = docker_problem()
        if problem is not None:
            if IN_CI:
                pytest.fail(f"CI=true and this test needs Docker: {problem}")
            pytest.skip(problem)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    skipped = len(terminalreporter.stats.get("skipped", []))
    terminalreporter.write_line(f"ssebench: skipped tests: {skipped}")


@pytest.fixture(autouse=True, scope="session")
def fake_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The fake backend's runs live in a folder of this test session only."""
    state = tmp_path_factory.mktemp("fake-state")
    previous = os.environ.get("SSEBENCH_FAKE_STATE")
    os.environ["SSEBENCH_FAKE_STATE"] = str(state)
    yield state
    if previous is None:
        os.environ.pop("SSEBENCH_FAKE_STATE", None)
    else:
        os.environ["SSEBENCH_FAKE_STATE"] = previous
