"""Rootless Podman: a pilot task's reference passes and its dummy fails when ssebench
runs as an unprivileged user with subordinate UIDs and GIDs (docs/podman.md,
"Rootless"). The user, its Podman store (native overlay) and its copy of the base image
are made once; its images are then found current by their cache-key labels."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli import last_line_verdict, run_arguments
from tests.podman.conftest import SESSION_PREFIX, new_run_id
from tests.user_install import install_for_the_user

pytestmark = pytest.mark.podman
USER = "ssebench-rootless"
# Far from the UIDs that task images give their users (1000, 1001, ...): a rootful
# container's processes run as those on the host, and this user must not own them.
UID = 47001
HOME = Path("/var/tmp/ssebench-rootless")
BASE_IMAGE = "debian:bookworm-slim"
TASK = "py-semver-prerelease"


@dataclass(frozen=True)
class RootlessUser:
    uid: int
    gid: int
    env: dict[str, str]
    ssebench: list[str]
    dataset: Path

    def argv(self, *command: str) -> list[str]:
        settings = [f"{key}={value}" for key, value in self.env.items()]
        return ["runuser", "-u", USER, "--", "env", "-i", *settings, *command]

    def run(
        self, *command: str, timeout: float = 300, **kwargs: object
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*command),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=HOME,  # the checkout may sit below folders only root can enter
            **kwargs,  # type: ignore[call-overload]
        )


def _as_root(*argv: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{argv}: {done.stderr}"


def _ensure_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        _as_root(
            "useradd",
            "--uid",
            str(UID),
            "--user-group",
            "--create-home",
            "--home-dir",
            str(HOME),
            "--shell",
            "/bin/sh",
            USER,
        )
        return pwd.getpwnam(USER)


def _has_range(path: str) -> bool:
    return any(line.startswith(f"{USER}:") for line in Path(path).read_text().splitlines())


@pytest.fixture(scope="module")
def rootless() -> Iterator[RootlessUser]:
    if os.geteuid() != 0:
        pytest.fail("the rootless Podman test makes its user as root: run it as root")
    account = _ensure_user()
    if not (_has_range("/etc/subuid") and _has_range("/etc/subgid")):
        _as_root(
            "usermod", "--add-subuids", "300000-365535", "--add-subgids", "300000-365535", USER
        )
    runtime = Path(f"/tmp/ssebench-rootless-{account.pw_uid}")
    runtime.mkdir(mode=0o700, exist_ok=True)
    os.chown(runtime, account.pw_uid, account.pw_gid)
    env = {
        "HOME": account.pw_dir,
        "USER": USER,
        "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        "XDG_RUNTIME_DIR": str(runtime),
        "LANG": "C.UTF-8",
    }
    work = Path(tempfile.mkdtemp(prefix=f"ssebench-{SESSION_PREFIX}-", dir="/var/tmp"))
    work.chmod(0o755)
    command, environment, dataset = install_for_the_user(work / "install")
    user = RootlessUser(account.pw_uid, account.pw_gid, {**env, **environment}, command, dataset)
    config = Path(account.pw_dir) / ".config" / "containers"
    if not (config / "storage.conf").exists():
        # Native overlay (the kernel allows it unprivileged): vfs, Podman's fallback,
        # copies every layer whole.
        assert user.run("mkdir", "-p", str(config)).returncode == 0
        assert (
            user.run(
                "sh", "-c", f"printf '[storage]\\ndriver = \"overlay\"\\n' > {config}/storage.conf"
            ).returncode
            == 0
        )
        user.run("podman", "system", "reset", "--force")
    if user.run("podman", "image", "exists", BASE_IMAGE).returncode != 0:
        with subprocess.Popen(["podman", "save", BASE_IMAGE], stdout=subprocess.PIPE) as saved:
            loaded = subprocess.run(
                user.argv("podman", "load", "--quiet"),
                stdin=saved.stdout,
                capture_output=True,
                text=True,
                timeout=300,
                cwd=HOME,  # as in RootlessUser.run: the user may not enter the checkout
            )
        assert saved.returncode == 0 and loaded.returncode == 0, loaded.stderr
    results = work / "results"
    results.mkdir()
    os.chown(results, account.pw_uid, account.pw_gid)
    user.env["SSEBENCH_TEST_RESULTS"] = str(results)
    try:
        yield user
    finally:
        left = user.run("podman", "ps", "--all", "--format", "{{.Names}}", timeout=60)
        shutil.rmtree(work, ignore_errors=True)
        assert [name for name in left.stdout.split() if SESSION_PREFIX in name] == []


@pytest.mark.parametrize(("agent", "status"), [("reference", "passed"), ("dummy", "failed")])
def test_rootless_pilot(rootless: RootlessUser, agent: str, status: str) -> None:
    results = rootless.env["SSEBENCH_TEST_RESULTS"]
    run_id = new_run_id(f"rl-{agent}")
    arguments = run_arguments(rootless.dataset, TASK, agent, run_id, Path(results))
    done = rootless.run(*rootless.ssebench, *arguments, "--backend", "podman", timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    verdict, run_dir = last_line_verdict(done.stdout)
    assert verdict == status
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == status and summary["config"]["backend"] == "podman"
    if status == "failed":
        assert summary["error_msg"] == "Hidden test failed"
    # The run directory is the user's again (its root inside the container).
    owners = {path.stat().st_uid for path in [run_dir, *run_dir.rglob("*")]}
    assert owners == {rootless.uid}
