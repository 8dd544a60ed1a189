"""The catalog service: serves one manifest.json, read once at start and checked.

GET /health             200 "ok"
GET /manifest.json      the manifest as it was bundled
GET /tasks              {"name", "version", "description", "tasks": [summary...]}
GET /tasks/{id}         one task: its summary, its container metadata and its files' hashes

It is read-only and holds no secret, so it needs no token; the standard library's
threading HTTP server is enough for a launcher that asks a few times a minute.
"""

from __future__ import annotations

import json
import sys
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ssebench.errors import TaskError
from ssebench.tasks.model import TASK_ID_PATTERN

MANIFEST_FIELDS = ("name", "version", "tasks")
# What a run needs from a task besides its ID (Task.container_metadata and summary).
TASK_FIELDS = ("id", "project", "language", "source_dir", "packages", "base_image")


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest at path, checked enough that every task can be served.
    Raises TaskError naming the file and what is wrong."""
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TaskError(
            f"{path}: no such manifest; make one with `ssebench dataset manifest`"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        raise TaskError(f"{path}: not a readable JSON manifest", path=str(path)) from None
    if not isinstance(manifest, dict) or any(key not in manifest for key in MANIFEST_FIELDS):
        raise TaskError(f"{path}: a manifest needs {', '.join(MANIFEST_FIELDS)}", path=str(path))
    tasks = manifest["tasks"]
    if not isinstance(tasks, list):
        raise TaskError(f"{path}: field 'tasks' must be a list", path=str(path))
    for task in tasks:
        if not isinstance(task, dict) or any(key not in task for key in TASK_FIELDS):
            raise TaskError(f"{path}: every task needs {', '.join(TASK_FIELDS)}", path=str(path))
        if not isinstance(task["id"], str) or not TASK_ID_PATTERN.match(task["id"]):
            raise TaskError(f"{path}: a task ID is not 1-48 of [a-z0-9-]", path=str(path))
    return manifest


class CatalogServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], manifest: dict[str, Any]) -> None:
        super().__init__(address, _Handler)
        self.manifest_bytes = json.dumps(manifest, indent=2, sort_keys=True).encode() + b"\n"
        self.listing = json.dumps(
            {
                "name": manifest["name"],
                "version": manifest["version"],
                "description": manifest.get("description", ""),
                "tasks": [
                    {key: value for key, value in task.items() if key != "files"}
                    for task in manifest["tasks"]
                ],
            }
        ).encode()
        self.tasks = {
            task["id"]: json.dumps({**task, "dataset": manifest["name"]}).encode()
            for task in manifest["tasks"]
        }


class _Handler(BaseHTTPRequestHandler):
    server: CatalogServer
    server_version = "ssebench-catalog"
    sys_version = ""

    def do_GET(self) -> None:
        self._answer(send_body=True)

    def do_HEAD(self) -> None:
        self._answer(send_body=False)

    def _answer(self, *, send_body: bool) -> None:
        path = self.path.split("?", 1)[0].rstrip("/") or "/"
        body: bytes | None
        if path == "/health":
            body, kind = b"ok\n", "text/plain; charset=utf-8"
        elif path == "/manifest.json":
            body, kind = self.server.manifest_bytes, "application/json"
        elif path == "/tasks":
            body, kind = self.server.listing, "application/json"
        elif path.startswith("/tasks/"):
            body, kind = self.server.tasks.get(path.removeprefix("/tasks/")), "application/json"
        else:
            body, kind = None, "application/json"
        status = HTTPStatus.OK
        if body is None:
            status = HTTPStatus.NOT_FOUND
            body = json.dumps({"error": f"no such path: {path}"}).encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"catalog: {self.address_string()} {format % args}\n")


def make_server(manifest_path: Path, host: str, port: int) -> CatalogServer:
    """A server for the manifest at manifest_path. Raises TaskError for a bad manifest."""
    return CatalogServer((host, port), read_manifest(manifest_path))
