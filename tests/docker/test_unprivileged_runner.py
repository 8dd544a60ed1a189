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
import yaml

from tests.cli import last_line_verdict, run_arguments
from tests.conftest import PILOT_DATASET, ROOT
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


def install_for_the_user(folder: Path) -> tuple[list[str], dict[str, str], Path]:
    """ssebench, its one dependency and the pilot dataset, where the user can read them.

    The checkout and this venv may sit below folders only root can enter (CI clones
    into a 0700 temporary folder), as a user's own install never would.
    """
    site = folder / "site"
    shutil.copytree(ROOT / "src", folder / "src")
    shutil.copytree(PILOT_DATASET, folder / "pilot")
    packages = Path(yaml.__file__).parent.parent
    shutil.copytree(Path(yaml.__file__).parent, site / "yaml")
    # The dist-info carries the entry points through which the docker backend is found.
    for dist_info in packages.glob("ssebench-*.dist-info"):
        shutil.copytree(dist_info, site / dist_info.name)
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    python = shutil.which("python3", path="/usr/bin:/usr/local/bin")
    assert python, "no system python3 for the unprivileged user"
    environment = {"PYTHONPATH": f"{folder / 'src'}:{site}", "PYTHONDONTWRITEBYTECODE": "1"}
    return [python, "-m", "ssebench.cli.main"], environment, folder / "pilot"


def test_a_user_in_the_docker_group_can_read_and_record_its_run(shared_folder: Path) -> None:
    tmp_path = shared_folder
    ssebench_command, environment, dataset = install_for_the_user(shared_folder / "install")
    docker_group = subprocess.run(["getent", "group", "docker"], capture_output=True, text=True)
    assert docker_group.returncode == 0, "no docker group"
    docker_gid = docker_group.stdout.split(":")[2]
    results = tmp_path / "results"
    results.mkdir()
    os.chown(results, USER_ID, USER_ID)
    arguments = run_arguments(
        dataset, "py-ini-quoted-comment", "reference", new_run_id("user"), results
    )
    done = subprocess.run(
        [
            shutil.which("setpriv") or "setpriv",
            f"--reuid={USER_ID}",
            f"--regid={USER_ID}",
            f"--groups={docker_gid}",
            *ssebench_command,
            *arguments,
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **environment, "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    status, run_dir = last_line_verdict(done.stdout)
    assert status == "passed"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "passed" and summary["grade"]["steps"]
    owners = {path.stat().st_uid for path in [run_dir, *run_dir.rglob("*")]}
    assert owners == {USER_ID}, owners
