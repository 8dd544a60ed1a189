"""Runs whose runner was killed outright (SIGKILL, an OOM kill, a closed CI job) before
it wrote summary.json: found and recorded by whoever reads the results next.

The runner writes runner.json into the run directory as soon as it makes it: its
process, host and a deadline. A run directory without summary.json is still being
run while that process lives (on this host) or, for a runner on another host, until
the deadline; this is the rule `runs prune` applies to a run's containers by their
labels (labels.abandoned_reason). Once the runner is gone, summary.json is written
once, never over one that exists: status `error`, error_msg KILLED_REASON, and the
grade of result.json kept under `grade` where the container had graded.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ssebench.host.processes import process_exists
from ssebench.results.directory import LATEST_LINK, RESULT_FILE, STATUSES, SUMMARY_FILE, read_json

RUNNER_FILE = "runner.json"
KILLED_REASON = "the runner was killed before it recorded the run"
# How long past the agent's timeout a runner on another host is taken to be alive:
# image builds before the run and grading after it.
DEADLINE_MARGIN_SECONDS = 3600


def _process_start(pid: int) -> str | None:
    """The start time of a process (clock ticks since boot, /proc/PID/stat field 22):
    with the PID, it tells a runner from a later process that reuses its number."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces.
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def write_runner_file(run_dir: Path, *, timeout: int, config: Mapping[str, Any]) -> None:
    """Say who runs the run in run_dir (the run directory the runner just made)."""
    pid = os.getpid()
    document = {
        "pid": pid,
        "pid_started": _process_start(pid),
        "host": socket.gethostname(),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "deadline": int(time.time()) + timeout + DEADLINE_MARGIN_SECONDS,
        "config": dict(config),
    }
    (run_dir / RUNNER_FILE).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def runner_alive(runner: Mapping[str, Any], *, now: float, host: str) -> bool:
    """Whether the runner of runner.json may still record its run."""
    deadline = runner.get("deadline")
    if isinstance(deadline, int) and deadline < now:
        return False
    pid = runner.get("pid")
    if runner.get("host") == host and isinstance(pid, int):
        if not process_exists(pid):
            return False
        started = runner.get("pid_started")
        return started is None or _process_start(pid) in (None, started)
    # Another host's runner: alive until its deadline (an unreadable one: alive).
    return True


def unrecorded_run_dirs(root: Path) -> list[Path]:
    """Run directories under root (<task>/<model>/<agent>/<run id>) without summary.json."""
    if not root.is_dir():
        return []
    found = []
    for run_dir in root.glob("*/*/*/*/"):
        if run_dir.name == LATEST_LINK or run_dir.is_symlink() or not run_dir.is_dir():
            continue
        if (run_dir / SUMMARY_FILE).exists() or (run_dir / SUMMARY_FILE).is_symlink():
            continue
        if (run_dir / RUNNER_FILE).exists() or (run_dir / RESULT_FILE).exists():
            found.append(run_dir)
    return sorted(found)


def killed_run_summary(run_dir: Path, runner: Mapping[str, Any] | None) -> dict[str, Any]:
    """summary.json of a run whose runner was killed: what its directory says."""
    config = dict(runner.get("config") or {}) if runner else {}
    task, model, agent = (run_dir.parents[index].name for index in (2, 1, 0))
    config.setdefault("task", task)
    config.setdefault("model", model)
    config.setdefault("agent", agent)
    result = read_json(run_dir / RESULT_FILE)
    grade = None
    if result is not None and result.get("status") in STATUSES:
        grade = {key: value for key, value in result.items() if key != "config"}
    return {
        "schema": 1,
        "run_id": run_dir.name,
        "task": config["task"],
        "config": config,
        "images": None,
        "status": "error",
        "error_msg": KILLED_REASON,
        "grade": grade,
        "exit_code": None,
        "stopped": False,
        "started_at": (runner or {}).get("started_at") or (grade or {}).get("started_at"),
        "finished_at": (grade or {}).get("finished_at"),
        "durations": {},
        "spend": None,
        "runner_killed": True,
    }


def _write_once(path: Path, data: Mapping[str, Any]) -> bool:
    """Write path whole or not at all, and never over a file that exists: a temporary
    file linked into place (a link fails on an existing name)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.killed")
    temporary.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    try:
        os.link(temporary, path)
    except FileExistsError:
        return False
    finally:
        temporary.unlink(missing_ok=True)
    return True


def record_killed_runs(root: Path, *, now: float | None = None) -> list[Path]:
    """Write summary.json for every run under root whose runner is gone without having
    recorded it; the run directories so recorded. Runs whose runner may be alive are
    left alone; a directory that cannot be written is left for a later reader."""
    now = time.time() if now is None else now
    host = socket.gethostname()
    recorded = []
    for run_dir in unrecorded_run_dirs(root):
        runner = read_json(run_dir / RUNNER_FILE)
        if runner is not None and runner_alive(runner, now=now, host=host):
            continue
        if runner is None and not _old_enough(run_dir, now):
            continue  # a runner of an older ssebench, or one that is making the directory
        try:
            if _write_once(run_dir / SUMMARY_FILE, killed_run_summary(run_dir, runner)):
                recorded.append(run_dir)
        except OSError:
            continue
    return recorded


def _old_enough(run_dir: Path, now: float) -> bool:
    """A run directory without runner.json: recorded once it is older than any run
    could be without one (a day), so that a live runner is never overtaken."""
    try:
        return now - run_dir.stat().st_mtime > 24 * 3600
    except OSError:
        return False
