"""The run list: the runs the backend has (live) and the runs recorded under results/.

A run can be in both: a kept container whose summary.json is written. It is then one
row, with the container's state and the recorded grade. Both sources are cached for a
moment, so a page that polls, or a thousand rows, cost one `list_runs` and one scan of
the results folder every few seconds, not one per request.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ssebench import labels
from ssebench.errors import SsebenchError
from ssebench.extensions import Backend, RunInfo
from ssebench.results.directory import SUMMARY_FILE, read_json
from ssebench.results.unrecorded import record_killed_runs

LIVE_SECONDS = 2.0
RESULTS_SECONDS = 2.0
SORT_KEYS = (
    "started_at",
    "duration",
    "spend",
    "task",
    "agent",
    "model",
    "status",
    "state",
    "run_id",
)
FILTER_KEYS = ("state", "status", "task", "agent", "model")
MAX_LIMIT = 1000


@dataclass(frozen=True)
class RunRecord:
    """Everything known about one run: its container (live), its directory, its summary."""

    run_id: str
    live: RunInfo | None
    run_dir: Path | None
    summary: dict[str, Any] | None
    launching: bool = False

    @property
    def running(self) -> bool:
        return self.live is not None and self.live.state == "running"


def _seconds_since(timestamp: Any) -> float | None:
    if not timestamp or not isinstance(timestamp, str):
        return None
    try:
        moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, (datetime.now(UTC) - moment).total_seconds())


def mapping(value: Any) -> dict[str, Any]:
    """value if it is a JSON object, else an empty one: a field of the wrong type in a
    summary must not break the page."""
    return value if isinstance(value, dict) else {}


def row(record: RunRecord) -> dict[str, Any]:
    """The list's view of a run: what the table shows and sorts on."""
    summary = record.summary or {}
    config = mapping(summary.get("config"))
    live_labels = dict(record.live.labels) if record.live else {}
    state: str
    if record.live is not None:
        state = record.live.state
    elif record.launching:
        state = "starting"
    else:
        state = "finished"
    duration = mapping(summary.get("durations")).get("total")
    started_at = summary.get("started_at") or (record.live.created_at if record.live else None)
    if duration is None and record.running:
        duration = _seconds_since(started_at)
    return {
        "run_id": record.run_id,
        "task": summary.get("task") or live_labels.get(labels.TASK_ID),
        "agent": config.get("agent") or live_labels.get(labels.AGENT),
        "model": config.get("model") or live_labels.get(labels.MODEL),
        "state": state,
        "container": record.live is not None,
        "exit_code": summary.get("exit_code", record.live.exit_code if record.live else None),
        "status": summary.get("status"),
        "error_msg": summary.get("error_msg"),
        "started_at": started_at,
        "finished_at": summary.get("finished_at"),
        "duration": round(duration, 1) if isinstance(duration, int | float) else None,
        "spend": summary.get("spend"),
    }


class ResultsIndex:
    """summary.json files under the results folder, re-read only when they change."""

    def __init__(self, root: Path, *, max_age: float = RESULTS_SECONDS) -> None:
        self.root = root
        self.max_age = max_age
        self._files: dict[Path, tuple[int, dict[str, Any]]] = {}
        self._by_id: dict[str, tuple[Path, dict[str, Any]]] = {}
        self._scanned = 0.0

    def runs(self) -> dict[str, tuple[Path, dict[str, Any]]]:
        """run ID -> (run directory, summary); the newest wins when an ID repeats."""
        if time.monotonic() - self._scanned > self.max_age:
            self._scan()
        return self._by_id

    def forget(self) -> None:
        self._scanned = 0.0

    def _scan(self) -> None:
        # A run a killed runner left without summary.json is shown with that reason.
        record_killed_runs(self.root)
        files: dict[Path, tuple[int, dict[str, Any]]] = {}
        for path in self.root.glob(f"*/*/*/*/{SUMMARY_FILE}"):
            if path.parent.is_symlink():  # the `latest` link
                continue
            try:
                modified = path.lstat().st_mtime_ns
            except OSError:
                continue
            cached = self._files.get(path)
            if cached is not None and cached[0] == modified:
                files[path] = cached
                continue
            data = read_json(path)
            if data is not None:
                files[path] = (modified, data)
        by_id: dict[str, tuple[Path, dict[str, Any]]] = {}
        ordered = sorted(files.items(), key=lambda item: str(item[1][1].get("started_at", "")))
        for path, (_, data) in ordered:
            run_id = str(data.get("run_id") or path.parent.name)
            by_id[run_id] = (path.parent, data)
        self._files = files
        self._by_id = by_id
        self._scanned = time.monotonic()


class LiveRuns:
    """The backend's runs, asked for at most every max_age seconds by all requests."""

    def __init__(self, backend: Backend, *, max_age: float = LIVE_SECONDS) -> None:
        self.backend = backend
        self.max_age = max_age
        self.error: str | None = None
        self._runs: list[RunInfo] = []
        self._asked = -max_age
        self._lock = asyncio.Lock()

    async def runs(self) -> list[RunInfo]:
        async with self._lock:
            if time.monotonic() - self._asked > self.max_age:
                try:
                    self._runs = await asyncio.to_thread(self.backend.list_runs, labels.LISTED_RUNS)
                    self.error = None
                except SsebenchError as error:
                    # The results still show; the page says why live runs are missing.
                    self.error = f"{self.backend.name}: {error}"
                    self._runs = []
                self._asked = time.monotonic()
            return self._runs

    def forget(self) -> None:
        self._asked = -self.max_age


class RunCatalog:
    def __init__(
        self,
        backend: Backend,
        results: Path,
        *,
        launching: Callable[[], Iterable[str]] = tuple,
    ) -> None:
        self.live = LiveRuns(backend)
        self.results = ResultsIndex(results)
        self._launching = launching

    def forget(self) -> None:
        """Drop the caches, after the page changed something."""
        self.live.forget()
        self.results.forget()

    async def records(self) -> list[RunRecord]:
        live = await self.live.runs()
        recorded = await asyncio.to_thread(self.results.runs)
        records: dict[str, RunRecord] = {}
        for info in live:
            found = recorded.get(info.run_id)
            run_dir = found[0] if found else _labelled_dir(info)
            summary = found[1] if found else _summary_in(run_dir)
            records[info.run_id] = RunRecord(info.run_id, info, run_dir, summary)
        for run_id, (run_dir, summary) in recorded.items():
            records.setdefault(run_id, RunRecord(run_id, None, run_dir, summary))
        for run_id in self._launching():
            records.setdefault(run_id, RunRecord(run_id, None, None, None, launching=True))
        return list(records.values())

    async def find(self, run_id: str) -> RunRecord | None:
        return next((record for record in await self.records() if record.run_id == run_id), None)


def _labelled_dir(info: RunInfo) -> Path | None:
    """The run directory the runner put on the container, if this machine has it."""
    value = info.labels.get(labels.RESULTS)
    if not value:
        return None
    path = Path(value)
    return path if path.is_absolute() and path.is_dir() else None


def _summary_in(run_dir: Path | None) -> dict[str, Any] | None:
    return read_json(run_dir / SUMMARY_FILE) if run_dir is not None else None


def _sort_value(value: Any) -> tuple[int, float, str]:
    # Numbers before text, so a stray text value never meets a number in a comparison.
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (0, float(value), "")
    return (1, 0.0, str(value).lower())


def select(
    rows: list[dict[str, Any]],
    *,
    filters: dict[str, str],
    query: str = "",
    sort: str = "started_at",
    descending: bool = True,
    limit: int = 200,
    offset: int = 0,
) -> dict[str, Any]:
    """Filter, sort and page the rows; facets list the values each filter can take."""
    if sort not in SORT_KEYS:
        raise ValueError(f"sort must be one of {', '.join(SORT_KEYS)}")
    facets = {
        key: sorted({str(item[key]) for item in rows if item.get(key) is not None})
        for key in FILTER_KEYS
    }
    words = query.lower().split()
    matching = [
        item
        for item in rows
        if all(str(item.get(key)) == value for key, value in filters.items() if value)
        and all(
            any(word in str(item.get(field) or "").lower() for field in _SEARCHED) for word in words
        )
    ]
    # Rows without the value go last in either order.
    present = [item for item in matching if item.get(sort) is not None]
    absent = [item for item in matching if item.get(sort) is None]
    present.sort(key=lambda item: _sort_value(item[sort]), reverse=descending)
    ordered = present + absent
    limit = max(1, min(limit, MAX_LIMIT))
    offset = max(0, offset)
    return {
        "total": len(ordered),
        "offset": offset,
        "limit": limit,
        "runs": ordered[offset : offset + limit],
        "facets": facets,
    }


_SEARCHED = ("run_id", "task", "agent", "model", "status", "error_msg", "state")


def results_root(path: Path) -> Path:
    """The results folder as an absolute path, so launched runs write where we read."""
    return Path(os.path.abspath(path))
