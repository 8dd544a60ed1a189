"""`ssebench report`: a report of `ssebench eval` (run for real with the fake backend) as
markdown, HTML and JSON; reports of schema 1; the comparison of two evaluations."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_eval import TINY_TASKS, eval_arguments, report_of, ssebench


@pytest.fixture(scope="module")
def matrix_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("report") / "results"
    arguments = eval_arguments(results, "reference", "--agent", "dummy", "--attempts", "2")
    done = ssebench(*arguments, "--jobs", "2")
    assert done.returncode == 0, done.stderr
    path = Path(done.stdout.strip().splitlines()[-1].removeprefix("report: "))
    assert report_of(done)["counts"]["total"] == 8
    return path


def schema_1_report(path: Path, statuses: dict[str, str], **extra: Any) -> Path:
    """A report as `ssebench eval` wrote it before schema 2: one agent, one attempt."""
    report = {
        "schema": 1,
        "command": "eval",
        "dataset": {"name": "made-up", "version": "1", "path": "/nowhere"},
        "agent": "mini",
        "model": "some-model",
        "backend": "docker",
        "started_at": "2026-01-01T00:00:00Z",
        "elapsed_seconds": 12.5,
        "interrupted": False,
        "counts": {},
        "spend": None,
        "tasks": [
            {
                "task": task,
                "status": status,
                "skipped": False,
                "run_id": f"r-{task}",
                "error_msg": None,
                "seconds": 2.0,
                "spend": 0.01,
            }
            for task, status in statuses.items()
        ],
        **extra,
    }
    path.write_text(json.dumps(report))
    return path


def report(*arguments: str) -> str:
    done = ssebench("report", *arguments)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_markdown_shows_each_pair_and_each_task(matrix_report: Path) -> None:
    text = report(str(matrix_report))
    assert text.startswith("# Evaluation\n")
    assert "| Agent | Model | Resolved | 95% CI (Wilson) | pass@1 |" in text
    assert "| reference | none | 100.0% (4/4) | 51.0-100.0% | 100.0% |" in text
    assert "| dummy | none | 0.0% (0/4) | 0.0-49.0% | 0.0% |" in text
    for task in TINY_TASKS:
        assert f"| {task} | PP (2/2) | FF (0/2) |" in text


def test_json_holds_the_statistics(matrix_report: Path) -> None:
    data = json.loads(report(str(matrix_report), "--format", "json"))
    reference, dummy = data["entries"]
    assert reference["pass_at_k"]["2"]["value"] == 1.0
    assert dummy["resolved_rate"]["ci95"] == pytest.approx([0.0, 0.489891], abs=1e-6)
    assert dummy["error_rate"]["value"] == 0.0


def test_html_is_one_self_contained_page(matrix_report: Path, tmp_path: Path) -> None:
    output = tmp_path / "report.html"
    done = ssebench("report", str(matrix_report), "--format", "html", "--output", str(output))
    assert done.returncode == 0 and done.stdout.strip() == str(output)
    html = output.read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert "<svg" in html and "<table>" in html and "reference / none" in html
    # No script and nothing fetched: the only URL is the SVG namespace.
    assert "<script" not in html
    assert re.findall(r"https?://[^\"' ]+", html) == ["http://www.w3.org/2000/svg"]
    assert not re.search(r"\b(src|href)=", html)


def test_a_schema_1_report_is_read(tmp_path: Path) -> None:
    path = schema_1_report(tmp_path / "old.json", {"a": "passed", "b": "failed", "c": "error"})
    data = json.loads(report(str(path), "--format", "json"))
    assert data["upgraded_from"] == 1 and data["attempts"] == 1
    (entry,) = data["entries"]
    assert (entry["agent"], entry["model"]) == ("mini", "some-model")
    assert entry["resolved_rate"]["count"] == 1 and entry["resolved_rate"]["of"] == 2
    assert entry["error_rate"]["count"] == 1 and entry["error_rate"]["of"] == 3
    assert entry["mean_spend_per_task"]["value"] == pytest.approx(0.01)


def test_text_from_the_report_is_escaped_in_html(tmp_path: Path) -> None:
    path = schema_1_report(tmp_path / "old.json", {"a": "stopped"})
    data = json.loads(path.read_text())
    data["tasks"][0]["error_msg"] = "<script>alert(1)</script>"
    data["agent"] = "<b>agent</b>"
    path.write_text(json.dumps(data))
    html = report(str(path), "--format", "html")
    assert "<script" not in html and "<b>agent" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_comparison_lists_flips_and_the_paired_test(tmp_path: Path) -> None:
    tasks = [f"t{number}" for number in range(10)]
    first = schema_1_report(
        tmp_path / "first.json", {t: "passed" if t in tasks[:4] else "failed" for t in tasks}
    )
    second = schema_1_report(
        tmp_path / "second.json",
        {t: "passed" if t in tasks[2:] else "failed" for t in [*tasks, "only-here"]},
    )
    data = json.loads(report(str(first), str(second), "--format", "json"))
    (pair,) = data["comparison"]
    assert pair["paired_tasks"] == 10  # "only-here" ran in the second only
    assert pair["lost"] == ["t0", "t1"]
    assert pair["gained"] == ["t4", "t5", "t6", "t7", "t8", "t9"]
    assert (pair["both_resolved"], pair["neither_resolved"]) == (2, 0)
    # 2 * P(X <= 2), X ~ Binomial(8, 1/2) = 2 * (1 + 8 + 28) / 256
    assert pair["mcnemar"]["exact_p"] == pytest.approx(74 / 256, abs=1e-6)
    assert pair["resolved_rate"]["difference"] == pytest.approx(8 / 11 - 4 / 10, abs=1e-6)
    markdown = report(str(first), str(second))
    assert "- resolved now, not before: t4, t5, t6, t7, t8, t9" in markdown
    assert "| 0.2891 |" in markdown
    html = report(str(first), str(second), "--format", "html")
    assert "Resolved before, not now: t0, t1." in html
    # One bar per evaluation, as long as its rate (the chart is 420 wide at 100%).
    widths = re.findall(r'<rect [^>]*width="([0-9.]+)"', html)
    assert widths == [f"{420 * 4 / 10:.1f}", f"{420 * 8 / 11:.1f}"]


def test_comparing_reports_with_nothing_in_common_is_one_line(
    matrix_report: Path, tmp_path: Path
) -> None:
    other = schema_1_report(tmp_path / "old.json", {"a": "passed"})
    done = ssebench("report", str(matrix_report), str(other))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "ssebench: error: The two reports share no agent and model to compare; compare "
        "reports of the same matrix, or of one entry each"
    ]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "No report at"),
        ("{not json", "is not a readable JSON report"),
        ('{"command": "run"}', "is not a report of `ssebench eval`"),
        ('{"command": "eval", "schema": 9}', "Unknown report schema 9"),
    ],
)
def test_bad_report_is_one_line(tmp_path: Path, content: str | None, expected: str) -> None:
    path = tmp_path / "report.json"
    if content is not None:
        path.write_text(content)
    done = ssebench("report", str(path))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], lines
