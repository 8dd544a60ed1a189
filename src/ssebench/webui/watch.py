"""One run seen closely: its grade, dialog, diff and logs.

A finished run is read from its run directory. A running one is read from its daemon
(port 4263, reached through backend.endpoint), which knows the dialog and the diff as
they are now; the page asks again with `since` to follow. The container's output is
followed by one thread per run, whatever the number of pages watching it, because a
`docker logs --follow` blocks until the next line and cannot be interrupted.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from pathlib import Path
from typing import Any

from ssebench.errors import SsebenchError
from ssebench.extensions import Backend, RunInfo
from ssebench.results import files as run_files
from ssebench.results.directory import ARCHIVE_DIR, RESULT_FILE, read_json
from ssebench.webui.catalog import RunRecord, mapping, row
from ssebench.webui.dialog import dialog_from_daemon, dialog_from_files

DAEMON_PORT = 4263
DAEMON_TIMEOUT = 5.0
ENDPOINT_SECONDS = 30.0
LOG_FILES = ("agent.log", "entrypoint.log", "daemon.log", "evaluator.log")
LOG_LINES_KEPT = 20_000
PATCH_FILE = "final.patch"


class DaemonUnreachable(Exception):
    """The run's daemon did not answer; the caller falls back to the run directory."""


class Daemons:
    """HTTP GETs to the daemons of running runs; the endpoint of each is kept a while,
    since finding it costs a `docker inspect` (or a port-forward on a cluster)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._endpoints: dict[str, tuple[float, str]] = {}

    async def get(self, info: RunInfo, path: str) -> Any:
        """The daemon's JSON answer to GET path. Raises DaemonUnreachable."""
        base = await self._endpoint(info)
        try:
            return await asyncio.to_thread(_get_json, base + path)
        except DaemonUnreachable:
            self._endpoints.pop(info.run_id, None)
            raise

    async def _endpoint(self, info: RunInfo) -> str:
        cached = self._endpoints.get(info.run_id)
        if cached is not None and time.monotonic() - cached[0] < ENDPOINT_SECONDS:
            return cached[1]
        try:
            url = await asyncio.to_thread(self.backend.endpoint, info.handle, DAEMON_PORT)
        except SsebenchError as error:
            raise DaemonUnreachable(str(error)) from None
        self._endpoints[info.run_id] = (time.monotonic(), url.rstrip("/"))
        return url.rstrip("/")


def _get_json(url: str) -> Any:
    try:
        with urllib.request.urlopen(url, timeout=DAEMON_TIMEOUT) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise DaemonUnreachable(f"HTTP {error.code}") from None
    except (OSError, ValueError) as error:
        raise DaemonUnreachable(type(error).__name__) from None


class Watcher:
    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.daemons = Daemons(backend)
        self.followers = LogFollowers(backend)

    async def detail(self, record: RunRecord) -> dict[str, Any]:
        summary = record.summary or {}
        grade = mapping(summary.get("grade")) or None
        phase = None
        if record.running and record.live is not None:
            try:
                status = await self.daemons.get(record.live, "/status")
                phase = status.get("phase") if isinstance(status, dict) else None
                if grade is None and phase == "graded":
                    grade = await self.daemons.get(record.live, "/result")
            except DaemonUnreachable:
                pass
        files = await asyncio.to_thread(_files_of, record.run_dir, grade is None)
        if grade is None:
            grade = files.pop("result")
        settings = mapping(summary.get("config")) or (
            dict(record.live.labels) if record.live else {}
        )
        return {
            **row(record),
            "phase": phase,
            "grade": grade if isinstance(grade, dict) else None,
            "settings": settings,
            "durations": summary.get("durations"),
            "images": summary.get("images"),
            "stopped": summary.get("stopped"),
            "name": record.live.name if record.live else None,
            "run_dir": str(record.run_dir) if record.run_dir else None,
            "log_files": files["log_files"],
            "archive": files["archive"],
        }

    async def dialog(self, record: RunRecord, since: int) -> dict[str, Any]:
        if record.running and record.live is not None:
            try:
                answer = await self.daemons.get(record.live, f"/dialog?since={since}")
                if isinstance(answer, dict):
                    return {**dialog_from_daemon(answer, since), "live": True}
            except DaemonUnreachable:
                pass
        found = await asyncio.to_thread(dialog_from_files, record.run_dir, since)
        return {**found, "live": record.running}

    async def diff(self, record: RunRecord) -> dict[str, Any]:
        if record.running and record.live is not None:
            try:
                answer = await self.daemons.get(record.live, "/diff")
                if isinstance(answer, dict):
                    return {"diff": answer.get("diff", ""), "live": True, "truncated": False}
            except DaemonUnreachable:
                pass
        if record.run_dir is None:
            return {"diff": "", "live": record.running, "truncated": False, "problem": None}
        # The patch's start: a cut patch still shows its first files whole.
        text, cut, problem = await asyncio.to_thread(
            run_files.read_text, record.run_dir, PATCH_FILE
        )
        return {"diff": text, "live": False, "truncated": cut, "problem": problem}

    async def log_file(self, record: RunRecord, name: str) -> dict[str, Any]:
        if name not in LOG_FILES or record.run_dir is None:
            return {"text": "", "truncated": False, "problem": None}
        # A log's end: where a run failed.
        text, cut, problem = await asyncio.to_thread(
            run_files.read_text, record.run_dir, name, tail=True
        )
        return {"text": text, "truncated": cut, "problem": problem}

    def container_output(self, record: RunRecord, since: int) -> dict[str, Any]:
        if record.live is None:
            return {"lines": [], "next": since, "following": False, "first": since}
        return self.followers.lines(record.live, since)


def _files_of(run_dir: Path | None, with_result: bool) -> dict[str, Any]:
    """What the detail shows of the run directory; read in a thread, never followed."""
    if run_dir is None:
        return {"result": None, "log_files": [], "archive": None}
    return {
        # The container's grade, before the runner has recorded the run.
        "result": read_json(run_dir / RESULT_FILE) if with_result else None,
        "log_files": [name for name in LOG_FILES if run_files.is_regular_file(run_dir, name)],
        "archive": _archive_listing(run_dir),
    }


def _archive_listing(run_dir: Path | None) -> dict[str, Any] | None:
    """What the agent left in archive/, described without following or opening any of it."""
    if run_dir is None:
        return None
    try:
        listing = run_files.list_directory(run_dir, ARCHIVE_DIR)
    except OSError:
        return None
    return {
        "entries": [
            {
                "name": run_files.shown_name(entry.name),
                "kind": entry.kind,
                "size": entry.size,
                "setuid": entry.setuid,
            }
            for entry in sorted(listing.entries, key=lambda entry: entry.name)
        ],
        "truncated": listing.truncated,
    }


class LogFollower(threading.Thread):
    """Follows one run's container output into a bounded buffer, until it ends."""

    def __init__(self, backend: Backend, info: RunInfo) -> None:
        super().__init__(name=f"logs-{info.run_id}", daemon=True)
        self.backend = backend
        self.info = info
        self.lines: deque[str] = deque(maxlen=LOG_LINES_KEPT)
        self.count = 0  # lines seen so far; the index of the next one
        self.done = False
        self.lock = threading.Lock()

    def run(self) -> None:
        try:
            for line in self.backend.logs(self.info.handle, follow=True):
                with self.lock:
                    self.lines.append(line)
                    self.count += 1
        except SsebenchError as error:
            with self.lock:
                self.lines.append(f"[ssebench webui: the output ended: {error}]")
                self.count += 1
        finally:
            self.done = True


class LogFollowers:
    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._followers: dict[str, LogFollower] = {}
        self._lock = threading.Lock()

    def lines(self, info: RunInfo, since: int) -> dict[str, Any]:
        """Lines from index since on; `first` is the oldest still kept."""
        with self._lock:
            follower = self._followers.get(info.run_id)
            # A finished follower of a container that runs again (or is new) restarts.
            if follower is None or (follower.done and info.state == "running"):
                follower = LogFollower(self.backend, info)
                self._followers[info.run_id] = follower
                follower.start()
        with follower.lock:
            first = follower.count - len(follower.lines)
            start = max(since, first)
            kept = list(follower.lines)[start - first :]
            return {
                "lines": kept,
                "next": follower.count,
                "first": first,
                "following": not follower.done,
            }
