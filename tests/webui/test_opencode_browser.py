"""The assistant for real: a kept opencode run on Docker (the scripted model behind the
real LiteLLM proxy of tests/docker/model_stack.py), its page in Chromium, a question
typed into the assistant's panel and OpenCode's answer streamed back from the run's
container. The proxy here has no database, so the assistant gets the master key
(SSEBENCH_PROXY_MASTER_KEY_FOR_RUNS=1, as runs do); the assistant's own budgeted key and
its revocation are tested against the admin API stand-in in
tests/unit/test_webui_assistant.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli import run_arguments, ssebench, start_ssebench
from tests.conftest import PILOT_DATASET
from tests.docker.agents.agent_runs import tool_call
from tests.docker.conftest import new_run_id
from tests.docker.model_stack import ModelStack
from tests.polling import wait_until
from tests.webui.conftest import TASK, TOKEN, Server, start_server, stop_server

pytestmark = [pytest.mark.browser, pytest.mark.docker]
MODEL = "opencode-assistant"  # its own: test_opencode.py scripts opencode-gives-up
TITLE = {"contains": "You are a title generator", "turn": {"content": "A title"}}
AGENT_ANSWER = "Nothing to change here; I stop."
ASSISTANT_ANSWER = "The agent stopped without editing any file."
QUESTION = "What did the agent change?"
PASSED_ON = (
    "LITELLM_MASTER_KEY",
    "OPENAI_API_KEY",
    "SSEBENCH_MODELS_DIR",
    "SSEBENCH_PROXY_DATABASE",
    "SSEBENCH_PROXY_MASTER_KEY_FOR_RUNS",
    "XDG_STATE_HOME",
)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("assistant-results")


@pytest.fixture(scope="module")
def server(
    results: Path,
    tmp_path_factory: pytest.TempPathFactory,
    model_stack: ModelStack,
) -> Iterator[Server]:
    log = tmp_path_factory.mktemp("assistant-log") / "webui.log"
    environment = {name: model_stack.env[name] for name in PASSED_ON}
    running = start_server(results, log, **environment)
    yield running
    stop_server(running)
    text = log.read_text(errors="replace")
    assert model_stack.env["LITELLM_MASTER_KEY"] not in text


@pytest.fixture(scope="module")
def kept_opencode_run(
    server: Server,
    model_stack: ModelStack,
) -> Iterator[str]:
    """An opencode run that answered and was graded, kept alive after its grade."""
    # The agent's one turn, then the assistant's: the script is read in order.
    model_stack.script(
        MODEL,
        {"turns": [{"content": AGENT_ANSWER}, {"content": ASSISTANT_ANSWER}], "side": [TITLE]},
    )
    run_id = new_run_id("webui-assistant")
    arguments = run_arguments(
        PILOT_DATASET, TASK, "opencode", run_id, server.results, "--keep-container", "--keep-alive"
    )
    output = server.results.parent / f"{run_id}.log"
    process = start_ssebench(
        *arguments, "--model", MODEL, env=model_stack.env, output=output.open("w")
    )
    auth = {"Authorization": f"Bearer {TOKEN}"}

    def graded_and_alive() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"the run ended: {output.read_text()[-3000:]}")
        status, detail = server.get(f"/api/runs/{run_id}", auth)
        return (
            status == 200
            and detail.get("phase") == "graded"
            and bool(detail.get("assistant", {}).get("available"))
        )

    try:
        wait_until(graded_and_alive, "the opencode run to be graded and kept alive", 1500)
        yield run_id
    finally:
        ssebench("runs", "remove", run_id, timeout=120)
        process.kill()
        process.wait()


def test_the_assistant_answers_in_a_kept_opencode_run(
    page: Any,
    kept_opencode_run: str,
    model_stack: ModelStack,
    server: Server,
    artifacts: Path,
) -> None:
    page.goto(f"{server.url}/#/run/{kept_opencode_run}")
    page.click("[data-tab=assistant]")
    page.click("text=Start the assistant")
    page.locator("[data-assistant-status]:has-text('ready')").wait_for(timeout=120_000)
    page.fill("textarea[aria-label=question]", QUESTION)
    page.click("button:has-text('Ask')")
    answer = page.locator(f".assistant-assistant:has-text('{ASSISTANT_ANSWER}')")
    answer.wait_for(timeout=180_000)
    page.locator("[data-assistant-status]:has-text('answered')").wait_for(timeout=60_000)
    page.screenshot(path=str(artifacts / "assistant-answer.png"), full_page=True)
    # The question reached the model through the proxy; the master key is not on the page.
    assert any(QUESTION in str(r["body"]) for r in model_stack.requests(MODEL))
    assert model_stack.env["LITELLM_MASTER_KEY"] not in page.content()
    # The assistant's dialog is not the agent's: the run's dialog has no trace of it.
    status, dialog = server.get(
        f"/api/runs/{kept_opencode_run}/dialog?since=0", {"Authorization": f"Bearer {TOKEN}"}
    )
    assert status == 200 and QUESTION not in str(dialog) and ASSISTANT_ANSWER not in str(dialog)


LIVE_MODEL = "opencode-live"  # its own: test_opencode.py scripts opencode-solves
LIVE_TEXT = "I will wait for the slow check before I look at the version file."


def test_an_opencode_run_shows_its_live_session_then_its_dialog(
    page: Any,
    server: Server,
    model_stack: ModelStack,
    artifacts: Path,
) -> None:
    # The agent's first turn runs `sleep` in OpenCode's shell tool: long enough for the
    # page to read the session from the run's OpenCode server while it runs.
    wait = tool_call("call-wait", "bash", {"command": "sleep 45", "description": "Wait"})
    model_stack.script(
        LIVE_MODEL,
        {
            "turns": [
                {"content": LIVE_TEXT, "tool_calls": [wait]},
                {"content": "Done waiting; I stop here."},
            ],
            "side": [TITLE],
        },
    )
    run_id = new_run_id("webui-session")
    arguments = run_arguments(PILOT_DATASET, TASK, "opencode", run_id, server.results)
    output = server.results.parent / f"{run_id}.log"
    process = start_ssebench(
        *arguments, "--model", LIVE_MODEL, env=model_stack.env, output=output.open("w")
    )
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:

        def listed() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"the run ended: {output.read_text()[-3000:]}")
            status, detail = server.get(f"/api/runs/{run_id}", auth)
            return status == 200 and bool(detail) and detail.get("agent") == "opencode"

        # The tab opens as soon as the run is listed, most likely before its OpenCode
        # server answers: the page asks again until it does (it shows the dialog
        # meanwhile), then shows the session live.
        wait_until(listed, "the opencode run to be listed", 1500)
        page.goto(f"{server.url}/#/run/{run_id}")
        page.click("[data-tab=session]")
        page.locator(f"[data-session] .session-assistant:has-text('{LIVE_TEXT}')").wait_for(
            timeout=300_000
        )
        assert "Live" in page.locator("[data-session-note]").inner_text()
        page.locator("[data-session] [data-tool=bash]").first.wait_for()
        page.screenshot(path=str(artifacts / "opencode-session-live.png"), full_page=True)
        # Once the run is over, the tab shows the run's dialog instead.
        assert process.wait(timeout=900) == 0, output.read_text()[-3000:]
        page.locator("[data-session-fallback] .event.graded").wait_for(timeout=120_000)
        assert "dialog" in page.locator("[data-session-note]").inner_text()
        # Its last message came from the read-back of the server's session.
        page.locator("[data-session-fallback] .event:has-text('Done waiting')").wait_for()
        page.screenshot(path=str(artifacts / "opencode-session-over.png"), full_page=True)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
            ssebench("runs", "remove", run_id, timeout=120)  # what the killed runner left
