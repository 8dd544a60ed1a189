"""The statistics of each matrix entry of an evaluation, and reading a report file.

A report of schema 1 (one agent, one model, one attempt per task, a "tasks" list) is
read as a schema 2 report with one entry, so every report can be shown and compared.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ssebench.errors import UserError
from ssebench.reports.statistics import bootstrap, mean, pass_at_k, wilson

SCHEMAS = (1, 2)
STATUSES = ("passed", "failed", "error", "stopped", "not_run")


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _rate(part: int, whole: int) -> dict[str, Any]:
    interval = wilson(part, whole)
    return {
        "value": None if whole == 0 else round(part / whole, 6),
        "count": part,
        "of": whole,
        "ci95": None if interval is None else interval.to_json(),
    }


def _mean_with_interval(values: Sequence[float]) -> dict[str, Any]:
    value = mean(values)
    interval = bootstrap(values)
    return {
        "value": None if value is None else round(value, 6),
        "tasks": len(values),
        "ci95": None if interval is None else interval.to_json(),
    }


def summarize_entry(runs: Sequence[Mapping[str, Any]], attempts: int) -> dict[str, Any]:
    """Counts and statistics of one entry's runs (dicts as in the report's "runs")."""
    counts = {status: sum(run.get("status") == status for run in runs) for status in STATUSES}
    counts["total"] = len(runs)
    counts["skipped"] = sum(bool(run.get("skipped")) for run in runs)
    graded = counts["passed"] + counts["failed"]
    finished = graded + counts["error"]
    by_task: dict[str, list[Mapping[str, Any]]] = {}
    for run in runs:
        by_task.setdefault(str(run.get("task")), []).append(run)
    tasks = []
    for task, task_runs in by_task.items():
        ordered = sorted(task_runs, key=lambda run: int(run.get("attempt") or 1))
        tasks.append(
            {
                "task": task,
                "graded": sum(run.get("status") in ("passed", "failed") for run in ordered),
                "passed": sum(run.get("status") == "passed" for run in ordered),
                "attempts": [
                    {
                        "attempt": int(run.get("attempt") or 1),
                        "status": run.get("status"),
                        "run_id": run.get("run_id"),
                        "error_msg": run.get("error_msg"),
                        "seconds": run.get("seconds"),
                        "spend": run.get("spend"),
                        **({"reward": run["reward"]} if run.get("reward") is not None else {}),
                    }
                    for run in ordered
                ],
            }
        )
    pass_at: dict[str, Any] = {}
    for k in range(1, attempts + 1):
        # A task counts for pass@k once it has k graded attempts.
        values = [
            pass_at_k(task["graded"], task["passed"], k) for task in tasks if task["graded"] >= k
        ]
        pass_at[str(k)] = _mean_with_interval(values)
    spends = _per_task_means(by_task.values(), "spend")
    durations = _per_task_means(
        ([run for run in task_runs if not run.get("skipped")] for task_runs in by_task.values()),
        "seconds",
    )
    rewards = _reward_means(by_task.values())
    return {
        "counts": counts,
        "resolved_rate": _rate(counts["passed"], graded),
        "error_rate": _rate(counts["error"], finished),
        "pass_at_k": pass_at,
        "mean_spend_per_task": _mean_with_interval(spends),
        "mean_seconds_per_task": _mean_with_interval(durations),
        **({"mean_reward_per_task": rewards} if rewards else {}),
        "tasks": tasks,
    }


def _reward_means(groups: Iterable[Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Tasks graded by a reward (docs/harbor.md): for each key of their rewards, the
    mean over tasks of its mean over the task's runs, with its interval."""
    per_key: dict[str, list[float]] = {}
    for runs in groups:
        values: dict[str, list[float]] = {}
        for run in runs:
            reward = run.get("reward")
            if not isinstance(reward, Mapping):
                continue
            for key, value in reward.items():
                if (number := _number(value)) is not None:
                    values.setdefault(str(key), []).append(number)
        for key, numbers in values.items():
            per_key.setdefault(key, []).append(sum(numbers) / len(numbers))
    return {key: _mean_with_interval(means) for key, means in sorted(per_key.items())}


def _per_task_means(groups: Iterable[Sequence[Mapping[str, Any]]], field: str) -> list[float]:
    """Per task: the mean of field over its runs that have it."""
    found = []
    for runs in groups:
        values = [number for run in runs if (number := _number(run.get(field))) is not None]
        if values:
            found.append(sum(values) / len(values))
    return found


def summarize_entries(
    runs: Sequence[Mapping[str, Any]], matrix: Sequence[tuple[str, str]], attempts: int
) -> list[dict[str, Any]]:
    """One summary per matrix entry (agent, model label), in the matrix's order."""
    return [
        {
            "agent": agent,
            "model": model,
            **summarize_entry(
                [run for run in runs if (run.get("agent"), run.get("model")) == (agent, model)],
                attempts,
            ),
        }
        for agent, model in matrix
    ]


def upgrade(report: Mapping[str, Any]) -> dict[str, Any]:
    """A report of either schema as schema 2, its statistics computed from its runs."""
    schema = report.get("schema")
    if schema == 1:
        agent, model = str(report.get("agent")), str(report.get("model"))
        runs = [
            {**task, "agent": agent, "model": model, "attempt": 1}
            for task in report.get("tasks") or []
            if isinstance(task, Mapping)
        ]
        upgraded: dict[str, Any] = {
            **{key: value for key, value in report.items() if key not in ("tasks",)},
            "schema": 2,
            "upgraded_from": 1,
            "matrix": [{"agent": agent, "model": model}],
            "attempts": 1,
            "runs": runs,
        }
    elif schema == 2:
        upgraded = dict(report)
    else:
        raise UserError(f"Unknown report schema {schema!r} (known: {SCHEMAS})")
    runs = [dict(run) for run in upgraded.get("runs") or [] if isinstance(run, Mapping)]
    matrix = [
        (str(item.get("agent")), str(item.get("model")))
        for item in upgraded.get("matrix") or []
        if isinstance(item, Mapping)
    ]
    attempts = upgraded.get("attempts")
    if not isinstance(attempts, int) or attempts < 1:
        raise UserError("The report's attempts must be a positive number")
    upgraded["runs"] = runs
    upgraded["entries"] = summarize_entries(runs, matrix, attempts)
    return upgraded


# The commands whose reports are evaluation reports (schema 2): eval, and grade, whose
# runs are an evaluation of the given-patch agent with the predictions' model.
REPORT_COMMANDS = ("eval", "grade")


def load_report(path: Path) -> dict[str, Any]:
    """A report file of either schema, as schema 2; UserError when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"No report at {path}: name the JSON file `ssebench eval` wrote") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserError(f"{path} is not a readable JSON report: {error}") from None
    if not isinstance(data, Mapping) or data.get("command") not in REPORT_COMMANDS:
        raise UserError(f"{path} is not a report of `ssebench eval` or `ssebench grade`")
    try:
        return upgrade(data)
    except UserError as error:
        raise UserError(f"{path}: {error}") from None
