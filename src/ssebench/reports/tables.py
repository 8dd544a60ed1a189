"""The tables of a report, as text cells, shared by the markdown and HTML renderings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# One letter per attempt in the task table.
OUTCOME_LETTERS = {"passed": "P", "failed": "F", "error": "E", "stopped": "S", "not_run": "-"}
OUTCOME_LEGEND = "P passed, F failed, E error (no grade), S stopped, - not run"


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: Sequence[tuple[str, ...]]


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def interval(statistic: Mapping[str, Any]) -> str:
    """A rate's 95% interval in percent."""
    bounds = statistic.get("ci95")
    if not bounds:
        return "-"
    low, high = bounds
    return f"{100 * low:.1f}-{100 * high:.1f}%"


def money(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def rewards(means: Mapping[str, Any]) -> str:
    """Mean rewards by key: "0.83", or "correctness 1.00, performance 0.50"."""
    shown = [(key, statistic.get("value")) for key, statistic in means.items()]
    if not shown:
        return "-"
    if [key for key, _ in shown] == ["reward"]:
        return "-" if shown[0][1] is None else f"{shown[0][1]:.2f}"
    return ", ".join(f"{key} {'-' if value is None else f'{value:.2f}'}" for key, value in shown)


def results_table(report: Mapping[str, Any]) -> Table:
    attempts = int(report["attempts"])
    headers = ["Agent", "Model", "Resolved", "95% CI (Wilson)", "pass@1", "95% CI (bootstrap)"]
    if attempts > 1:
        headers += [f"pass@{attempts}", "95% CI (bootstrap)"]
    headers += ["Errors", "Runs", "Not run", "Spend / task", "Time / task"]
    # Tasks graded by a reward (docs/harbor.md): the mean reward per task, by key.
    rewarded = any(entry.get("mean_reward_per_task") for entry in report["entries"])
    if rewarded:
        headers.append("Reward / task")
    rows = []
    for entry in report["entries"]:
        counts = entry["counts"]
        rate = entry["resolved_rate"]
        first = entry["pass_at_k"]["1"]
        row = [
            entry["agent"],
            entry["model"],
            f"{percent(rate['value'])} ({rate['count']}/{rate['of']})",
            interval(rate),
            percent(first["value"]),
            interval(first),
        ]
        if attempts > 1:
            last = entry["pass_at_k"][str(attempts)]
            row += [percent(last["value"]), interval(last)]
        errors = entry["error_rate"]
        row += [
            f"{percent(errors['value'])} ({errors['count']}/{errors['of']})",
            str(counts["total"]),
            str(counts["not_run"] + counts["stopped"]),
            money(entry["mean_spend_per_task"]["value"]),
            seconds(entry["mean_seconds_per_task"]["value"]),
        ]
        if rewarded:
            row.append(rewards(entry.get("mean_reward_per_task") or {}))
        rows.append(tuple(row))
    return Table(tuple(headers), rows)


def tasks_table(report: Mapping[str, Any]) -> Table:
    entries = report["entries"]
    headers = ("Task", *(f"{entry['agent']} / {entry['model']}" for entry in entries))
    by_entry = [{task["task"]: task for task in entry["tasks"]} for entry in entries]
    names = list(dict.fromkeys(name for tasks in by_entry for name in tasks))
    rows = []
    for name in names:
        cells = [name]
        for tasks in by_entry:
            task = tasks.get(name)
            if task is None:
                cells.append("")
                continue
            letters = "".join(
                OUTCOME_LETTERS.get(str(attempt["status"]), "?") for attempt in task["attempts"]
            )
            cells.append(f"{letters} ({task['passed']}/{task['graded']})")
        rows.append(tuple(cells))
    return Table(headers, rows)


def not_run_reasons(report: Mapping[str, Any]) -> list[tuple[str, int]]:
    """Why runs did not run or were stopped, with how many."""
    reasons: dict[str, int] = {}
    for run in report["runs"]:
        if run.get("status") in ("not_run", "stopped"):
            reason = f"{run['status']}: {run.get('error_msg') or 'the evaluation was interrupted'}"
            reasons[reason] = reasons.get(reason, 0) + 1
    return sorted(reasons.items())


def comparison_table(comparison: Mapping[str, Any]) -> Table:
    headers = (
        "First",
        "Second",
        "Resolved (first)",
        "Resolved (second)",
        "Difference",
        "Paired tasks",
        "Gained",
        "Lost",
        "McNemar exact p",
        "McNemar chi2 p (corrected)",
    )
    rows = []
    for pair in comparison["comparison"]:
        rate = pair["resolved_rate"]
        difference = rate["difference"]
        test = pair["mcnemar"]
        rows.append(
            (
                f"{pair['first']['agent']} / {pair['first']['model']}",
                f"{pair['second']['agent']} / {pair['second']['model']}",
                percent(rate["first"]),
                percent(rate["second"]),
                "-" if difference is None else f"{100 * difference:+.1f} points",
                str(pair["paired_tasks"]),
                str(len(pair["gained"])),
                str(len(pair["lost"])),
                f"{test['exact_p']:.4f}",
                f"{test['chi2_corrected_p']:.4f}",
            )
        )
    return Table(headers, rows)


def heading(report: Mapping[str, Any]) -> list[str]:
    """The lines that say what was evaluated, and how it ended."""
    dataset = report.get("dataset") or {}
    lines = [
        f"Dataset {dataset.get('name', '?')} (version {dataset.get('version', '?')}), "
        f"backend {report.get('backend', '?')}, {report['attempts']} attempt(s) per task, "
        f"started {report.get('started_at', '?')}, {report.get('elapsed_seconds', 0):.0f} s.",
    ]
    if report.get("interrupted"):
        lines.append("The evaluation was interrupted: some runs are stopped or not run.")
    limit = report.get("max_spend")
    if isinstance(limit, Mapping) and limit.get("stopped"):
        lines.append(f"Stopped starting runs: {limit['stopped']}.")
    return lines
