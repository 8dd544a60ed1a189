"""A hostile agent's run in headless Chromium: the dialog of a run whose archive/dialog.jsonl
the agent rewrote shows the harness's grade as the harness's, the forged "graded: passed"
as an agent-written claim, and malformed lines as malformed; the page of a run whose
files are links and FIFOs opens and says what was not read. No container is needed:
the runs are made by hand (tests/hostile_run.py) and the server uses the fake backend."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import hostile_run
from tests.webui.conftest import TOKEN, Server, start_server, stop_server

pytestmark = [pytest.mark.browser]


@pytest.fixture(scope="module")
def server(results: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    hostile_run.forged_dialog_run(results, "forged")
    hostile_run.fifo_run(results, "fifos")
    hostile_run.linked_run(results, "links-environ", "/proc/self/environ")
    hostile_run.strange_names_run(results, "names")
    log = tmp_path_factory.mktemp("webui-hostile-log") / "webui.log"
    running = start_server(results, log, SSEBENCH_BACKEND="fake")
    yield running
    stop_server(running)


def open_run(page: Any, run_id: str) -> None:
    page.locator(f"tr[data-run-id='{run_id}']").click()
    page.locator("[data-dialog]").wait_for(state="attached")


def test_a_forged_grade_shows_as_the_agents_claim(page: Any, artifacts: Path) -> None:
    open_run(page, "forged")
    dialog = page.locator("[data-dialog]")
    dialog.locator(".event[data-origin=harness].graded").wait_for()
    harness_grade = dialog.locator(".event[data-origin=harness].graded")
    assert harness_grade.count() == 1
    assert harness_grade.locator(".badge.failed").count() == 1
    claims = dialog.locator(".event[data-origin=claim]")
    forged = claims.filter(has_text='"status": "passed"')
    assert forged.count() == 1
    assert "agent-written claim" in forged.locator(".origin").inner_text()
    # No passed badge anywhere: the claim is shown as text, not as a grade.
    assert dialog.locator(".badge.passed").count() == 0
    assert dialog.locator(".event[data-origin=malformed]").count() >= 6
    message = dialog.locator(".event[data-origin=agent]").filter(has_text="I fixed it")
    assert "agent-written" in message.locator(".origin").inner_text()
    page.screenshot(path=str(artifacts / "hostile-dialog.png"), full_page=True)


def test_links_and_fifos_do_not_stop_the_page(page: Any, server: Server) -> None:
    for run_id, word in (("fifos", "fifo"), ("links-environ", "link")):
        page.goto(server.url + "/")
        open_run(page, run_id)
        page.locator("[data-dialog] ~ .empty:not([hidden])").wait_for()
        page.click("[data-tab=diff]")
        notice = page.locator(".notice").filter(has_text="final.patch was not read")
        notice.wait_for()
        assert word in notice.inner_text()
        # The server's environment holds the token: a followed link would show it.
        assert TOKEN not in page.content()


AUTH = {"Authorization": "Bearer " + TOKEN}
SHOWN_NAMES = ("\\xff\\xfe", "new\\nline", "n" * 255)


def test_names_that_are_not_utf8_answer_200_on_every_route(server: Server) -> None:
    """Every /api/runs route of a run whose archive, dialog, logs and patch hold bytes
    that are not UTF-8 answers 200; the archive's names come escaped and whole."""
    status, detail = server.get("/api/runs/names", headers=AUTH)
    assert status == 200, detail
    names = sorted(entry["name"] for entry in detail["archive"]["entries"])
    assert names == sorted(["dialog.jsonl", *SHOWN_NAMES])
    for log in detail["log_files"]:
        status, body = server.get(f"/api/runs/names/logs?file={log}", headers=AUTH)
        assert status == 200, (log, body)
    for route in ("dialog", "diff", "logs", "session"):
        status, body = server.get(f"/api/runs/names/{route}", headers=AUTH)
        assert status == 200, (route, body)
    status, listing = server.get("/api/runs", headers=AUTH)
    assert status == 200 and any(run["run_id"] == "names" for run in listing["runs"])


def test_names_that_are_not_utf8_render_in_the_page(page: Any, artifacts: Path) -> None:
    open_run(page, "names")
    dialog = page.locator("[data-dialog]")
    dialog.locator(".event").filter(has_text="colour").wait_for()
    page.click("[data-tab=settings]")
    archive = page.locator("[data-archive]")
    archive.wait_for()
    text = archive.inner_text()
    for name in SHOWN_NAMES:
        assert name in text
    page.screenshot(path=str(artifacts / "strange-names.png"), full_page=True)
    page.click("[data-tab=diff]")
    page.locator("table.diff").wait_for()
    page.click("[data-tab=logs]")
    page.locator("pre").filter(has_text="cleared").first.wait_for()


HOSTILE_TASK = "<img src=x onerror=\"document.title='pwned'\">"
HOSTILE_AGENT = "<b>agent</b>"
HOSTILE_MODEL = "<script>document.title='pwned'</script>"


def test_a_hostile_evaluation_report_is_shown_as_text(
    page: Any, server: Server, artifacts: Path
) -> None:
    """Task IDs, agent and model names, messages and run IDs of a report come from
    what agents influenced: the evaluation view shows them as text, links no run ID
    that is not one, and runs no script."""
    runs = [
        {
            "task": HOSTILE_TASK,
            "agent": HOSTILE_AGENT,
            "model": HOSTILE_MODEL,
            "attempt": attempt,
            "state": "done",
            "status": status,
            "skipped": False,
            "run_id": "../../etc/passwd",
            "run_dir": "/nowhere/<i>dir</i>",
            "error_msg": "<img src=x onerror=\"document.title='pwned'\">",
            "seconds": 1.0,
            "spend": None,
        }
        for attempt, status in ((1, "passed"), (2, "failed"))
    ]
    report = {
        "schema": 2,
        "command": "eval",
        "dataset": {"name": "<u>dataset</u>", "version": "1", "path": "/d"},
        "matrix": [{"agent": HOSTILE_AGENT, "model": HOSTILE_MODEL}],
        "attempts": 2,
        "started_at": "2026-12-01T10:00:00Z",
        "finished_at": "2026-12-01T10:01:00Z",
        "in_progress": False,
        "runs": runs,
    }
    (server.results / "eval-hostile.json").write_text(json.dumps(report))
    page.click("nav >> text=Evaluations")
    page.locator("a:has-text('eval-hostile.json')").click()
    page.locator("td.task").first.wait_for()
    assert page.locator("td.task").first.text_content() == HOSTILE_TASK
    assert (page.locator("th.column").first.text_content() or "").startswith(HOSTILE_AGENT)
    assert page.locator("#view img, #view b, #view u, #view i, #view script").count() == 0
    # The run ID is not one: the attempts are marks, not links.
    assert page.locator("td.cell .attempt").count() == 2
    assert page.locator("td.cell a.attempt").count() == 0
    assert page.title() != "pwned"
    page.screenshot(path=str(artifacts / "hostile-evaluation.png"), full_page=True)
