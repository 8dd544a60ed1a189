"""The evaluation view: the reports `ssebench eval` wrote in the results folder, one
report as a matrix of tasks x (agent, model), and two reports side by side.

A report is <results>/eval-<time>.json (docs/evaluation.md), or grade-<time>.json of
`ssebench grade` (the same schema). `ssebench eval` rewrites
it while it runs (in_progress true), so a page that polls follows the evaluation.

The statistics are those of `ssebench report` (reports.summary.upgrade recomputes them
from the runs, as for any report) and the comparison is reports.comparison's. A report
holds what agents influenced (task IDs, model names, error messages, run directories):
every value is passed through as data with a length cap, never as markup, and a run ID
that is not one (results.check_run_id) gets no link. The file is read without
following a link, and at most REPORT_BYTES of it.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ssebench.errors import UserError
from ssebench.evaluation.recorded import REWARD_KEYS
from ssebench.reports.comparison import compare, compare_entries
from ssebench.reports.summary import REPORT_COMMANDS, upgrade
from ssebench.results import files as run_files
from ssebench.results.directory import check_run_id

REPORT_NAME = re.compile(r"^(eval|grade)-[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.json$")
REPORT_BYTES = 32 * 1024 * 1024
MAX_REPORTS = 500
TEXT_LIMIT = 300
MESSAGE_LIMIT = 2000


class ReportNotFound(UserError):
    """No report of that name (the route answers 404)."""


def _text(value: Any, limit: int = TEXT_LIMIT) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _run_id(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        check_run_id(value)
    except UserError:
        return None
    return value


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _counts(value: Any) -> dict[str, int]:
    return {
        str(key): int(number)
        for key, number in _mapping(value).items()
        if isinstance(number, int) and not isinstance(number, bool)
    }


def _stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")


class Evaluations:
    """The reports of one results folder, parsed once per version of each file."""

    def __init__(self, results: Path) -> None:
        self.results = results
        self._cache: dict[str, tuple[tuple[int, int], dict[str, Any]]] = {}

    # -- reading ---------------------------------------------------------------------

    def names(self) -> list[tuple[str, os.stat_result]]:
        """The report files (regular files, not links), newest first."""
        found = []
        try:
            with os.scandir(self.results) as entries:
                for entry in entries:
                    if not REPORT_NAME.match(entry.name):
                        continue
                    try:
                        details = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISREG(details.st_mode):
                        found.append((entry.name, details))
        except OSError:
            return []
        found.sort(key=lambda item: (item[1].st_mtime_ns, item[0]), reverse=True)
        return found[:MAX_REPORTS]

    def load(self, name: str) -> tuple[dict[str, Any], float]:
        """(the report as schema 2 with its statistics, when its file last changed)."""
        if not REPORT_NAME.match(name):
            raise UserError("A report name is eval- or grade-<letters, digits, . _ ->.json")
        root = Path(os.path.realpath(self.results))
        try:
            details = os.stat(root / name, follow_symlinks=False)
            if not stat.S_ISREG(details.st_mode):
                raise FileNotFoundError(name)
            version = (details.st_mtime_ns, details.st_size)
            cached = self._cache.get(name)
            if cached is not None and cached[0] == version:
                return cached[1], details.st_mtime
            content = run_files.read_file(root, name, REPORT_BYTES)
        except FileNotFoundError:
            raise ReportNotFound(f"No evaluation report {name!r} in the results folder") from None
        except OSError as error:
            raise UserError(f"The report {name!r} is not readable: {error}") from None
        if content.truncated:
            raise UserError(f"The report {name!r} is larger than {REPORT_BYTES} bytes")
        try:
            data = json.loads(content.data.decode("utf-8"))
        except (ValueError, RecursionError):
            # Written atomically when finished; a half-written file is not expected.
            raise UserError(f"The report {name!r} is not JSON") from None
        if not isinstance(data, Mapping) or data.get("command") not in REPORT_COMMANDS:
            raise UserError(f"{name!r} is not a report of `ssebench eval` or `ssebench grade`")
        try:
            report = upgrade(data)
        except (UserError, TypeError, ValueError, KeyError) as error:
            raise UserError(f"The report {name!r} cannot be read: {error}") from None
        self._cache[name] = (version, report)
        return report, details.st_mtime

    # -- what the routes answer --------------------------------------------------------

    def listing(self) -> dict[str, Any]:
        reports = []
        for name, details in self.names():
            item: dict[str, Any] = {"name": name, "updated_at": _stamp(details.st_mtime)}
            try:
                report, _ = self.load(name)
            except UserError as error:
                item["problem"] = _text(str(error), MESSAGE_LIMIT)
                reports.append(item)
                continue
            item.update(_about(report))
            reports.append(item)
        return {"results": str(self.results), "reports": reports}

    def view(self, name: str) -> dict[str, Any]:
        report, changed = self.load(name)
        entries = [_mapping(entry) for entry in report.get("entries") or []]
        runs = [_mapping(run) for run in report.get("runs") or []]
        tasks: list[str] = []
        for run in runs:
            task = _text(run.get("task"))
            if task is not None and task not in tasks:
                tasks.append(task)
        columns = []
        cells: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for index, entry in enumerate(entries):
            key = (entry.get("agent"), entry.get("model"))
            mine = [run for run in runs if (run.get("agent"), run.get("model")) == key]
            for run in mine:
                task = _text(run.get("task")) or ""
                cells.setdefault((task, index), []).append(_attempt(run))
            columns.append(_column(index, entry, mine))
        rows = []
        for task in tasks:
            row_cells = []
            for index in range(len(columns)):
                attempts = sorted(cells.get((task, index), []), key=lambda item: item["attempt"])
                row_cells.append(_cell(attempts))
            rows.append({"task": task, "cells": row_cells})
        return {
            "name": name,
            **_about(report),
            "updated_at": _stamp(changed),
            "columns": columns,
            "rows": rows,
        }

    def comparison(
        self, first_name: str, second_name: str, first_entry: int | None, second_entry: int | None
    ) -> dict[str, Any]:
        first, _ = self.load(first_name)
        second, _ = self.load(second_name)
        first_entries = [_mapping(entry) for entry in first.get("entries") or []]
        second_entries = [_mapping(entry) for entry in second.get("entries") or []]
        if (first_entry is None) != (second_entry is None):
            raise UserError("Name both columns to compare (first_entry and second_entry), or none")
        if first_entry is not None and second_entry is not None:
            if not 0 <= first_entry < len(first_entries):
                raise UserError(f"first_entry must be from 0 to {len(first_entries) - 1}")
            if not 0 <= second_entry < len(second_entries):
                raise UserError(f"second_entry must be from 0 to {len(second_entries) - 1}")
            pairs = [(first_entries[first_entry], second_entries[second_entry])]
        else:
            found = compare(first, second)["comparison"]
            by_label = {_label(entry): entry for entry in second_entries}
            mine = {_label(entry): entry for entry in first_entries}
            pairs = [
                (mine[_label(item["first"])], by_label[_label(item["second"])]) for item in found
            ]
        return {
            "first": {"name": first_name, **_about(first)},
            "second": {"name": second_name, **_about(second)},
            "pairs": [_pair(one, other) for one, other in pairs],
        }


def _label(entry: Mapping[str, Any]) -> tuple[str, str]:
    return str(entry.get("agent")), str(entry.get("model"))


def _about(report: Mapping[str, Any]) -> dict[str, Any]:
    """What the list and a page's head show of a report."""
    dataset = _mapping(report.get("dataset"))
    spend = _mapping(report.get("max_spend"))
    return {
        "dataset": _text(dataset.get("name")),
        "dataset_version": _text(dataset.get("version")),
        "backend": _text(report.get("backend")),
        "started_at": _text(report.get("started_at")),
        "finished_at": _text(report.get("finished_at")),
        "in_progress": report.get("in_progress") is True,
        "interrupted": bool(report.get("interrupted")),
        "attempts": report.get("attempts"),
        "elapsed_seconds": _number(report.get("elapsed_seconds")),
        "spend": _number(report.get("spend")),
        "max_spend": _number(spend.get("usd")),
        "max_spend_stopped": _text(spend.get("stopped"), MESSAGE_LIMIT),
        "counts": _counts(report.get("counts")),
        "matrix": [
            {"agent": _text(item.get("agent")), "model": _text(item.get("model"))}
            for item in (_mapping(entry) for entry in report.get("matrix") or [])
        ],
    }


def _attempt(run: Mapping[str, Any]) -> dict[str, Any]:
    status = run.get("status")
    state = run.get("state")
    if status not in ("passed", "failed", "error", "stopped", "not_run"):
        # A run of a report in progress: queued, or on its way.
        status = None
    return {
        "attempt": int(run["attempt"]) if isinstance(run.get("attempt"), int) else 1,
        "status": status,
        "state": _text(state, 20) if isinstance(state, str) else None,
        "skipped": bool(run.get("skipped")),
        "run_id": _run_id(run.get("run_id")),
        "error_msg": _text(run.get("error_msg"), MESSAGE_LIMIT),
        "seconds": _number(run.get("seconds")),
        "spend": _number(run.get("spend")),
    }


def _cell(attempts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One task of one column: its attempts and one word for its colour. A task is
    passed when more than half its graded attempts passed (as `ssebench report`
    counts it resolved), failed when graded otherwise, error when none was graded but
    one ended in error, pending while its runs go."""
    statuses = [attempt["status"] for attempt in attempts]
    graded = sum(status in ("passed", "failed") for status in statuses)
    passed = statuses.count("passed")
    if graded:
        outcome = "passed" if 2 * passed > graded else "failed"
    elif "error" in statuses:
        outcome = "error"
    elif None in statuses:
        outcome = "pending"
    elif statuses:
        outcome = statuses[0] or "pending"
    else:
        outcome = None
    return {"outcome": outcome, "passed": passed, "graded": graded, "attempts": list(attempts)}


def _column(
    index: int, entry: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    spends = [number for run in runs if (number := _number(run.get("spend"))) is not None]
    seconds = [
        number
        for run in runs
        if not run.get("skipped") and (number := _number(run.get("seconds"))) is not None
    ]
    return {
        "index": index,
        "agent": _text(entry.get("agent")),
        "model": _text(entry.get("model")),
        "counts": _counts(entry.get("counts")),
        "resolved_rate": _statistic(entry.get("resolved_rate")),
        "error_rate": _statistic(entry.get("error_rate")),
        "pass_at_k": {
            str(k): _statistic(value) for k, value in _mapping(entry.get("pass_at_k")).items()
        },
        "mean_spend_per_task": _statistic(entry.get("mean_spend_per_task")),
        "mean_seconds_per_task": _statistic(entry.get("mean_seconds_per_task")),
        "mean_reward_per_task": _rewards(entry.get("mean_reward_per_task")),
        "spend": round(sum(spends), 6) if spends else None,
        "seconds": round(sum(seconds), 3) if seconds else None,
    }


def _rewards(value: Any) -> dict[str, dict[str, Any]]:
    """The mean reward per task of a column graded by rewards (docs/harbor.md), by key:
    at most REWARD_KEYS keys, each a short text, with a finite mean; {} for none."""
    found: dict[str, dict[str, Any]] = {}
    for key, statistic in list(_mapping(value).items())[:REWARD_KEYS]:
        mean = _number(_mapping(statistic).get("value"))
        if isinstance(key, str) and mean is not None and math.isfinite(mean):
            found[_text(key, 64) or ""] = _statistic(statistic)
    return found


def _statistic(value: Any) -> dict[str, Any]:
    data = _mapping(value)
    interval = data.get("ci95")
    low = high = None
    if isinstance(interval, Sequence) and len(interval) == 2:
        low, high = _number(interval[0]), _number(interval[1])
    elif isinstance(interval, Mapping):
        low, high = _number(interval.get("low")), _number(interval.get("high"))
    return {
        "value": _number(data.get("value")),
        "count": data.get("count") if isinstance(data.get("count"), int) else None,
        "of": data.get("of") if isinstance(data.get("of"), int) else None,
        "tasks": data.get("tasks") if isinstance(data.get("tasks"), int) else None,
        "ci95": None if low is None or high is None else [low, high],
    }


def _resolved(task: Mapping[str, Any]) -> bool | None:
    graded = int(task.get("graded") or 0)
    return None if graded == 0 else 2 * int(task.get("passed") or 0) > graded


def _pair(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    result = compare_entries(first, second)
    gained, lost = set(result["gained"]), set(result["lost"])
    mine = {str(task.get("task")): task for task in first.get("tasks") or []}
    theirs = {str(task.get("task")): task for task in second.get("tasks") or []}
    tasks = []
    for task in [*mine, *(name for name in theirs if name not in mine)]:
        one, other = mine.get(task, {}), theirs.get(task, {})
        tasks.append(
            {
                "task": _text(task),
                "flip": "gained" if task in gained else "lost" if task in lost else None,
                "first": _side(one),
                "second": _side(other),
            }
        )
    rate = _mapping(result.get("resolved_rate"))
    test = _mapping(result.get("mcnemar"))
    return {
        "first": {"agent": _text(first.get("agent")), "model": _text(first.get("model"))},
        "second": {"agent": _text(second.get("agent")), "model": _text(second.get("model"))},
        "first_rate": _statistic(first.get("resolved_rate")),
        "second_rate": _statistic(second.get("resolved_rate")),
        "difference": _number(rate.get("difference")),
        "paired_tasks": result["paired_tasks"],
        "both_resolved": result["both_resolved"],
        "neither_resolved": result["neither_resolved"],
        "gained": [_text(task) for task in result["gained"]],
        "lost": [_text(task) for task in result["lost"]],
        "p_exact": _number(test.get("exact_p")),
        "tasks": tasks,
    }


def _side(task: Mapping[str, Any]) -> dict[str, Any] | None:
    if not task:
        return None
    resolved = _resolved(task)
    return {
        "passed": int(task.get("passed") or 0),
        "graded": int(task.get("graded") or 0),
        "outcome": None if resolved is None else "passed" if resolved else "failed",
        "attempts": [_attempt(_mapping(attempt)) for attempt in task.get("attempts") or []],
    }
