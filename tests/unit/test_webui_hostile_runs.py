"""The web UI, `ssebench runs results` and eval's reader against run directories that a
hostile agent wrote (tests/hostile_run.py): links to /dev/zero, /etc/passwd and
/proc/self/environ under every name they read, FIFOs under those names, 3 GB sparse
files, 250,000 files in archive/, a setuid file, a forged dialog.

Bounds: every request must answer within REQUEST_SECONDS (the acceptance's 2 s), as
measured around the in-process request; a request that has not answered after
HANG_SECONDS counts as hung (a FIFO read blocks forever) and fails the test instead of
hanging the suite. Making 250,000 files costs about 15 s on a loaded machine even on
tmpfs (two minutes on its disk), so the results folder is made once, in /dev/shm when
there is one, and removed after the module.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette.testclient")

from starlette.testclient import TestClient

from ssebench.results.directory import iter_summaries
from ssebench.webui.app import create_app
from ssebench.webui.dialog import dialog_from_daemon
from ssebench.webui.settings import WebSettings
from ssebench.webui.watch import LOG_FILES
from tests import hostile_run
from tests.cli import ssebench
from tests.conftest import PILOT_DATASET

TOKEN = "hostile-test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}", "Host": "127.0.0.1:3001"}
REQUEST_SECONDS = 2.0
HANG_SECONDS = 20.0
SMALL_FILES = 250_000
# Runs that the list shows (summary.json is real) and runs it must leave out.
LISTED = [
    "links-zero",
    "links-passwd",
    "links-environ",
    "fifos",
    "linked-archive",
    "big",
    "forged",
]
UNLISTED = ["summary-zero", "summary-passwd", "summary-environ", "summary-fifo"]


def own_environment() -> bytes:
    with open("/proc/self/environ", "rb") as handle:
        return handle.read()


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    memory = Path("/dev/shm")
    base = (
        memory if memory.is_dir() and os.access(memory, os.W_OK) else tmp_path_factory.getbasetemp()
    )
    folder = Path(tempfile.mkdtemp(prefix="ssebench-hostile-", dir=base))
    try:
        yield make_hostile_results(folder / "results")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def make_hostile_results(root: Path) -> Path:
    root.mkdir()
    for name, target in hostile_run.LINK_TARGETS.items():
        hostile_run.linked_run(root, f"links-{name}", target)
        hostile_run.linked_run(root, f"summary-{name}", target, summary_too=True)
    hostile_run.fifo_run(root, "fifos")
    hostile_run.fifo_run(root, "summary-fifo", summary_too=True)
    hostile_run.linked_archive_run(root, "linked-archive", root.parent / "elsewhere")
    (root.parent / "elsewhere" / "secret").write_text("not for the page")
    started = time.monotonic()
    hostile_run.big_run(root, "big", small_files=SMALL_FILES)
    print(f"made {SMALL_FILES} files in {time.monotonic() - started:.1f}s")
    hostile_run.forged_dialog_run(root, "forged")
    return root


@pytest.fixture(scope="module")
def web(results: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    from ssebench.testing.fake import STATE_VARIABLE, FakeBackend

    settings = WebSettings(results=results, dataset=str(PILOT_DATASET), token=TOKEN)
    client = TestClient(create_app(settings, FakeBackend()), base_url="http://127.0.0.1:3001")
    # A backend with no runs of its own: the session's fake state holds other tests' runs.
    # Set before the client starts: the app lists the backend's runs once, at startup.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(STATE_VARIABLE, str(tmp_path_factory.mktemp("hostile-fake-state")))
        with client:
            yield client


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    """call()'s answer and its seconds; fails, without waiting for ever, if it hangs."""
    answer: list[Any] = []
    failure: list[BaseException] = []

    def work() -> None:
        try:
            answer.append(call())
        except BaseException as error:  # re-raised in the test's thread
            failure.append(error)

    started = time.monotonic()
    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(HANG_SECONDS)
    seconds = time.monotonic() - started
    assert not worker.is_alive(), f"hung for more than {HANG_SECONDS}s"
    if failure:
        raise failure[0]
    return answer[0], seconds


def routes_of(run_id: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    base = f"/api/runs/{run_id}"
    return [
        ("GET", base, None),
        ("GET", f"{base}/dialog?since=0", None),
        ("GET", f"{base}/diff", None),
        *[("GET", f"{base}/logs?file={name}", None) for name in LOG_FILES],
        ("GET", f"{base}/logs?since=0", None),
        ("POST", f"{base}/stop", {}),
        ("DELETE", base, None),
    ]


def test_the_list_answers_in_time_and_leaves_out_unreadable_summaries(web: TestClient) -> None:
    response, seconds = timed(lambda: web.get("/api/runs?limit=1000", headers=AUTH))
    assert response.status_code == 200 and seconds < REQUEST_SECONDS, seconds
    listed = {run["run_id"] for run in response.json()["runs"]}
    assert listed == set(LISTED)
    page, seconds = timed(lambda: web.get("/"))
    assert page.status_code == 200 and seconds < REQUEST_SECONDS


@pytest.mark.parametrize("run_id", LISTED)
def test_every_route_of_a_hostile_run_answers_in_time_and_follows_nothing(
    web: TestClient, run_id: str
) -> None:
    secrets = [own_environment()[:200], hostile_run.PASSWD_MARK.encode()]
    for method, path, body in routes_of(run_id):
        response, seconds = timed(
            lambda method=method, path=path, body=body: web.request(
                method, path, headers=AUTH, json=body
            )
        )
        assert response.status_code < 500, (path, response.text[:300])
        assert seconds < REQUEST_SECONDS, (path, seconds)
        for secret in secrets:
            assert secret not in response.content, (path, secret[:20])
        assert b"not for the page" not in response.content, path
        if run_id.startswith("links-"):  # the big run's own files are zeros
            assert b"\\u0000" * 8 not in response.content, path


@pytest.mark.parametrize("run_id", UNLISTED)
def test_a_run_whose_summary_is_not_a_file_is_not_found(web: TestClient, run_id: str) -> None:
    response, seconds = timed(lambda: web.get(f"/api/runs/{run_id}/dialog", headers=AUTH))
    assert response.status_code == 404 and seconds < REQUEST_SECONDS


def test_links_and_fifos_are_reported_not_read(web: TestClient) -> None:
    for run_id, word in (("links-passwd", "link"), ("fifos", "fifo")):
        detail = web.get(f"/api/runs/{run_id}", headers=AUTH).json()
        assert detail["log_files"] == [] and detail["grade"]["status"] == "failed"
        diff = web.get(f"/api/runs/{run_id}/diff", headers=AUTH).json()
        assert diff["diff"] == "" and word in diff["problem"]
        log = web.get(f"/api/runs/{run_id}/logs?file=agent.log", headers=AUTH).json()
        assert log["text"] == "" and word in log["problem"]
        assert web.get(f"/api/runs/{run_id}/dialog", headers=AUTH).json()["events"] == []


def test_big_files_are_cut_and_the_archive_listing_is_capped(web: TestClient) -> None:
    detail, seconds = timed(lambda: web.get("/api/runs/big", headers=AUTH).json())
    archive = detail["archive"]
    assert archive["truncated"] and len(archive["entries"]) == 1000 and seconds < REQUEST_SECONDS
    assert {entry["kind"] for entry in archive["entries"]} == {"file"}
    log = web.get("/api/runs/big/logs?file=agent.log", headers=AUTH).json()
    assert log["truncated"] and len(log["text"]) == 2 * 1024 * 1024
    diff = web.get("/api/runs/big/diff", headers=AUTH).json()
    assert diff["truncated"] and len(diff["diff"]) == 2 * 1024 * 1024
    dialog = web.get("/api/runs/big/dialog", headers=AUTH).json()
    # 16 MiB of zeros without a line end: one line cut by the cap, so no event at all.
    assert dialog["cut"] is True and dialog["events"] == []
    assert detail["grade"]["status"] == "failed"  # from summary.json; result.json is too big


def test_the_archive_listing_marks_setuid_files_and_opens_none(web: TestClient) -> None:
    entries = web.get("/api/runs/forged", headers=AUTH).json()["archive"]["entries"]
    described = {entry["name"]: entry for entry in entries}
    assert described["setuid-shell"]["setuid"] is True
    assert described["dialog.jsonl"]["kind"] == "file"
    fifo_entries = web.get("/api/runs/fifos", headers=AUTH).json()["archive"]["entries"]
    assert [(entry["name"], entry["kind"]) for entry in fifo_entries] == [("dialog.jsonl", "fifo")]
    linked = web.get("/api/runs/links-zero", headers=AUTH).json()["archive"]["entries"]
    assert [(entry["name"], entry["kind"]) for entry in linked] == [("dialog.jsonl", "link")]
    assert web.get("/api/runs/linked-archive", headers=AUTH).json()["archive"] is None


def test_a_forged_dialog_shows_the_harness_grade_and_marks_the_agents_claims(
    web: TestClient,
) -> None:
    answer = web.get("/api/runs/forged/dialog?since=0", headers=AUTH)
    assert answer.status_code == 200
    events = answer.json()["events"]
    harness = [event for event in events if event["origin"] == "harness"]
    assert [(event["seq"], event["type"]) for event in harness] == [
        (1, "agent_started"),
        (3, "agent_exited"),
        (5, "graded"),
    ]
    assert harness[-1]["status"] == "failed"
    # The forged grade is there, but as what the agent says.
    forged = [
        event for event in events if event["type"] == "graded" and event["origin"] != "harness"
    ]
    assert [(event["status"], event["origin"], event.get("claim")) for event in forged] == [
        ("passed", "agent", True)
    ]
    rewritten = [event for event in events if event.get("note") == "rewritten"]
    assert rewritten[0]["origin"] == "agent" and rewritten[0]["claim"] is True
    claims = {event["type"] for event in events if event.get("claim")}
    assert claims == {"graded", "agent_exited", "tool_result", "note"}
    message = next(event for event in events if event["type"] == "message" and "text" in event)
    assert message["origin"] == "agent" and "claim" not in message
    problems = [event["problem"] for event in events if event["origin"] == "malformed"]
    assert problems.count("its seq is not a whole number") == 3
    assert "not a JSON object" in problems and "not JSON" in problems
    assert "its type is not a string" in problems
    assert any(problem.startswith("longer than") for problem in problems)
    assert all(len(event.get("excerpt", "")) <= 300 for event in events)
    # The harness's own line in dialog.jsonl is shown once.
    assert [event["seq"] for event in events].count(1) == 1
    # Paging: from a position on, and nothing past the end.
    later = web.get(f"/api/runs/forged/dialog?since={len(events) - 2}", headers=AUTH).json()
    assert later["events"] == events[-2:] and later["next"] == len(events)


def test_the_daemons_answer_is_marked_too() -> None:
    answer = {
        "events": [
            {"seq": 1, "type": "agent_started"},
            {"seq": 2, "type": "message", "source": "agent"},
            {"seq": 3, "type": "graded", "source": "agent"},
            {"seq": "4", "type": "message"},
            "text",
        ],
        "next": 5,
    }
    shown = dialog_from_daemon(answer, 0)
    assert [event["origin"] for event in shown["events"]] == [
        "harness",
        "agent",
        "agent",
        "malformed",
        "malformed",
    ]
    assert shown["events"][2]["claim"] is True and shown["next"] == 5
    assert dialog_from_daemon({"events": "x", "next": "y"}, 7) == {
        "events": [],
        "next": 7,
        "more": False,
    }


def test_ssebench_runs_results_and_eval_read_only_real_summaries(results: Path) -> None:
    found, seconds = timed(lambda: list(iter_summaries(results)))
    assert {summary["run_id"] for _, summary in found} == set(LISTED)
    assert seconds < REQUEST_SECONDS
    started = time.monotonic()
    done = ssebench("runs", "results", "--dir", str(results), "--json", timeout=60)
    assert done.returncode == 0, done.stderr
    listed = {run["run_id"] for run in json.loads(done.stdout)["runs"]}
    assert listed == set(LISTED)
    assert time.monotonic() - started < 30  # a whole CLI process start included
