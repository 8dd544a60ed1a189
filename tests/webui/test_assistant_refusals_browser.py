"""The assistant's tab where it cannot start, in Chromium against the real server: in
hosted mode, and on the Kubernetes backend (whose exec cannot pass --env). The page
shows why, and the assistant's WebSocket is refused. A recorded opencode run (files
only) is enough: both refusals come before anything reaches a container."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ssebench.results.directory import write_json
from tests.webui.conftest import TOKEN, Server, start_server, stop_server

pytestmark = pytest.mark.browser
RUN_ID = "webui-assistant-refused"


def record_opencode_run(root: Path) -> None:
    run_dir = root / "py-semver-prerelease" / "opencode-solves" / "opencode" / RUN_ID
    (run_dir / "archive").mkdir(parents=True)
    write_json(
        run_dir / "summary.json",
        {
            "run_id": RUN_ID,
            "task": "py-semver-prerelease",
            "config": {"agent": "opencode", "model": "opencode-solves"},
            "status": "failed",
            "error_msg": "Hidden test failed",
            "grade": {"status": "failed", "error_msg": "Hidden test failed", "steps": []},
            "exit_code": 0,
            "started_at": "2026-11-29T10:00:00Z",
            "finished_at": "2026-11-29T10:01:00Z",
            "durations": {"total": 60.0},
            "spend": None,
        },
    )
    (run_dir / "archive" / "dialog.jsonl").write_text(
        json.dumps({"seq": 1, "ts": "2026-11-29T10:00:00Z", "type": "message", "text": "hi"}) + "\n"
    )


def serve(tmp_path_factory: pytest.TempPathFactory, name: str, **environment: str) -> Server:
    folder = tmp_path_factory.mktemp(name)
    record_opencode_run(folder)
    return start_server(folder, folder / "webui.log", **environment)


@pytest.fixture(scope="module")
def hosted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = serve(tmp_path_factory, "assistant-hosted", SSEBENCH_WEBUI_HOSTED="1")
    yield server
    stop_server(server)


@pytest.fixture(scope="module")
def kubernetes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = serve(tmp_path_factory, "assistant-kubernetes", SSEBENCH_BACKEND="kubernetes")
    yield server
    stop_server(server)


def reason_shown(browser: Any, server: Server, screenshot: Path) -> str:
    context = browser.new_context(viewport={"width": 1280, "height": 700})
    tab = context.new_page()
    tab.set_default_timeout(30_000)
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    try:
        tab.goto(server.url + "/")
        tab.fill("#token-input", TOKEN)
        tab.click("#token-form button[type=submit]")
        tab.wait_for_selector("h1:has-text('Runs')")
        tab.goto(f"{server.url}/#/run/{RUN_ID}")
        tab.click("[data-tab=assistant]")
        reason = tab.locator("[data-assistant-reason]")
        reason.wait_for()
        # No panel: nothing to type a question into.
        assert tab.locator("[data-assistant-dialog]").count() == 0
        tab.screenshot(path=str(screenshot), full_page=True)
        return str(reason.inner_text())
    finally:
        context.close()
        assert errors == [], errors


def socket_status(server: Server) -> int:
    from tests.webui.test_server_security import handshake_to

    return handshake_to(server, f"/api/runs/{RUN_ID}/assistant")


def test_hosted_mode_says_why_there_is_no_assistant(
    browser: Any, hosted: Server, artifacts: Path
) -> None:
    reason = reason_shown(browser, hosted, artifacts / "assistant-hosted.png")
    assert "Hosted mode" in reason
    assert socket_status(hosted) == 403


def test_kubernetes_says_why_there_is_no_assistant(
    browser: Any, kubernetes: Server, artifacts: Path
) -> None:
    os.environ.setdefault("KUBECONFIG", "/var/cache/ssebench-k8s-local/kubeconfig")
    reason = reason_shown(browser, kubernetes, artifacts / "assistant-kubernetes.png")
    assert "cannot pass --env" in reason and "kubernetes" in reason
    assert socket_status(kubernetes) == 403
