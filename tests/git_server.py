"""A real git server on loopback (`git daemon`), serving bare repositories as
git://127.0.0.1:PORT/OWNER/NAME.git, as a repository host would serve them."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def lay_out(bare_repositories: Path, base: Path) -> Path:
    """Copy OWNER__NAME.git folders to base/OWNER/NAME.git, each serving single commits
    (uploadpack.allowAnySHA1InWant, as the large hosts do); returns base."""
    for bare in sorted(bare_repositories.glob("*__*.git")):
        owner, name = bare.name.removesuffix(".git").split("__", 1)
        target = base / owner / f"{name}.git"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(bare, target, symlinks=True)
        subprocess.run(
            ["git", "-C", str(target), "config", "uploadpack.allowAnySHA1InWant", "true"],
            check=True,
        )
    return base


@contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """Serve base until the block ends; yields the --clone-from template."""
    port = _free_port()
    command = [
        "git", "daemon", "--export-all", "--reuseaddr", "--listen=127.0.0.1",
        f"--port={port}", f"--base-path={base}", str(base),
    ]  # fmt: skip
    process = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("git daemon did not start") from None
                time.sleep(0.1)
        yield f"git://127.0.0.1:{port}/{{repo}}.git"
    finally:
        process.terminate()
        process.wait(timeout=10)
