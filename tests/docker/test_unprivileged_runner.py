"""A runner that is not root (a laptop user in the docker group) keeps its results."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli import SSEBENCH, last_line_verdict, run_arguments
from tests.conftest import PILOT_DATASET
from tests.docker.conftest import new_run_id

pytestmark = pytest.mark.docker
USER_ID = 4242


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A folder the other user can reach (pytest's own temporary folders are root's)."""
    folder = Path(tempfile.mkdtemp(prefix="ssebench-user-test-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_user_in_the_docker_group_can_read_and_record_its_run(shared_folder: Path) -> None:
    tmp_path = shared_folder
    docker_group = subprocess.run(["getent", "group", "docker"], capture_output=True, text=True)
    assert docker_group.returncode == 0, "no docker group"
    docker_gid = docker_group.stdout.split(":")[2]
    results = tmp_path / "results"
    results.mkdir()
    os.chown(results, USER_ID, USER_ID)
    arguments = run_arguments(
        PILOT_DATASET, "py-ini-quoted-comment", "reference", new_run_id("user"), results
    )
    done = subprocess.run(
        [
            shutil.which("setpriv") or "setpriv",
            f"--reuid={USER_ID}",
            f"--regid={USER_ID}",
            f"--groups={docker_gid}",
            *SSEBENCH,
            *arguments,
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "HOME": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    status, run_dir = last_line_verdict(done.stdout)
    assert status == "passed"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "passed" and summary["grade"]["steps"]
    owners = {path.stat().st_uid for path in [run_dir, *run_dir.rglob("*")]}
    assert owners == {USER_ID}, owners
