"""A container registry on 127.0.0.1 for the tests that push to one: Debian's
docker-registry (the distribution registry), built here from tests/fixtures/registry,
so no registry image is pulled. Its storage is inside its container; it is removed,
with its image, when the block ends."""

from __future__ import annotations

import json
import secrets
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# What a manifest request accepts: Docker's and OCI's image manifests (a Helm chart's is
# an OCI one).
MANIFEST_TYPES = (
    "application/vnd.docker.distribution.manifest.v2+json, "
    "application/vnd.oci.image.manifest.v1+json"
)
REGISTRY_CONTEXT = Path(__file__).resolve().parent / "fixtures" / "registry"


def docker(*arguments: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *arguments], capture_output=True, text=True, timeout=timeout, check=False
    )


@contextmanager
def local_registry() -> Iterator[int]:
    """The registry's port on 127.0.0.1, once it answers /v2/."""
    image = f"ssebench-test.local/registry:{secrets.token_hex(3)}"
    started = time.monotonic()
    built = docker("build", "--pull=false", "-q", "-t", image, str(REGISTRY_CONTEXT))
    assert built.returncode == 0, built.stderr[-3000:]
    print(f"registry image built in {time.monotonic() - started:.1f}s")
    name = f"ssebench-test-registry-{secrets.token_hex(3)}"
    try:
        ran = docker("run", "-d", "--rm", "--name", name, "-p", "127.0.0.1::5000", image)
        assert ran.returncode == 0, ran.stderr
        address = docker("port", name, "5000/tcp").stdout.split()[0]
        port = int(address.rsplit(":", 1)[1])
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=3) as answer:
                    assert answer.status == 200
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, docker("logs", name).stderr[-2000:]
                time.sleep(0.5)
        yield port
    finally:
        docker("rm", "-f", name)
        docker("image", "rm", image)


def registry_get(port: int, path: str, accept: str | None = None) -> Any:
    """The JSON answer of the registry's API at path."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if accept:
        request.add_header("Accept", accept)
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())
