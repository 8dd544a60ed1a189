"""The run's dialog: archive/dialog.jsonl, one JSON event per line.

The daemon is its only writer. The archive directory belongs to the agent, so the
file is opened once, without following links, and kept open: if the agent swaps
the name for a link to somewhere else, root's writes still go to the original file.

Because the agent can still replace or rewrite archive/dialog.jsonl, the runtime's own
events (RUNTIME_EVENT_TYPES) also go to harness_copy, a file in the run directory that
the agent cannot reach: the host shows harness events only from there.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from .logs import Redactor, utc_now

# Types the runtime writes itself; an agent cannot post them.
RUNTIME_EVENT_TYPES = frozenset(
    {"agent_started", "agent_exited", "tool_call", "tool_result", "graded"}
)
MAX_EVENT_BYTES = 256 * 1024


class EventError(ValueError):
    """An event an agent posted is not acceptable; the message says why."""


class Dialog:
    def __init__(self, path: Path, redactor: Redactor, harness_copy: Path | None = None) -> None:
        self.path = path
        self._redactor = redactor
        self._lock = threading.Lock()
        self._events: list[dict[str, Any]] = []
        flags = os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            fd = -1
        if fd >= 0 and os.fstat(fd).st_uid != os.geteuid():
            # Not ours, so not a dialog an earlier start of this container wrote.
            os.close(fd)
            os.unlink(path)
            fd = -1
        if fd < 0:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644)
        else:
            self._events = _read_events(fd)
        os.fchmod(fd, 0o644)
        self._fd = fd
        self._harness_fd = -1
        if harness_copy is not None:
            try:
                self._harness_fd = os.open(harness_copy, flags | os.O_CREAT, 0o644)
            except OSError:
                os.close(fd)
                raise

    @property
    def last_seq(self) -> int:
        with self._lock:
            return self._events[-1]["seq"] if self._events else 0

    def append(self, event_type: str, /, **fields: Any) -> dict[str, Any]:
        """Record an event of the runtime's own; also in the harness copy."""
        return self._append(event_type, fields, harness=True)

    def _append(self, event_type: str, fields: dict[str, Any], *, harness: bool) -> dict[str, Any]:
        """seq and ts are the dialog's, whatever the fields say."""
        fields = self._redact(fields)
        with self._lock:
            event: dict[str, Any] = {
                "seq": len(self._events) + 1,
                "ts": utc_now(),
                "type": event_type,
            }
            event.update((k, v) for k, v in fields.items() if k not in event)
            line = json.dumps(event, separators=(",", ":")) + "\n"
            _write_all(self._fd, line.encode())
            if harness and self._harness_fd >= 0:
                _write_all(self._harness_fd, line.encode())
            self._events.append(event)
            return event

    def append_from_agent(self, body: Any) -> dict[str, Any]:
        """Validate and record an event that the agent posted."""
        if not isinstance(body, dict):
            raise EventError("an event is a JSON object")
        event_type = body.get("type")
        if not isinstance(event_type, str) or not event_type or len(event_type) > 64:
            raise EventError("an event needs a 'type': a string of 1 to 64 characters")
        if event_type in RUNTIME_EVENT_TYPES:
            raise EventError(f"type {event_type!r} is reserved for the runtime")
        if len(json.dumps(body)) > MAX_EVENT_BYTES:
            raise EventError(f"an event may have at most {MAX_EVENT_BYTES} bytes")
        fields = {k: v for k, v in body.items() if k not in ("seq", "ts", "type")}
        fields["source"] = "agent"
        return self._append(event_type, fields, harness=False)

    def last_from_agent(self, event_type: str) -> dict[str, Any] | None:
        """The agent's latest event of a type (its fields are the agent's: untrusted)."""
        with self._lock:
            for event in reversed(self._events):
                if event["type"] == event_type and event.get("source") == "agent":
                    return dict(event)
        return None

    def since(self, seq: int) -> tuple[list[dict[str, Any]], int]:
        """Events after ``seq``, and the seq to ask from next time."""
        with self._lock:
            events = self._events[max(seq, 0) :]
            last = self._events[-1]["seq"] if self._events else 0
            return list(events), last

    def close(self) -> None:
        with self._lock:
            for fd in (self._fd, self._harness_fd):
                if fd >= 0:
                    os.close(fd)
            self._fd = self._harness_fd = -1

    def _redact(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._redactor.text(value)
        if isinstance(value, dict):
            return {self._redactor.text(str(k)): self._redact(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._redact(v) for v in value]
        return value


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_events(fd: int) -> list[dict[str, Any]]:
    """The events of an earlier start of the daemon, so that seq keeps counting."""
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    events: list[dict[str, Any]] = []
    for line in b"".join(chunks).splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("seq") == len(events) + 1:
            events.append(event)
    return events
