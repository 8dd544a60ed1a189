"""Two evaluations side by side: which tasks flipped, how the rates moved, and
McNemar's paired test on the tasks both evaluations graded.

A task counts as resolved in an evaluation when more than half of its graded
attempts passed (with one attempt: when it passed). docs/evaluation.md explains
the choice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ssebench.errors import UserError
from ssebench.reports.statistics import mcnemar


def _resolved(task: Mapping[str, Any]) -> bool | None:
    graded = int(task.get("graded") or 0)
    if graded == 0:
        return None
    return 2 * int(task.get("passed") or 0) > graded


def _pairs(
    first: Sequence[Mapping[str, Any]], second: Sequence[Mapping[str, Any]]
) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """The entries to compare: the same (agent, model) in both; or, when each report
    has one entry, those two (e.g. one agent with two models)."""
    by_label = {(entry["agent"], entry["model"]): entry for entry in second}
    pairs = [
        (entry, by_label[(entry["agent"], entry["model"])])
        for entry in first
        if (entry["agent"], entry["model"]) in by_label
    ]
    if not pairs and len(first) == 1 and len(second) == 1:
        pairs = [(first[0], second[0])]
    if not pairs:
        raise UserError(
            "The two reports share no agent and model to compare; compare reports of the "
            "same matrix, or of one entry each"
        )
    return pairs


def compare_entries(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    tasks_first = {task["task"]: _resolved(task) for task in first["tasks"]}
    tasks_second = {task["task"]: _resolved(task) for task in second["tasks"]}
    paired = [
        task
        for task in tasks_first
        if tasks_first[task] is not None and tasks_second.get(task) is not None
    ]
    gained = [task for task in paired if tasks_second[task] and not tasks_first[task]]
    lost = [task for task in paired if tasks_first[task] and not tasks_second[task]]
    test = mcnemar(len(lost), len(gained))
    rate_first = first["resolved_rate"]["value"]
    rate_second = second["resolved_rate"]["value"]
    return {
        "first": {"agent": first["agent"], "model": first["model"]},
        "second": {"agent": second["agent"], "model": second["model"]},
        "resolved_rate": {
            "first": rate_first,
            "second": rate_second,
            "difference": None
            if rate_first is None or rate_second is None
            else round(rate_second - rate_first, 6),
        },
        "paired_tasks": len(paired),
        "both_resolved": sum(1 for task in paired if tasks_first[task] and tasks_second[task]),
        "neither_resolved": sum(
            1 for task in paired if not tasks_first[task] and not tasks_second[task]
        ),
        "gained": gained,
        "lost": lost,
        "mcnemar": test.to_json(),
    }


def compare(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    """The comparison of two reports already read with load_report."""
    return {
        "command": "report",
        "comparison": [
            compare_entries(one, other)
            for one, other in _pairs(first["entries"], second["entries"])
        ],
    }
