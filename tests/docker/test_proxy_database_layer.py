"""`ssebench proxy build` of the database stack where Prisma's tools cannot be fetched:
the real Dockerfile and a real `docker build`, made to run the Prisma step without any
network (so the outcome is the same on a machine with the internet), end in one clear
line that names --no-database, in seconds, leaving no image and no container.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from ssebench.proxy.stack import NO_PRISMA_MESSAGE, LocalStack, default_compose_dir
from tests.cli import ssebench
from tests.docker.conftest import SESSION_PREFIX, docker_lines

pytestmark = pytest.mark.docker

# Runs `docker build` without a network; every other command as it is.
OFFLINE_BUILDS = """#!/bin/sh
if [ "$1" = build ]; then shift; exec "{docker}" build --network none "$@"; fi
exec "{docker}" "$@"
"""


def test_a_prisma_client_out_of_reach_is_one_clear_line(tmp_path: Path) -> None:
    # The proxy's image without the database first, as CI builds it: the layers the
    # database image shares with it (pip's) then come from the cache, offline too.
    plain = ssebench("proxy", "build", "--no-database", timeout=1800)
    assert plain.returncode == 0, plain.stderr[-3000:]
    # A copy of the stack whose Prisma step no cache holds, on any machine.
    compose = tmp_path / "compose"
    shutil.copytree(default_compose_dir(), compose)
    dockerfile = compose / "litellm" / "Dockerfile"
    text = dockerfile.read_text()
    assert "ARG PRISMA_CLIENT=" in text
    # A label, so the cache images of the steps before the failing one can be removed.
    label = f"ssebench.test-build={SESSION_PREFIX}"
    dockerfile.write_text(text.replace("ARG PRISMA_CLIENT=", f"LABEL {label}\nARG PRISMA_CLIENT="))
    shim = tmp_path / "bin" / "docker"
    shim.parent.mkdir()
    docker = shutil.which("docker")
    assert docker is not None
    shim.write_text(OFFLINE_BUILDS.format(docker=docker))
    shim.chmod(0o755)
    env = {
        "SSEBENCH_COMPOSE_DIR": str(compose),
        "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}",
    }

    started = time.monotonic()
    try:
        done = ssebench("proxy", "build", timeout=600, env=env)
    finally:
        seconds = time.monotonic() - started
        stopped = docker_lines("ps", "--all", "--quiet", "--filter", f"label={label}")
        # Removing a child removes its untagged parents too: some of these are gone then.
        for image_id in docker_lines("images", "--quiet", "--filter", f"label={label}"):
            subprocess.run(["docker", "rmi", image_id], capture_output=True)
        assert docker_lines("images", "--quiet", "--filter", f"label={label}") == []

    assert done.returncode == 1, done.stdout + done.stderr
    errors = [
        line for line in done.stderr.splitlines() if not line.startswith("ssebench: building")
    ]
    assert errors == [f"ssebench: error: {NO_PRISMA_MESSAGE}"]
    assert seconds < 300, f"the failed build took {seconds:.0f} s"
    image = LocalStack(compose, database=True).images()["litellm"]
    inspected = subprocess.run(["docker", "image", "inspect", image], capture_output=True)
    assert inspected.returncode != 0, f"{image} was made"
    assert stopped == [], "the failed build left its container"
