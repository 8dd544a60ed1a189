"""A report, or the comparison of two, as one self-contained HTML page: inline CSS and
an inline SVG chart, no script and no external asset, so it can be mailed or
published as it is. Every text from the report is escaped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
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

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #1b1f24; }
table { border-collapse: collapse; margin: 1rem 0; }
th, td { border: 1px solid #c8ccd1; padding: 0.3rem 0.6rem; text-align: left; }
th { background: #eef1f4; }
td.outcome { font-family: ui-monospace, monospace; }
svg text { font-size: 12px; fill: #1b1f24; }
"""

BAR_COLOURS = ("#2f6fb0", "#d9822b")


def table(content: Table, *, outcome_columns: bool = False) -> str:
    head = "".join(f"<th>{escape(header)}</th>" for header in content.headers)
    body = []
    for row in content.rows:
        cells = []
        for index, cell in enumerate(row):
            kind = ' class="outcome"' if outcome_columns and index > 0 else ""
            cells.append(f"<td{kind}>{escape(cell)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def rate_chart(
    bars: Sequence[tuple[str, Sequence[tuple[float | None, list[float] | None]]]],
) -> str:
    """Horizontal bars of rates (0..1) with their 95% intervals as whiskers; each label
    has one bar per series."""
    label_width, plot_width, bar_height, gap = 220, 420, 16, 10
    series = max((len(values) for _, values in bars), default=1)
    group = series * bar_height + gap
    height = 30 + group * len(bars)
    parts = [
        '<svg xmlns="http://www.w3.org/2000/svg" role="img"'
        f' width="{label_width + plot_width + 60}"'
        f' height="{height}" aria-label="resolved rate with 95% intervals">'
    ]
    for tick in range(0, 101, 25):
        x = label_width + plot_width * tick / 100
        parts.append(f'<line x1="{x}" y1="0" x2="{x}" y2="{height - 20}" stroke="#e1e4e8"/>')
        parts.append(f'<text x="{x}" y="{height - 5}" text-anchor="middle">{tick}%</text>')
    for number, (label, values) in enumerate(bars):
        top = 5 + number * group
        parts.append(
            f'<text x="{label_width - 8}" y="{top + group / 2}" text-anchor="end">'
            f"{escape(label)}</text>"
        )
        for index, (value, bounds) in enumerate(values):
            y = top + index * bar_height
            width = 0.0 if value is None else plot_width * value
            colour = BAR_COLOURS[index % len(BAR_COLOURS)]
            parts.append(
                f'<rect x="{label_width}" y="{y}" width="{width:.1f}" height="{bar_height - 3}"'
                f' fill="{colour}"/>'
            )
            if bounds:
                low, high = (label_width + plot_width * bound for bound in bounds)
                middle = y + (bar_height - 3) / 2
                parts.append(
                    f'<line x1="{low:.1f}" y1="{middle}" x2="{high:.1f}" y2="{middle}"'
                    ' stroke="#1b1f24" stroke-width="1.5"/>'
                )
            text = "-" if value is None else f"{100 * value:.1f}%"
            parts.append(
                f'<text x="{label_width + plot_width + 6}" y="{y + bar_height - 4}">{text}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>"
        f"<body>{body}</body></html>\n"
    )


def report_html(report: Mapping[str, Any]) -> str:
    chart = rate_chart(
        [
            (
                f"{entry['agent']} / {entry['model']}",
                [(entry["resolved_rate"]["value"], entry["resolved_rate"]["ci95"])],
            )
            for entry in report["entries"]
        ]
    )
    parts = ["<h1>Evaluation</h1>"]
    parts += [f"<p>{escape(line)}</p>" for line in heading(report)]
    parts += ["<h2>Results</h2>", table(results_table(report))]
    parts += ["<h2>Resolved rate</h2>", f"<figure>{chart}</figure>"]
    reasons = not_run_reasons(report)
    if reasons:
        items = "".join(f"<li>{escape(reason)} ({count})</li>" for reason, count in reasons)
        parts += ["<p>Runs without a grade:</p>", f"<ul>{items}</ul>"]
    parts += ["<h2>Tasks</h2>", f"<p>Attempts in order: {escape(OUTCOME_LEGEND)}.</p>"]
    parts.append(table(tasks_table(report), outcome_columns=True))
    return page("ssebench evaluation", "\n".join(parts))


def comparison_html(
    first: Mapping[str, Any], second: Mapping[str, Any], comparison: Mapping[str, Any]
) -> str:
    def entry_of(report: Mapping[str, Any], label: Mapping[str, str]) -> Mapping[str, Any]:
        return next(
            entry
            for entry in report["entries"]
            if (entry["agent"], entry["model"]) == (label["agent"], label["model"])
        )

    bars = []
    for pair in comparison["comparison"]:
        one, other = entry_of(first, pair["first"]), entry_of(second, pair["second"])
        bars.append(
            (
                f"{pair['second']['agent']} / {pair['second']['model']}",
                [
                    (one["resolved_rate"]["value"], one["resolved_rate"]["ci95"]),
                    (other["resolved_rate"]["value"], other["resolved_rate"]["ci95"]),
                ],
            )
        )
    parts = [
        "<h1>Comparison of two evaluations</h1>",
        f"<p>First (blue): {escape(str(first.get('started_at', '?')))}; second (orange): "
        f"{escape(str(second.get('started_at', '?')))}.</p>",
        table(comparison_table(comparison)),
        f"<figure>{rate_chart(bars)}</figure>",
    ]
    for pair in comparison["comparison"]:
        parts.append(
            f"<p>Resolved now, not before: {escape(', '.join(pair['gained']) or 'none')}. "
            f"Resolved before, not now: {escape(', '.join(pair['lost']) or 'none')}.</p>"
        )
    return page("ssebench comparison", "\n".join(parts))
