"""`ssebench eval` over a matrix with repeated attempts on the real Docker daemon:
interrupted once and resumed, then shown by `ssebench report` as markdown and as an
HTML page opened in a real Chromium; and through the real LiteLLM proxy with a
scripted model, stopped part way by --max-spend."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CHROMIUM, PILOT_DATASET
from tests.docker.conftest import leftovers, new_run_id
from tests.docker.model_stack import ModelStack, ssebench

pytestmark = pytest.mark.docker
CHROMIUM_ARGUMENTS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def eval_argv(results: Path, prefix: str, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "ssebench.cli.main", "eval", "--dataset", str(PILOT_DATASET),
        "--jobs", "2", "--results", str(results), "--run-id-prefix", prefix, *extra,
    ]  # fmt: skip


def report_from(stdout: str) -> dict[str, Any]:
    last = stdout.strip().splitlines()[-1]
    assert last.startswith("report: "), stdout
    report: dict[str, Any] = json.loads(Path(last.removeprefix("report: ")).read_text())
    return report


def graded_summaries(results: Path) -> list[dict[str, Any]]:
    """Every recorded run under results that is a grade (not stopped)."""
    found = []
    for path in results.glob("*/*/*/*/summary.json"):
        if path.parent.is_symlink():
            continue  # the `latest` link
        summary = json.loads(path.read_text())
        if summary["status"] in ("passed", "failed") and not summary.get("stopped"):
            found.append(summary)
    return found


# Two tasks keep it short; the first is the one whose mini layer the model-run test builds.
MODEL_TASKS = ("py-semver-prerelease", "py-ini-quoted-comment")
# Three tasks, one of each language, make the matrix (3 x 2 agents x 2 attempts): enough
# to interrupt part way and resume, at half the runs of the whole pilot.
MATRIX_TASKS = ("c-ringbuf-readline", "go-jsonptr-escape", "py-ini-quoted-comment")
MATRIX = (
    "--agent", "reference", "--agent", "dummy", "--attempts", "2", "--tasks", *MATRIX_TASKS,
)  # fmt: skip


@pytest.mark.browser
def test_matrix_interrupted_resumed_and_reported(tmp_path: Path) -> None:
    results = tmp_path / "results"
    process = subprocess.Popen(
        eval_argv(results, new_run_id("evm"), *MATRIX),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ,
    )
    # Part way: once a few runs are graded, while others run or wait.
    deadline = time.monotonic() + 900
    while len(graded_summaries(results)) < 3:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no runs finished"
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=600)
    assert process.returncode == 130, stderr[-3000:]
    first = report_from(stdout)
    assert first["interrupted"] is True and first["counts"]["total"] == 12
    statuses = [run["status"] for run in first["runs"]]
    assert set(statuses) <= {"passed", "failed", "stopped", "not_run"}, first["runs"]
    graded_first = sum(status in ("passed", "failed") for status in statuses)
    assert 3 <= graded_first < 12, statuses
    assert leftovers() == []

    done = subprocess.run(
        eval_argv(results, new_run_id("evm2"), *MATRIX),
        capture_output=True, text=True, timeout=1800, env=os.environ,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = report_from(done.stdout)
    counts = report["counts"]
    assert (counts["total"], counts["passed"], counts["failed"]) == (12, 6, 6), counts
    assert counts["skipped"] == graded_first  # the first invocation's grades were kept
    reference, dummy = report["entries"]
    assert (reference["agent"], dummy["agent"]) == ("reference", "dummy")
    assert reference["resolved_rate"]["value"] == 1.0 and reference["counts"]["passed"] == 6
    assert dummy["resolved_rate"]["value"] == 0.0 and dummy["counts"]["failed"] == 6
    assert reference["pass_at_k"]["2"]["value"] == 1.0
    # None run twice: exactly one grade per task, agent and attempt on disk.
    graded = graded_summaries(results)
    assert len(graded) == 12
    keys = {(run["task"], run["agent"], run["attempt"]) for run in report["runs"]}
    assert keys == {(t, a, n) for t in MATRIX_TASKS for a in ("reference", "dummy") for n in (1, 2)}
    assert sorted(run["run_id"] for run in report["runs"]) == sorted(s["run_id"] for s in graded)
    assert leftovers() == []

    report_path = done.stdout.strip().splitlines()[-1].removeprefix("report: ")
    markdown = ssebench("report", report_path, env=dict(os.environ), timeout=60)
    assert markdown.returncode == 0, markdown.stderr
    assert "| reference | none | 100.0% (6/6) |" in markdown.stdout
    assert "| dummy | none | 0.0% (0/6) |" in markdown.stdout
    for task in MATRIX_TASKS:
        assert f"| {task} | PP (2/2) | FF (0/2) |" in markdown.stdout
    page = tmp_path / "report.html"
    html = ssebench(
        "report", report_path, "--format", "html", "--output", str(page),
        env=dict(os.environ), timeout=60,
    )  # fmt: skip
    assert html.returncode == 0, html.stderr
    screenshot = tmp_path / "report.png"
    shown = open_in_chromium(page, screenshot)
    assert shown["title"] == "ssebench evaluation"
    assert shown["bars"] == 2 and shown["widths"][0] > 0 and shown["widths"][1] == 0
    assert "reference" in shown["first_row"] and "100.0% (6/6)" in shown["first_row"]
    assert shown["task_rows"] == len(MATRIX_TASKS)
    assert shown["requests"] == [page.as_uri()]  # nothing else fetched
    assert screenshot.stat().st_size > 10_000
    print(f"report screenshot: {screenshot}")


def open_in_chromium(page: Path, screenshot: Path) -> dict[str, Any]:
    """Open the page in Chromium, note what it shows and fetches, keep a screenshot."""
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGUMENTS, headless=True
        )
        try:
            tab = browser.new_page(viewport={"width": 1400, "height": 900})
            requests: list[str] = []
            tab.on("request", lambda request: requests.append(request.url))
            tab.goto(page.as_uri())
            shown = {
                "title": tab.title(),
                "bars": tab.locator("svg rect").count(),
                "widths": [
                    float(tab.locator("svg rect").nth(n).get_attribute("width") or "nan")
                    for n in range(tab.locator("svg rect").count())
                ],
                "first_row": tab.locator("table").first.locator("tbody tr").first.inner_text(),
                "task_rows": tab.locator("table").nth(1).locator("tbody tr").count(),
                "requests": requests,
            }
            tab.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return shown


def test_max_spend_through_the_real_proxy_stops_part_way(
    model_stack: ModelStack, tmp_path: Path
) -> None:
    """The stack's proxy has no database, so runs use its master key and no run has a
    spend on record: --max-spend cannot be held, and the evaluation starts no more runs
    once the first model run ends. The rest are not_run, with that reason."""
    model = model_stack.script(
        "mini-gives-up", [{"content": "I cannot fix this; giving up.", "repeat": True}]
    )
    results = tmp_path / "results"
    done = ssebench(
        *eval_argv(results, new_run_id("evspend"), "--agent", "mini", "--model", model,
                   "--attempts", "2", "--tasks", *MODEL_TASKS, "--max-spend", "5",
                   "--timeout", "300")[3:],
        env=model_stack.env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = report_from(done.stdout)
    assert len(report["runs"]) == 4
    finished = [run for run in report["runs"] if run["status"] != "not_run"]
    # --jobs 2: two runs start together (which two depends on whose images are ready
    # first); once one ends with no spend on record, nothing more starts.
    assert 1 <= len(finished) <= 2, report["runs"]
    assert all(run["status"] == "failed" and run["spend"] is None for run in finished), finished
    not_run = [run for run in report["runs"] if run["status"] == "not_run"]
    assert len(not_run) == 4 - len(finished)
    reason = report["max_spend"]["stopped"]
    assert reason in {
        f"--max-spend 5 USD cannot be held: the spend of run {run['run_id']} is unknown "
        "(the proxy keeps no spend record)"
        for run in finished
    }
    assert all(run["error_msg"] == reason and run["run_dir"] is None for run in not_run)
    assert f"not started: {reason}" in done.stdout
    chats = [r for r in model_stack.requests(model) if str(r["path"]).endswith("/completions")]
    assert len(chats) >= len(finished), "the runs reached the scripted model through the proxy"
    markdown = ssebench("report", str(report_path_of(done.stdout)), env=model_stack.env)
    assert f"not_run: {reason} ({len(not_run)})" in markdown.stdout
    assert leftovers() == []


def report_path_of(stdout: str) -> Path:
    return Path(stdout.strip().splitlines()[-1].removeprefix("report: "))
