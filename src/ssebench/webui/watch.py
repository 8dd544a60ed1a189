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
from ssebench.results import ARCHIVE_DIR, RESULT_FILE, read_json
from ssebench.webui.catalog import RunRecord, row

DAEMON_PORT = 4263
DAEMON_TIMEOUT = 5.0
ENDPOINT_SECONDS = 30.0
LOG_FILES = ("agent.log", "entrypoint.log", "daemon.log", "evaluator.log")
FILE_LIMIT = 2 * 1024 * 1024
DIALOG_BATCH = 500
LOG_LINES_KEPT = 20_000
DIALOG_FILE = "dialog.jsonl"
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


def read_tail(path: Path, limit: int = FILE_LIMIT) -> tuple[str, bool]:
    """The last limit bytes of a file as text, and whether it was cut."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - limit))
            return handle.read().decode("utf-8", errors="replace"), size > limit
    except OSError:
        return "", False


def dialog_from_file(run_dir: Path | None, since: int) -> dict[str, Any]:
    events: list[dict[str, Any]] = []
    if run_dir is not None:
        try:
            with (run_dir / ARCHIVE_DIR / DIALOG_FILE).open(encoding="utf-8") as lines:
                for line in lines:
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue  # a line being written
                    if isinstance(event, dict) and int(event.get("seq", 0)) > since:
                        events.append(event)
                        if len(events) >= DIALOG_BATCH:
                            break
        except OSError:
            pass
    last = int(events[-1].get("seq", since)) if events else since
    return {"events": events, "next": last, "more": len(events) >= DIALOG_BATCH}


class Watcher:
    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.daemons = Daemons(backend)
        self.followers = LogFollowers(backend)

    async def detail(self, record: RunRecord) -> dict[str, Any]:
        summary = record.summary or {}
        grade = summary.get("grade")
        phase = None
        if record.running and record.live is not None:
            try:
                status = await self.daemons.get(record.live, "/status")
                phase = status.get("phase") if isinstance(status, dict) else None
                if grade is None and phase == "graded":
                    grade = await self.daemons.get(record.live, "/result")
            except DaemonUnreachable:
                pass
        if grade is None and record.run_dir is not None:
            # The container's grade, before the runner has recorded the run.
            grade = read_json(record.run_dir / RESULT_FILE)
        settings = summary.get("config") or (dict(record.live.labels) if record.live else {})
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
            "log_files": [
                name
                for name in LOG_FILES
                if record.run_dir is not None and (record.run_dir / name).is_file()
            ],
        }

    async def dialog(self, record: RunRecord, since: int) -> dict[str, Any]:
        if record.running and record.live is not None:
            try:
                answer = await self.daemons.get(record.live, f"/dialog?since={since}")
                if isinstance(answer, dict):
                    events = answer.get("events") or []
                    return {
                        "events": events,
                        "next": answer.get("next", since),
                        "more": False,
                        "live": True,
                    }
            except DaemonUnreachable:
                pass
        found = await asyncio.to_thread(dialog_from_file, record.run_dir, since)
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
            return {"diff": "", "live": record.running, "truncated": False}
        text, cut = await asyncio.to_thread(read_tail, record.run_dir / PATCH_FILE)
        return {"diff": text, "live": False, "truncated": cut}

    async def log_file(self, record: RunRecord, name: str) -> dict[str, Any]:
        if name not in LOG_FILES or record.run_dir is None:
            return {"text": "", "truncated": False}
        text, cut = await asyncio.to_thread(read_tail, record.run_dir / name)
        return {"text": text, "truncated": cut}

    def container_output(self, record: RunRecord, since: int) -> dict[str, Any]:
        if record.live is None:
            return {"lines": [], "next": since, "following": False, "first": since}
        return self.followers.lines(record.live, since)


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
