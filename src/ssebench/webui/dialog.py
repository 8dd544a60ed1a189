"""A run's dialog as the page shows it, with the origin of every event said.

Two records exist. archive/dialog.jsonl is the full dialog, but on Docker the agent
owns archive/ and can rewrite it, so none of its lines is trusted. The runtime also
writes its own events (agent_started, tool_call, tool_result, agent_exited, graded)
to harness-events.jsonl in the run directory, which the agent cannot reach. So:

- every event of harness-events.jsonl is shown with origin "harness";
- a line of dialog.jsonl that is the same event as the harness's at that seq is the
  harness's own line, shown once (from the harness copy);
- every other line of dialog.jsonl is origin "agent"; one that claims to be the
  harness's (a runtime type, or a source other than "agent") is also marked
  "claim": a forged "graded: passed" is shown as what the agent says, not as the grade;
- a line that is not a JSON object with a whole-number seq, or is too long, is shown
  as origin "malformed", with an excerpt, never as an error of the page.

A running run's dialog comes from its daemon, which keeps the events in memory: it
refuses runtime types from the agent and marks the agent's with source "agent".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ssebench.results import files as run_files
from ssebench.results.directory import ARCHIVE_DIR, HARNESS_EVENTS_FILE
from ssebench.runtime.dialog import RUNTIME_EVENT_TYPES

DIALOG_FILE = "dialog.jsonl"
DIALOG_BATCH = 500
EXCERPT_CHARS = 300


def _malformed(number: int, raw: bytes, problem: str) -> dict[str, Any]:
    return {
        "seq": None,
        "type": "malformed",
        "origin": "malformed",
        "line": number,
        "problem": problem,
        "excerpt": raw[: EXCERPT_CHARS * 4].decode("utf-8", "replace")[:EXCERPT_CHARS],
    }


def _whole_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_lines(data: bytes, truncated: bool, line_limit: int) -> list[tuple[bool, dict[str, Any]]]:
    """Each line of a JSONL file: (True, the event) or (False, a malformed entry)."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    elif lines and truncated:
        lines.pop()  # cut in the middle by the read cap
    parsed: list[tuple[bool, dict[str, Any]]] = []
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        problem = _problem(raw, line_limit)
        if isinstance(problem, str):
            parsed.append((False, _malformed(number, raw, problem)))
        else:
            parsed.append((True, problem))
    return parsed


def _problem(raw: bytes, line_limit: int) -> str | dict[str, Any]:
    """What is wrong with a line, or the event it holds."""
    if len(raw) > line_limit:
        return f"longer than {line_limit} bytes"
    try:
        event = json.loads(raw)
    except (ValueError, RecursionError):
        return "not JSON"
    if not isinstance(event, dict):
        return "not a JSON object"
    if not _whole_number(event.get("seq")):
        return "its seq is not a whole number"
    if not isinstance(event.get("type"), str):
        return "its type is not a string"
    return event


def claims_harness(event: dict[str, Any]) -> bool:
    return event.get("type") in RUNTIME_EVENT_TYPES or event.get("source") != "agent"


def merged_events(run_dir: Path) -> tuple[list[dict[str, Any]], bool]:
    """The whole dialog from the run directory, in order, and whether a cap cut it."""
    caps = run_files.limits()
    harness_text = _read(run_dir, HARNESS_EVENTS_FILE, caps.dialog_bytes)
    dialog_text = _read(run_dir, f"{ARCHIVE_DIR}/{DIALOG_FILE}", caps.dialog_bytes)
    harness: dict[int, dict[str, Any]] = {}
    if harness_text is not None:
        for well_formed, event in parse_lines(*harness_text, caps.line_bytes):
            # Only the harness writes there: a malformed line is a torn last write.
            if well_formed:
                harness.setdefault(event["seq"], {**event, "origin": "harness"})
    keyed: list[tuple[int, int, dict[str, Any]]] = [
        (seq, 0, event) for seq, event in harness.items()
    ]
    last_seq = 0
    if dialog_text is not None:
        for well_formed, event in parse_lines(*dialog_text, caps.line_bytes):
            if not well_formed:
                keyed.append((last_seq, 1, event))
                continue
            seq = event["seq"]
            last_seq = seq
            twin = harness.get(seq)
            if twin is not None and _same_event(twin, event):
                continue
            shown = {**event, "origin": "agent"}
            if claims_harness(event):
                shown["claim"] = True
            keyed.append((seq, 1, shown))
    keyed.sort(key=lambda item: (item[0], item[1]))
    cut = bool(
        (harness_text is not None and harness_text[1])
        or (dialog_text is not None and dialog_text[1])
    )
    return [event for _, _, event in keyed], cut


def _same_event(harness: dict[str, Any], line: dict[str, Any]) -> bool:
    return {k: v for k, v in harness.items() if k != "origin"} == line


def _read(run_dir: Path, relative: str, limit: int) -> tuple[bytes, bool] | None:
    try:
        content = run_files.read_file(run_dir, relative, limit)
    except OSError:
        return None
    return content.data, content.truncated


def dialog_from_files(run_dir: Path | None, since: int) -> dict[str, Any]:
    """Events from position since on (the page passes back `next`); at most a batch."""
    if run_dir is None:
        return {"events": [], "next": since, "more": False, "cut": False}
    events, cut = merged_events(run_dir)
    batch = events[since : since + DIALOG_BATCH]
    following = since + len(batch)
    return {
        "events": batch,
        "next": following,
        "more": following < len(events),
        "cut": cut,
    }


def dialog_from_daemon(answer: dict[str, Any], since: int) -> dict[str, Any]:
    """The daemon's answer with each event's origin said; odd entries are malformed."""
    events: list[dict[str, Any]] = []
    raw_events = answer.get("events")
    for index, event in enumerate(raw_events if isinstance(raw_events, list) else [], 1):
        if not isinstance(event, dict) or not _whole_number(event.get("seq")):
            raw = json.dumps(event, default=str).encode()
            events.append(_malformed(index, raw, "not an event"))
        elif event.get("source") == "agent" and event.get("type") not in RUNTIME_EVENT_TYPES:
            events.append({**event, "origin": "agent"})
        elif event.get("type") in RUNTIME_EVENT_TYPES and "source" not in event:
            events.append({**event, "origin": "harness"})
        else:
            events.append({**event, "origin": "agent", "claim": True})
    following = answer.get("next")
    return {
        "events": events,
        "next": following if _whole_number(following) else since,
        "more": False,
    }
