"""A running opencode run's session, read live from its OpenCode server (port 4096).

The opencode agent runs `opencode serve` on port 4096 of the run's container and
attaches `opencode run` to it, so the server holds the session as it grows: its
messages, their parts (text, tool calls with their input and output) and the files it
changed. The page's Session tab reads them here, through backend.endpoint(handle, 4096);
once the run has stopped, the tab falls back to the run's dialog (dialog.jsonl).

The server is the agent's: everything it answers is untrusted. Only GETs are sent, no
redirect is followed, an answer is read up to MAX_ANSWER_BYTES, and every string the
page gets is clipped; the page shows them as text.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from ssebench.errors import SsebenchError
from ssebench.extensions import Backend
from ssebench.webui.catalog import RunRecord, row

OPENCODE_PORT = 4096
AGENT = "opencode"
TIMEOUT_SECONDS = 5.0
MAX_ANSWER_BYTES = 4 * 1024 * 1024
CLIP = 8000
MAX_MESSAGES = 500
MAX_PARTS = 200


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects())


class Unreachable(Exception):
    """The OpenCode server did not answer as expected."""


def _get(url: str) -> Any:
    try:
        with _OPENER.open(url, timeout=TIMEOUT_SECONDS) as answer:
            if answer.status != 200:
                raise Unreachable(f"HTTP {answer.status}")
            data = answer.read(MAX_ANSWER_BYTES + 1)
    except urllib.error.HTTPError as error:
        raise Unreachable(f"HTTP {error.code}") from None
    except OSError as error:
        raise Unreachable(type(error).__name__) from None
    if len(data) > MAX_ANSWER_BYTES:
        raise Unreachable(f"an answer larger than {MAX_ANSWER_BYTES} bytes")
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        raise Unreachable("an answer that is not JSON") from None


def _text(value: object) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        value = json.dumps(value)[:CLIP]
    return value[:CLIP]


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def part_of(part: dict[str, Any]) -> dict[str, Any] | None:
    """The page's form of one part of a message, or None for parts it does not show."""
    kind = part.get("type")
    if kind in ("text", "reasoning"):
        return {"type": kind, "text": _text(part.get("text"))}
    if kind == "tool":
        state = _mapping(part.get("state"))
        status = _text(state.get("status"))[:20]
        output = state.get("error") if status == "error" else state.get("output")
        return {
            "type": "tool",
            "tool": _text(part.get("tool"))[:100],
            "status": status,
            "input": _text(state.get("input")),
            "output": _text(output),
        }
    if kind == "patch":
        files = _list(part.get("files"))
        return {"type": "patch", "files": [_text(name)[:500] for name in files[:100]]}
    return None


def message_of(entry: object) -> dict[str, Any] | None:
    entry = _mapping(entry)
    info = _mapping(entry.get("info"))
    role = _text(info.get("role"))[:20]
    if role not in ("user", "assistant"):
        return None
    parts = _list(entry.get("parts"))
    shown = [p for p in (part_of(_mapping(part)) for part in parts[:MAX_PARTS]) if p is not None]
    return {"id": _text(info.get("id"))[:100], "role": role, "parts": shown}


def diff_of(entries: object) -> list[dict[str, Any]]:
    if not isinstance(entries, list):
        return []
    files = []
    for entry in entries[:200]:
        entry = _mapping(entry)
        files.append(
            {
                "file": _text(entry.get("file"))[:500],
                "additions": int(_number(entry.get("additions"))),
                "deletions": int(_number(entry.get("deletions"))),
                "patch": _text(entry.get("patch") or entry.get("diff")),
            }
        )
    return files


def read_session(base: str) -> dict[str, Any]:
    """The newest session of the OpenCode server at base (blocking). Raises Unreachable."""
    sessions = _get(base + "/session")
    if not isinstance(sessions, list):
        raise Unreachable("a session list that is not a list")
    found = [_mapping(s) for s in sessions if isinstance(_mapping(s).get("id"), str)]
    if not found:
        return {"session": None, "messages": [], "diff": []}
    newest = max(found, key=lambda s: _number(_mapping(s.get("time")).get("updated")))
    quoted = urllib.parse.quote(str(newest["id"]), safe="")
    messages = _get(f"{base}/session/{quoted}/message")
    if not isinstance(messages, list):
        raise Unreachable("a message list that is not a list")
    try:
        diff = diff_of(_get(f"{base}/session/{quoted}/diff"))
    except Unreachable:
        diff = []
    shown = [m for m in (message_of(entry) for entry in messages[-MAX_MESSAGES:]) if m]
    return {
        "session": {
            "id": _text(newest["id"])[:100],
            "title": _text(newest.get("title"))[:300],
            "cost": _number(newest.get("cost")),
        },
        "messages": shown,
        "diff": diff,
    }


async def live_session(backend: Backend, record: RunRecord) -> dict[str, Any]:
    """{"live": True, "session", "messages", "diff"} from the run's OpenCode server, or
    {"live": False, "reason", "over"}: the page then shows the run's dialog instead. With
    "over" false the run still runs and its server may answer the next time (it is not
    up yet, or was slow): the page asks again."""
    if str(row(record).get("agent") or "") != AGENT:
        return {"live": False, "over": True, "reason": "Only opencode runs have an OpenCode server"}
    if record.live is None or record.live.state == "exited":
        return {"live": False, "over": True, "reason": "The run is over: its dialog is the record"}
    if not record.running:
        # Created and not started yet (its archive is being copied in, slow under load),
        # or in a state the backend cannot tell: the page asks again rather than giving
        # up on a run that may be about to start.
        reason = f"The run's container is {record.live.state}, not running yet"
        return {"live": False, "over": False, "reason": reason}
    try:
        base = await asyncio.to_thread(backend.endpoint, record.live.handle, OPENCODE_PORT)
    except SsebenchError as error:
        return {"live": False, "over": False, "reason": f"No way to the OpenCode server: {error}"}
    try:
        session = await asyncio.to_thread(read_session, base.rstrip("/"))
    except Unreachable as error:
        reason = f"The OpenCode server did not answer ({error})"
        return {"live": False, "over": False, "reason": reason}
    return {"live": True, **session}
