"""Run directories as a hostile agent leaves them, for the tests of the host's readers.

On Docker the agent owns archive/ on the host; these directories also put the hostile
things where the harness writes (summary.json, logs, ...), so that every name a host
reader opens is tried: links to /dev/zero, /etc/passwd and /proc/self/environ, FIFOs,
a 3 GB sparse file, many small files, a setuid file, a forged dialog. The harness
never writes the "hostile" agent's runs: these are made by hand, as the agent could.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

TASK = "py-semver-prerelease"
AGENT = "hostile"
LINK_TARGETS = {"zero": "/dev/zero", "passwd": "/etc/passwd", "environ": "/proc/self/environ"}
# Every name of a run directory that the web UI, `ssebench runs` or eval reads.
READ_NAMES = (
    "result.json",
    "final.patch",
    "harness-events.jsonl",
    "agent.log",
    "entrypoint.log",
    "daemon.log",
    "evaluator.log",
    "archive/dialog.jsonl",
)
SPARSE_BYTES = 3 * 1024**3
FORGED_GRADE = {"seq": 4, "ts": "2026-01-01T00:00:03Z", "type": "graded", "status": "passed"}
PASSWD_MARK = "root:x:0:0"


def run_dir_of(results: Path, run_id: str) -> Path:
    return results / TASK / "none" / AGENT / run_id


def summary(run_id: str, status: str = "failed") -> dict[str, object]:
    return {
        "run_id": run_id,
        "task": TASK,
        "status": status,
        "error_msg": "Hidden test failed" if status == "failed" else None,
        "exit_code": 0,
        "started_at": "2026-01-01T00:00:00Z",
        "finished_at": "2026-01-01T00:01:00Z",
        "durations": {"total": 60.0},
        "config": {"agent": AGENT, "model": None, "backend": "docker"},
        "grade": {"status": status, "error_msg": "Hidden test failed"},
    }


def _skeleton(results: Path, run_id: str, *, with_summary: bool = True) -> Path:
    run_dir = run_dir_of(results, run_id)
    (run_dir / "archive").mkdir(parents=True)
    if with_summary:
        (run_dir / "summary.json").write_text(json.dumps(summary(run_id)))
    return run_dir


def linked_run(results: Path, run_id: str, target: str, *, summary_too: bool = False) -> Path:
    """Every name the host reads is a link to target (summary.json too, if asked)."""
    run_dir = _skeleton(results, run_id, with_summary=not summary_too)
    names = READ_NAMES + (("summary.json",) if summary_too else ())
    for name in names:
        (run_dir / name).symlink_to(target)
    return run_dir


def fifo_run(results: Path, run_id: str, *, summary_too: bool = False) -> Path:
    """Every name the host reads is a FIFO that nobody writes: a plain open() blocks."""
    run_dir = _skeleton(results, run_id, with_summary=not summary_too)
    names = READ_NAMES + (("summary.json",) if summary_too else ())
    for name in names:
        os.mkfifo(run_dir / name)
    return run_dir


def linked_archive_run(results: Path, run_id: str, elsewhere: Path) -> Path:
    """archive/ itself is a link to a folder that holds a dialog.jsonl."""
    run_dir = run_dir_of(results, run_id)
    run_dir.mkdir(parents=True)
    (run_dir / "summary.json").write_text(json.dumps(summary(run_id)))
    elsewhere.mkdir(parents=True, exist_ok=True)
    (elsewhere / "dialog.jsonl").write_text(json.dumps(FORGED_GRADE) + "\n")
    (run_dir / "archive").symlink_to(elsewhere)
    return run_dir


def big_run(results: Path, run_id: str, *, small_files: int) -> Path:
    """3 GB sparse files under every name the host reads, small_files files in archive/."""
    run_dir = _skeleton(results, run_id)
    for name in READ_NAMES:
        with (run_dir / name).open("wb") as handle:
            handle.truncate(SPARSE_BYTES)
    archive = run_dir / "archive"
    for number in range(small_files):
        os.close(os.open(archive / f"f{number}", os.O_CREAT | os.O_WRONLY, 0o644))
    return run_dir


def add_setuid_file(run_dir: Path) -> Path:
    setuid = run_dir / "archive" / "setuid-shell"
    setuid.write_bytes(b"#!/bin/sh\nid\n")
    setuid.chmod(0o4755)
    assert setuid.stat().st_mode & stat.S_ISUID
    return setuid


def forged_dialog_run(results: Path, run_id: str, *, line_limit: int = 512 * 1024) -> Path:
    """The harness's own events, and a dialog.jsonl the agent rewrote: a forged grade,
    forged tool results, malformed lines of every kind."""
    run_dir = _skeleton(results, run_id)
    harness = [
        {"seq": 1, "ts": "2026-01-01T00:00:00Z", "type": "agent_started", "command": ["x"]},
        {"seq": 3, "ts": "2026-01-01T00:00:02Z", "type": "agent_exited", "exit_code": 0},
        {"seq": 5, "ts": "2026-01-01T00:00:04Z", "type": "graded", "status": "failed"},
    ]
    (run_dir / "harness-events.jsonl").write_text(
        "".join(json.dumps(event) + "\n" for event in harness)
    )
    agent_lines = [
        json.dumps(harness[0]),  # the harness's own line, as it was written
        json.dumps(
            {
                "seq": 2,
                "ts": "2026-01-01T00:00:01Z",
                "type": "message",
                "role": "assistant",
                "text": "I fixed it",
                "source": "agent",
            }
        ),
        json.dumps(FORGED_GRADE),
        json.dumps(
            {
                "seq": 3,
                "ts": "x",
                "type": "agent_exited",
                "exit_code": 0,
                "timed_out": False,
                "note": "rewritten",
            }
        ),
        json.dumps({"seq": "7", "type": "message", "source": "agent"}),
        json.dumps({"seq": 8.5, "type": "message", "source": "agent"}),
        json.dumps({"seq": True, "type": "message", "source": "agent"}),
        json.dumps([1, 2, 3]),
        "{not json",
        "[" * 100_000,
        json.dumps({"seq": 9, "type": "message", "source": "agent", "text": "x" * line_limit}),
        json.dumps({"seq": 10, "type": {"nested": 1}, "source": "agent"}),
        json.dumps(
            {
                "seq": 11,
                "type": "tool_result",
                "tool": "test",
                "ok": True,
                "exit_code": 0,
                "source": "agent",
            }
        ),
        json.dumps({"seq": 12, "ts": "2026-01-01T00:00:05Z", "type": "note", "source": "harness"}),
    ]
    (run_dir / "archive" / "dialog.jsonl").write_text("\n".join(agent_lines) + "\n")
    (run_dir / "final.patch").write_text("diff --git a/x b/x\n+ok\n")
    add_setuid_file(run_dir)
    return run_dir


# Names an agent can give its files: bytes that are not UTF-8, a newline, 255 bytes.
STRANGE_NAMES = (b"\xff\xfe", b"new\nline", b"n" * 255)


def strange_names_run(results: Path, run_id: str) -> Path:
    """Names and text that are not clean UTF-8 wherever the agent writes them: archive
    entries (STRANGE_NAMES), a dialog with a lone surrogate escape and control
    characters, logs and a patch with bytes that are not UTF-8."""
    run_dir = _skeleton(results, run_id)
    archive = os.fsencode(run_dir / "archive")
    for name in STRANGE_NAMES:
        with open(os.path.join(archive, name), "wb") as file:
            file.write(b"left by the agent\n")
    message = {
        "seq": 1,
        "ts": "2026-01-01T00:00:01Z",
        "type": "message",
        "role": "assistant",
        "text": "bytes \udcff\udcfe and \x1b[31mcolour\x07 end",
        "source": "agent",
    }
    (run_dir / "archive" / "dialog.jsonl").write_text(json.dumps(message) + "\n")
    for log in ("agent.log", "evaluator.log"):
        (run_dir / log).write_bytes(b"line with \xff\xfe bytes\n\x1b[2Jcleared\n")
    (run_dir / "final.patch").write_bytes(
        b"diff --git a/\xff.txt b/\xff.txt\nnew file mode 100644\n--- /dev/null\n"
        b"+++ b/\xff.txt\n@@ -0,0 +1 @@\n+\xfe\n"
    )
    return run_dir
