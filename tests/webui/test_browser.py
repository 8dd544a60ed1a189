"""The web UI in headless Chromium against real Docker runs: the list, a finished run,
a live run that changes under the page, a launch from the page, and the terminal."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.cli import run_arguments, ssebench
from tests.conftest import PILOT_DATASET
from tests.docker.conftest import new_run_id
from tests.polling import wait_until
from tests.webui.conftest import TASK, KeptRun, Server

pytestmark = [pytest.mark.browser, pytest.mark.docker]


def record(results: Path, agent: str) -> str:
    """A finished run of the pilot task, recorded under results (no container left)."""
    run_id = new_run_id(f"webui-{agent}")
    done = ssebench(*run_arguments(PILOT_DATASET, TASK, agent, run_id, results), timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return run_id


@pytest.fixture(scope="module")
def finished_runs(server: Server) -> dict[str, str]:
    return {
        "passed": record(server.results, "reference"),
        "failed": record(server.results, "dummy"),
    }


def row(page: Any, run_id: str) -> Any:
    return page.locator(f"tr[data-run-id='{run_id}']")


def test_the_list_shows_a_passed_and_a_failed_run(
    page: Any, finished_runs: dict[str, str], artifacts: Path
) -> None:
    for status, run_id in finished_runs.items():
        row(page, run_id).locator(f".badge.{status}").wait_for()
        assert row(page, run_id).locator(".badge.finished").count() == 1
    failed = row(page, finished_runs["failed"])
    assert "Hidden test failed" in failed.inner_text() and "dummy" in failed.inner_text()
    page.screenshot(path=str(artifacts / "runs-list.png"))

    page.select_option("select[data-filter=status]", "failed")
    row(page, finished_runs["passed"]).wait_for(state="detached")
    assert row(page, finished_runs["failed"]).count() == 1
    page.fill("input[type=search]", "no-such-run-anywhere")
    page.locator("td.empty").wait_for()


def test_a_finished_run_shows_grade_dialog_diff_and_logs(
    page: Any, finished_runs: dict[str, str], artifacts: Path
) -> None:
    row(page, finished_runs["failed"]).click()
    page.locator("[data-failure]").wait_for()
    assert page.locator("[data-failure]").inner_text() == "Hidden test failed"
    page.locator(".event.graded").wait_for()
    assert page.locator(".event.message").first.inner_text().count("NOTES.txt") == 1
    page.screenshot(path=str(artifacts / "run-finished-dialog.png"), full_page=True)

    page.click("[data-tab=diff]")
    page.locator(".diff-file-name:has-text('NOTES.txt')").wait_for()
    assert page.locator("table.diff tr.add").count() >= 1
    page.screenshot(path=str(artifacts / "run-finished-diff.png"), full_page=True)

    page.click("[data-tab=logs]")
    page.locator("[data-source='evaluator.log']").click()
    page.locator("[data-log]:has-text('hidden_test')").wait_for()
    page.screenshot(path=str(artifacts / "run-finished-logs.png"), full_page=True)

    page.click("[data-tab=settings]")
    page.locator("dd:has-text('restricted')").first.wait_for()
    page.screenshot(path=str(artifacts / "run-finished-settings.png"), full_page=True)


def daemon_url(run_id: str) -> str:
    done = ssebench("runs", "endpoint", run_id, "4263", timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_live_run_dialog_and_diff_follow_the_run(
    page: Any, kept_sleeper: KeptRun, artifacts: Path
) -> None:
    run_id = kept_sleeper.run_id
    row(page, run_id).locator(".badge.running").wait_for(timeout=60_000)
    page.screenshot(path=str(artifacts / "runs-list-live.png"))
    row(page, run_id).click()
    page.locator(".live-note:has-text('Live')").wait_for()
    page.locator(".event.agent_started").wait_for()

    # The agent posts to its daemon, as an agent does: the open page picks it up.
    message = f"webui live message {run_id}"
    post = urllib.request.Request(
        daemon_url(run_id) + "/dialog",
        data=json.dumps({"type": "message", "role": "agent", "text": message}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(post, timeout=10) as answer:
        assert answer.status == 201
    page.locator(f".event.message:has-text('{message}')").wait_for()

    page.click("[data-tab=diff]")
    page.locator("[data-diff] .empty").wait_for()
    change = ssebench(
        "runs",
        "exec",
        run_id,
        "--user",
        "model",
        "--",
        "sh",
        "-c",
        "echo 'live edit from the web UI test' > /src/semver/LIVE.txt",
        timeout=60,
    )
    assert change.returncode == 0, change.stderr
    page.locator(".diff-file-name:has-text('LIVE.txt')").wait_for()
    page.locator("table.diff td:has-text('live edit from the web UI test')").wait_for()
    page.screenshot(path=str(artifacts / "run-live-diff.png"), full_page=True)

    page.click("[data-tab=dialog]")
    page.locator(f".event.message:has-text('{message}')").wait_for()
    page.screenshot(path=str(artifacts / "run-live-dialog.png"), full_page=True)

    page.click("[data-tab=logs]")
    page.locator("[data-source=container]").wait_for()
    page.locator("[data-log]:has-text('sleeper: sleeping')").wait_for()


def test_the_terminal_runs_commands_as_model(
    page: Any, kept_sleeper: KeptRun, artifacts: Path
) -> None:
    row(page, kept_sleeper.run_id).click()
    page.locator("[data-tab=terminal]").click()
    page.select_option("select[aria-label=user]", "model")
    page.click("text=Connect")
    page.locator("text=connected as model").wait_for()
    # The shell starts in the task's tree; typing before its prompt would echo twice.
    page.locator(".xterm-rows:has-text('model@')").wait_for()
    page.locator(".xterm-rows:has-text('/src/semver')").wait_for()
    page.locator(".xterm-helper-textarea").focus()
    page.keyboard.type("id -un; echo marker-$((6*7))\n")
    # The page's CSP forbids eval, so waits are locators, not wait_for_function.
    page.locator(".xterm-rows:has-text('marker-42')").wait_for()
    text = page.locator(".xterm-rows").inner_text()
    lines = [line.strip() for line in text.splitlines()]
    assert "model" in lines, text
    page.screenshot(path=str(artifacts / "run-terminal.png"), full_page=True)


def test_launching_the_reference_agent_from_the_page_passes(
    page: Any, server: Server, artifacts: Path
) -> None:
    run_id = new_run_id("webui-launch")
    try:
        page.click("text=New run")
        page.locator("#launch-task").wait_for()
        page.select_option("#launch-task", TASK)
        page.select_option("#launch-agent", "reference")
        page.fill("#launch-run-id", run_id)
        page.screenshot(path=str(artifacts / "launch.png"))
        page.click("button:has-text('Launch')")
        page.locator(f"h1:has-text('{run_id}')").wait_for()
        page.locator(".run-head .badge.passed").wait_for(timeout=600_000)
        page.screenshot(path=str(artifacts / "launch-passed.png"), full_page=True)

        def recorded() -> bool:
            status, data = server.get(
                f"/api/runs/{run_id}", headers={"Authorization": "Bearer " + token()}
            )
            return status == 200 and data.get("status") == "passed" and data["container"]

        wait_until(recorded, "the launched run to be recorded", 120)
        # The page removes what the launch kept.
        page.once("dialog", lambda dialog: dialog.accept())
        page.click("button:has-text('Remove container')")
        wait_until(lambda: ssebench("runs", "inspect", run_id).returncode == 3, "removal", 60)
    finally:
        ssebench("runs", "remove", run_id, timeout=120)


def token() -> str:
    from tests.webui.conftest import TOKEN

    return TOKEN


def test_a_run_graded_by_a_reward_shows_each_key(
    page: Any, server: Server, harbor_dataset: Path, artifacts: Path
) -> None:
    run_id = new_run_id("webui-reward")
    arguments = run_arguments(
        harbor_dataset, "cookbook-multi-reward", "reference", run_id, server.results
    )
    done = ssebench(*arguments, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    row(page, run_id).locator(".badge.passed").wait_for()
    row(page, run_id).click()
    reward = page.locator(".card:has(.label:text-is('Reward')) .value")
    reward.wait_for()
    assert reward.inner_text() == "correctness 1 · performance 1"
    page.screenshot(path=str(artifacts / "run-reward.png"), full_page=True)


def test_an_evaluation_of_reward_tasks_shows_the_mean_reward_per_task(
    page: Any, server: Server, artifacts: Path
) -> None:
    """An evaluation report of tasks graded by rewards (written here from runs, as
    `ssebench eval` writes one): the matrix's foot has a row of the mean reward per
    task, by key, as text; a key the verifier named is data, never markup."""
    from ssebench.reports.summary import summarize_entries
    from ssebench.results.directory import write_json

    hostile = "<img src=x onerror=alert(1)>"
    runs = [
        {"task": "t1", "agent": "reference", "attempt": 1, "status": "passed",
         "reward": {"correctness": 1.0, hostile: 1.0}},
        {"task": "t2", "agent": "reference", "attempt": 1, "status": "failed",
         "reward": {"correctness": 0.0, hostile: 0.5}},
        {"task": "t1", "agent": "dummy", "attempt": 1, "status": "failed"},
        {"task": "t2", "agent": "dummy", "attempt": 1, "status": "failed"},
    ]  # fmt: skip
    for number, found in enumerate(runs):
        found.update(
            model="none", state="done", skipped=False, run_id=None, run_dir=None,
            error_msg=None, seconds=5.0, spend=None, start_attempts=1, start_retries=[],
            number=number,
        )  # fmt: skip
    matrix = [("reference", "none"), ("dummy", "none")]
    name = "eval-20261207-reward.json"
    write_json(
        server.results / name,
        {
            "schema": 2, "command": "eval", "backend": "docker", "attempts": 1,
            "dataset": {"name": "harbor", "version": "1", "path": "/d"},
            "matrix": [{"agent": agent, "model": model} for agent, model in matrix],
            "started_at": "2026-12-07T10:00:00Z", "finished_at": "2026-12-07T10:01:00Z",
            "elapsed_seconds": 60.0, "interrupted": False, "in_progress": False,
            "counts": {"total": len(runs)}, "spend": None,
            "entries": summarize_entries(runs, matrix, 1), "runs": runs,
        },
    )  # fmt: skip
    page.goto(f"{server.url}/#/evaluation/{name}")
    cells = page.locator("tr[data-row=reward] td")
    cells.first.wait_for()
    # The keys in order (the report sorts them), each with its mean over the tasks.
    assert cells.nth(0).inner_text() == f"{hostile} 0.75 · correctness 0.50"
    assert cells.nth(1).inner_text() == "—"
    assert page.locator("img[src=x]").count() == 0
    page.screenshot(path=str(artifacts / "evaluation-reward.png"), full_page=True)
