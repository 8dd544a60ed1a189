"""A report, or the comparison of two, as a markdown document."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ssebench.reports.tables import (
    OUTCOME_LEGEND,
    Table,
    comparison_table,
    heading,
    not_run_reasons,
    results_table,
    tasks_table,
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(content: Table) -> str:
    lines = [
        "| " + " | ".join(_cell(header) for header in content.headers) + " |",
        "|" + "|".join("---" for _ in content.headers) + "|",
    ]
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in content.rows]
    return "\n".join(lines)


def report_markdown(report: Mapping[str, Any]) -> str:
    parts = [
        "# Evaluation",
        "",
        *heading(report),
        "",
        "## Results",
        "",
        table(results_table(report)),
    ]
    reasons = not_run_reasons(report)
    if reasons:
        parts += ["", "Runs without a grade:", ""]
        parts += [f"- {_cell(reason)} ({count})" for reason, count in reasons]
    parts += ["", "## Tasks", "", f"Attempts in order: {OUTCOME_LEGEND}.", ""]
    parts.append(table(tasks_table(report)))
    return "\n".join(parts) + "\n"


def comparison_markdown(
    first: Mapping[str, Any], second: Mapping[str, Any], comparison: Mapping[str, Any]
) -> str:
    parts = [
        "# Comparison of two evaluations",
        "",
        f"First: {first.get('started_at', '?')}; second: {second.get('started_at', '?')}.",
        "",
        table(comparison_table(comparison)),
    ]
    for pair in comparison["comparison"]:
        label = f"{pair['second']['agent']} / {pair['second']['model']}"
        parts += ["", f"## Flipped tasks: {label}", ""]
        parts.append(f"- resolved now, not before: {', '.join(pair['gained']) or 'none'}")
        parts.append(f"- resolved before, not now: {', '.join(pair['lost']) or 'none'}")
    return "\n".join(parts) + "\n"
