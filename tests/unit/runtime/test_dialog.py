from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from ssebench.runtime.dialog import Dialog, EventError
from ssebench.runtime.logs import REDACTED, Redactor

from .conftest import SENTINEL


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_events_get_consecutive_seq_and_a_utc_timestamp(tmp_path: Path) -> None:
    dialog = Dialog(tmp_path / "dialog.jsonl", Redactor([]))
    first = dialog.append("agent_started", command=["run"])
    second = dialog.append_from_agent({"type": "message", "text": "hi", "seq": 99, "ts": "x"})
    assert (first["seq"], second["seq"]) == (1, 2)
    assert str(second["ts"]).endswith("Z")
    assert second["source"] == "agent"
    written = lines(tmp_path / "dialog.jsonl")
    assert [e["seq"] for e in written] == [1, 2]
    assert [e["type"] for e in written] == ["agent_started", "message"]
    assert stat.S_IMODE((tmp_path / "dialog.jsonl").stat().st_mode) == 0o644


def test_since_returns_later_events_and_the_next_cursor(tmp_path: Path) -> None:
    dialog = Dialog(tmp_path / "dialog.jsonl", Redactor([]))
    assert dialog.since(0) == ([], 0)
    for n in range(5):
        dialog.append("tool_call", n=n)
    events, last = dialog.since(3)
    assert [e["seq"] for e in events] == [4, 5]
    assert last == 5
    assert dialog.since(5) == ([], 5)
    assert dialog.since(50) == ([], 5)
    assert len(dialog.since(-1)[0]) == 5


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"text": "no type"},
        {"type": ""},
        {"type": "x" * 65},
        {"type": "graded", "status": "passed"},
        {"type": "agent_exited"},
        {"type": "big", "text": "x" * 300_000},
    ],
)
def test_agent_events_are_validated(tmp_path: Path, body: object) -> None:
    dialog = Dialog(tmp_path / "dialog.jsonl", Redactor([]))
    with pytest.raises(EventError):
        dialog.append_from_agent(body)
    assert dialog.last_seq == 0


def test_secrets_are_redacted_in_values_and_keys(tmp_path: Path) -> None:
    dialog = Dialog(tmp_path / "dialog.jsonl", Redactor([SENTINEL]))
    dialog.append_from_agent({"type": "note", "text": f"key {SENTINEL}", SENTINEL: [SENTINEL]})
    text = (tmp_path / "dialog.jsonl").read_text()
    assert SENTINEL not in text
    assert REDACTED in text


def test_a_restarted_daemon_continues_the_sequence(tmp_path: Path) -> None:
    path = tmp_path / "dialog.jsonl"
    Dialog(path, Redactor([])).append("agent_started")
    again = Dialog(path, Redactor([]))
    assert again.append("agent_exited")["seq"] == 2
    assert [e["seq"] for e in lines(path)] == [1, 2]


def test_a_swapped_in_symlink_does_not_redirect_writes(tmp_path: Path) -> None:
    path = tmp_path / "dialog.jsonl"
    victim = tmp_path / "victim"
    victim.write_text("untouched\n")
    dialog = Dialog(path, Redactor([]))
    path.unlink()
    path.symlink_to(victim)
    dialog.append("tool_call")
    assert victim.read_text() == "untouched\n"


def test_an_existing_symlink_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("")
    (tmp_path / "dialog.jsonl").symlink_to(victim)
    with pytest.raises(OSError):
        Dialog(tmp_path / "dialog.jsonl", Redactor([]))


def test_the_runtimes_own_events_also_go_to_the_harness_copy(tmp_path: Path) -> None:
    copy = tmp_path / "harness-events.jsonl"
    dialog = Dialog(tmp_path / "dialog.jsonl", Redactor([SENTINEL]), harness_copy=copy)
    dialog.append("agent_started", command=["run", SENTINEL])
    dialog.append_from_agent({"type": "message", "text": "hi"})
    dialog.append("graded", status="passed")
    dialog.close()
    harness = lines(copy)
    assert [(event["seq"], event["type"]) for event in harness] == [
        (1, "agent_started"),
        (3, "graded"),
    ]
    # The same lines as in the dialog, so that the host can tell them from forgeries.
    assert lines(tmp_path / "dialog.jsonl")[0] == harness[0]
    assert SENTINEL not in copy.read_text()
    assert stat.S_IMODE(copy.stat().st_mode) == 0o644


def test_the_harness_copy_is_never_a_link(tmp_path: Path) -> None:
    (tmp_path / "harness-events.jsonl").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError):
        Dialog(
            tmp_path / "dialog.jsonl",
            Redactor([]),
            harness_copy=tmp_path / "harness-events.jsonl",
        )
    assert not (tmp_path / "elsewhere").exists()
