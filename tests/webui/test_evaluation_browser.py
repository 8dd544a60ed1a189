"""The evaluation view and the launcher's selects in headless Chromium, against a real
`ssebench eval` of the pilot with two agents (reference and dummy) on Docker.

The page follows the evaluation while it runs (its report says in_progress), then
shows the finished matrix; a second evaluation (dummy alone, from the runs already
recorded) is compared with the first. Screenshots go to tests/webui/artifacts/.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ssebench.proxy import ModelCatalog
from tests.cli import ssebench
from tests.conftest import PILOT_DATASET
from tests.docker.conftest import leftovers, new_run_id
from tests.webui.conftest import Server, start_server, stop_server

pytestmark = [pytest.mark.browser, pytest.mark.docker]
# Three pilot tasks, one of each language: a matrix of 12 runs (2 agents x 2 attempts).
EVAL_TASKS = ("c-ringbuf-readline", "go-jsonptr-escape", "py-ini-quoted-comment")
# One provider key set, the others empty: the launcher marks those models.
KEYS = {"ANTHROPIC_API_KEY": "test-key-not-a-real-one", "OPENAI_API_KEY": "", "GOOGLE_API_KEY": ""}


def eval_argv(results: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "ssebench.cli.main", "eval", "--dataset", str(PILOT_DATASET),
        "--backend", "docker", "--jobs", "2", "--results", str(results),
        "--run-id-prefix", new_run_id("webui-eval"), "--tasks", *EVAL_TASKS, *extra,
    ]  # fmt: skip


def report_path(stdout: str) -> Path:
    last = stdout.strip().splitlines()[-1]
    assert last.startswith("report: "), stdout[-3000:]
    return Path(last.removeprefix("report: "))


@pytest.fixture(scope="module")
def server(results: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    log = tmp_path_factory.mktemp("webui-eval-log") / "webui.log"
    running = start_server(results, log, **KEYS)
    yield running
    stop_server(running)


@pytest.fixture(scope="module")
def evaluation(server: Server) -> Iterator[subprocess.Popen[str]]:
    """The matrix evaluation, started in the background (2 agents x 3 tasks x 2 attempts)."""
    process = subprocess.Popen(
        eval_argv(server.results, "--agent", "reference", "--agent", "dummy", "--attempts", "2"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **KEYS},
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            # A test that failed before the evaluation ended: stop it as a user does
            # (its runs stop and are recorded), so that only that test fails; a kill
            # would leave its running containers to the session's leftovers check.
            process.send_signal(signal.SIGINT)
            try:
                process.communicate(timeout=180)
            except subprocess.TimeoutExpired:
                process.kill()
        process.communicate()
        assert leftovers() == []


def test_the_evaluation_view_follows_a_real_eval_and_compares_two(
    page: Any, server: Server, evaluation: subprocess.Popen[str], artifacts: Path
) -> None:
    page.click("text=Evaluations")
    row = page.locator("tr[data-report^='eval-']").first
    row.locator(".badge.running:has-text('in progress')").wait_for(timeout=120_000)
    row.locator("a").click()
    # Live: a cell fills in while the evaluation still runs.
    page.locator(".live-note:has-text('Live')").wait_for()
    page.locator("td.cell a.attempt.passed").first.wait_for(timeout=600_000)
    page.screenshot(path=str(artifacts / "evaluation-live.png"), full_page=True)

    stdout, stderr = evaluation.communicate(timeout=1800)
    assert evaluation.returncode == 0, stdout[-3000:] + stderr[-3000:]
    matrix = report_path(stdout)
    page.locator(".run-head .badge.finished").wait_for(timeout=30_000)
    report = json.loads(matrix.read_text())
    reference, dummy = report["entries"]
    # Real runs: the reference agent passes (a timing-sensitive task may fail an
    # attempt on a loaded machine), the dummy agent never does.
    assert reference["counts"]["passed"] >= 5 and dummy["counts"]["passed"] == 0
    solved = []
    for task in EVAL_TASKS:
        cells = page.locator(f"tr[data-task='{task}'] td.cell")
        for index, agent in enumerate(("reference", "dummy")):
            runs = [run for run in report["runs"] if (run["task"], run["agent"]) == (task, agent)]
            passed = sum(run["status"] == "passed" for run in runs)
            graded = sum(run["status"] in ("passed", "failed") for run in runs)
            expected = "passed" if 2 * passed > graded else "failed"
            assert cells.nth(index).get_attribute("data-outcome") == expected, (task, agent)
            assert cells.nth(index).locator("a.attempt").count() == 2
            if agent == "reference" and expected == "passed":
                solved.append(task)
        assert cells.nth(1).get_attribute("data-outcome") == "failed"
    rates = page.locator("tr[data-row=pass-rate] td")
    for index, entry in enumerate((reference, dummy)):
        rate = entry["resolved_rate"]
        expected_rate = f"{rate['value'] * 100:.1f}% ({rate['count']}/{rate['of']})"
        assert rates.nth(index).inner_text() == expected_rate
    # Two attempts per task: the interval and pass@k are shown.
    low, high = reference["resolved_rate"]["ci95"]
    interval = page.locator("tr[data-row=interval] td").nth(0).inner_text()
    assert interval == f"{low * 100:.1f}%\u2013{high * 100:.1f}%", interval
    page.locator("tr[data-row=pass-at-2]").wait_for()
    assert page.locator("tr[data-row=duration] td").nth(0).inner_text() != "—"
    page.screenshot(path=str(artifacts / "evaluation-matrix.png"), full_page=True)

    # Filters: one agent; then one task.
    page.select_option("select[data-filter=agent]", "dummy")
    page.locator("th.column").nth(1).wait_for(state="detached")
    # text_content: the header is upper-cased by CSS.
    assert (page.locator("th.column").text_content() or "").startswith("dummy")
    page.select_option("select[data-filter=agent]", "")
    page.fill("input[aria-label='Filter tasks']", EVAL_TASKS[0])
    page.locator(f"tr[data-task='{EVAL_TASKS[1]}']").wait_for(state="detached")
    assert page.locator("tbody tr[data-task]").count() == 1

    # A cell links to its run.
    page.locator("td.cell[data-column='1'] a.attempt.failed").first.click()
    page.locator("[data-failure]").wait_for()
    assert (page.locator(".run-sub").text_content() or "").count("dummy") == 1

    # A second evaluation: dummy alone, every run already recorded (skipped).
    done = subprocess.run(
        eval_argv(server.results, "--agent", "dummy", "--attempts", "2"),
        capture_output=True, text=True, timeout=600, env={**os.environ, **KEYS},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    second = report_path(done.stdout)
    assert json.loads(second.read_text())["counts"]["skipped"] == 6

    page.click("nav >> text=Evaluations")
    page.locator(f"tr[data-report='{second.name}']").wait_for()
    page.select_option("#compare-first", matrix.name)
    page.select_option("#compare-second", second.name)
    page.click("button:has-text('Compare')")
    # By default the same agent and model (dummy in both): nothing flipped.
    page.locator(".comparison h2:has-text('A: dummy / none')").wait_for()
    assert page.locator(".comparison tbody tr[data-task]").count() == len(EVAL_TASKS)
    assert page.locator("tr[data-flip=lost], tr[data-flip=gained]").count() == 0
    # reference (A) against dummy (B): every task is lost.
    page.select_option("#compare-first-column", "0")
    page.select_option("#compare-second-column", "0")
    page.locator(".comparison h2:has-text('A: reference / none')").wait_for()
    page.check("#flipped-only")
    assert page.locator("tr[data-flip=lost]").count() == len(solved)
    assert page.locator("tr[data-flip=gained]").count() == 0
    lost = page.locator(".card:has-text('Lost (A only)') .value").inner_text()
    assert lost == str(len(solved))
    page.screenshot(path=str(artifacts / "evaluation-compare.png"), full_page=True)


def test_the_launcher_offers_the_real_agents_and_models(
    page: Any, server: Server, artifacts: Path
) -> None:
    listed = ssebench("agents", "list", "--json", timeout=120)
    assert listed.returncode == 0, listed.stderr
    agents = sorted(agent["name"] for agent in json.loads(listed.stdout)["agents"])
    catalog = ModelCatalog.load()

    page.click("text=New run")
    page.locator("#launch-agent").wait_for()
    # The page's CSP forbids eval: values are read as attributes, not by script.
    offered = [
        option.get_attribute("value") for option in page.locator("#launch-agent option").all()
    ]
    assert sorted(offered) == agents
    values = [
        option.get_attribute("value") for option in page.locator("#launch-model option").all()
    ]
    assert values == ["", *catalog.names]
    for name in catalog.names:
        option = page.locator(f"#launch-model option[value='{name}']")
        missing = catalog.get(name).key_variable != "ANTHROPIC_API_KEY"
        assert option.is_disabled() is missing, name
        assert ("no key" in (option.text_content() or "")) is missing, name
    # An agent without a model: the select says none; one with a model picks one.
    page.select_option("#launch-agent", "reference")
    assert page.locator("#launch-model").is_disabled()
    everyone = json.loads(listed.stdout)["agents"]
    with_model = [agent["name"] for agent in everyone if agent["needs_model"]]
    if with_model:
        page.select_option("#launch-agent", with_model[0])
        chosen = page.locator("#launch-model").input_value()
        assert catalog.get(chosen).key_variable == "ANTHROPIC_API_KEY"
    page.screenshot(path=str(artifacts / "launch-selects.png"))
