"""`ssebench report`: an evaluation report for people (markdown or HTML), or the
comparison of two evaluations. See docs/evaluation.md."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ssebench.errors import UserError
from ssebench.reports.comparison import compare
from ssebench.reports.html import comparison_html, report_html
from ssebench.reports.markdown import comparison_markdown, report_markdown
from ssebench.reports.summary import load_report


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "report",
        help="show an evaluation report, or compare two",
        description="Render the JSON report of `ssebench eval` as markdown, a self-contained "
        "HTML page or JSON with its statistics; with two reports, compare them: the tasks "
        "that flipped, the rate differences and McNemar's paired test.",
    )
    parser.add_argument("report", metavar="REPORT.json", help="a report of `ssebench eval`")
    parser.add_argument(
        "second", nargs="?", metavar="REPORT2.json", help="a second report to compare with"
    )
    parser.add_argument("--format", choices=("md", "html", "json"), default="md")
    parser.add_argument("--output", "-o", metavar="FILE", help="write here (default: stdout)")
    parser.set_defaults(handler=report_command)


def render(arguments: argparse.Namespace) -> str:
    first = load_report(Path(arguments.report))
    if arguments.second is None:
        if arguments.format == "json":
            return json.dumps(first, indent=2) + "\n"
        return report_html(first) if arguments.format == "html" else report_markdown(first)
    second = load_report(Path(arguments.second))
    comparison = compare(first, second)
    if arguments.format == "json":
        return json.dumps(comparison, indent=2) + "\n"
    if arguments.format == "html":
        return comparison_html(first, second, comparison)
    return comparison_markdown(first, second, comparison)


def report_command(arguments: argparse.Namespace) -> int:
    text = render(arguments)
    if arguments.output is None:
        sys.stdout.write(text)
        return 0
    output = Path(arguments.output)
    if output.is_dir():
        raise UserError(f"--output {output} is a folder; name a file")
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as error:
        raise UserError(f"Cannot write {output}: {error.strerror}") from None
    print(output)
    return 0
