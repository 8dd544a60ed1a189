"""A container registry on 127.0.0.1 for the tests that push to one: Debian's
docker-registry (the distribution registry), built here from tests/fixtures/registry,
so no registry image is pulled. Its storage is inside its container; it is removed,
with its image, when the block ends. rate_limited puts a proxy in front of it that
answers 429 Too Many Requests to manifest requests while told to, as a registry over
its pull rate limit does (dockerd pulls from 127.0.0.0/8 over plain HTTP)."""

from __future__ import annotations

import http.client
import json
import secrets
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# What a manifest request accepts: Docker's and OCI's image manifests (a Helm chart's is
# an OCI one).
MANIFEST_TYPES = (
    "application/vnd.docker.distribution.manifest.v2+json, "
    "application/vnd.oci.image.manifest.v1+json"
)
REGISTRY_CONTEXT = Path(__file__).resolve().parent / "fixtures" / "registry"
TOO_MANY = b'{"errors":[{"code":"TOOMANYREQUESTS","message":"pull rate limit reached"}]}'


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


@dataclass
class RateLimit:
    """The proxy's state: how many more manifest requests it refuses, and the paths of
    those it refused."""

    address: str = ""  # 127.0.0.1:PORT of the proxy
    refusals_left: int = 0
    refused: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def refuse_next(self, count: int) -> None:
        with self.lock:
            self.refusals_left = count
            self.refused.clear()

    def refuses(self, method: str, path: str) -> bool:
        """Whether to refuse this request: a manifest's GET (dockerd's HEAD before it
        passes, so that each pull counts one refusal)."""
        with self.lock:
            if method != "GET" or "/manifests/" not in path or self.refusals_left == 0:
                return False
            self.refusals_left -= 1
            self.refused.append(path)
            return True


def _proxy(upstream: int, limit: RateLimit) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return  # quiet

        def _forward(self) -> None:
            if limit.refuses(self.command, self.path):
                self.send_response(429, "Too Many Requests")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(TOO_MANY)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(TOO_MANY)
                return
            connection = http.client.HTTPConnection("127.0.0.1", upstream, timeout=120)
            headers = {
                name: value
                for name, value in self.headers.items()
                if name.lower() not in ("host", "connection")
            }
            connection.request(self.command, self.path, headers=headers)
            response = connection.getresponse()
            self.send_response(response.status, response.reason)
            for name, value in response.getheaders():
                if name.lower() not in ("connection", "transfer-encoding"):
                    self.send_header(name, value)
            self.end_headers()
            if self.command != "HEAD":
                while chunk := response.read(1 << 16):
                    self.wfile.write(chunk)
            connection.close()

        do_GET = _forward
        do_HEAD = _forward

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    return server


@contextmanager
def rate_limited(port: int) -> Iterator[RateLimit]:
    """A proxy to the registry on port that refuses manifest requests with 429 while
    its RateLimit says so (refuse_next); pull through RateLimit.address."""
    limit = RateLimit()
    proxy = _proxy(port, limit)
    limit.address = f"127.0.0.1:{proxy.server_address[1]}"
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        yield limit
    finally:
        proxy.shutdown()
        proxy.server_close()
