"""A runner that is not root (a laptop user in the docker group) keeps its results."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli import (
    CONTAINER_STOPPING_LINE,
    last_line_verdict,
    run_arguments,
    sleeper_started,
    ssebench,
)
from tests.docker.conftest import new_run_id
from tests.polling import wait_until
from tests.user_install import install_for_the_user

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
        cwd=tmp_path,  # a folder the user may enter, as a user's shell always is
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    status, run_dir = last_line_verdict(done.stdout)
    assert status == "passed"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "passed" and summary["grade"]["steps"]
    owners = {path.stat().st_uid for path in [run_dir, *run_dir.rglob("*")]}
    assert owners == {USER_ID}, owners


def owners_of(run_dir: Path) -> set[int]:
    return {path.lstat().st_uid for path in [run_dir, *run_dir.rglob("*")]}


@pytest.mark.parametrize("fault", ["second-signal", "kill-then-prune"])
def test_a_user_gets_the_run_directory_back_after_a_killed_run(
    shared_folder: Path, fault: str
) -> None:
    """The container makes the run directory root's while it runs: it gives it back
    when it ends (after a second signal, which leaves it running), or, killed before
    it could, prune's removal gives it back."""
    ssebench_command, environment, dataset = install_for_the_user(shared_folder / "install")
    docker_gid = subprocess.run(
        ["getent", "group", "docker"], capture_output=True, text=True, check=True
    ).stdout.split(":")[2]
    results = shared_folder / "results"
    results.mkdir()
    os.chown(results, USER_ID, USER_ID)
    run_id = new_run_id(f"user-{fault}")
    arguments = run_arguments(dataset, "py-semver-prerelease", "sleeper", run_id, results)
    env = {**os.environ, **environment, "HOME": str(shared_folder)}
    setpriv = [
        shutil.which("setpriv") or "setpriv",
        f"--reuid={USER_ID}",
        f"--regid={USER_ID}",
        f"--groups={docker_gid}",
    ]
    log = shared_folder / "runner.log"
    with log.open("w") as output:
        runner = subprocess.Popen(
            [*setpriv, *ssebench_command, *arguments, "--timeout", "120"],
            stdout=output,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=shared_folder,
        )
    run_dir = results / "py-semver-prerelease" / "none" / "sleeper" / run_id
    try:
        wait_until(lambda: sleeper_started(run_id), what="the sleeper agent to start")
        assert os.stat(run_dir).st_uid == 0, "the container makes it root's while it runs"
        if fault == "second-signal":
            runner.send_signal(signal.SIGTERM)

            # The second signal comes once the first one's stop has reached the
            # container (back to back, it can end the runner before the stop is sent,
            # and the container then runs to its timeout). The runner's own log shows
            # the container's lines as they come and costs no process to read: told,
            # the run grades and ends within a second or so, which a `runs logs` poll
            # can miss (the container is gone by then, and so are its logs).
            def told() -> bool:
                return CONTAINER_STOPPING_LINE in log.read_text()

            try:
                wait_until(told, "the container to be told to stop", 120, interval=0.05)
            except AssertionError as error:  # what each side said, to tell why
                container = ssebench("runs", "logs", run_id).stdout[-1500:]
                said = log.read_text()[-2000:]
                raise AssertionError(f"{error}\nthe runner: {said}\nthe run: {container}") from None
            runner.send_signal(signal.SIGINT)  # ends the runner at once
            runner.wait(timeout=30)
            # The directory is still the container's: the runner says it could not
            # record the run there; the container, stopping from the first signal,
            # gives the directory back when it ends.
            said = log.read_text()
            assert (run_dir / "summary.json").is_file() or "not recorded" in said, said[-2000:]
            wait_until(lambda: owners_of(run_dir) == {USER_ID}, "the directory back", 120)
        else:
            runner.kill()
            runner.wait(timeout=60)
            done = subprocess.run(
                [*setpriv, *ssebench_command, "runs", "prune", "--json"],
                capture_output=True, text=True, timeout=300, env=env, cwd=shared_folder,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert run_id in done.stdout
    finally:
        if runner.poll() is None:
            runner.kill()
        subprocess.run(["docker", "rm", "-f", f"ssebench-{run_id}"], capture_output=True)
        ssebench("runs", "prune")  # what a second signal leaves: the network, the volume
    assert owners_of(run_dir) == {USER_ID}
