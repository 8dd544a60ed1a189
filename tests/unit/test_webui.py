"""The web UI's server without a browser or Docker: security on every route, the run list,
a run's views from files and from a (stand-in) daemon, the launcher's command, the
terminal's pseudo-terminal."""

from __future__ import annotations

import base64
import json
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette.testclient")

from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from ssebench import labels
from ssebench.extensions import (
    Backend,
    ImageRequest,
    Images,
    RunHandle,
    RunInfo,
    RunSpec,
)
from ssebench.results.directory import write_json
from ssebench.webui.app import create_app
from ssebench.webui.catalog import select
from ssebench.webui.launcher import Launcher
from ssebench.webui.settings import WebSettings
from tests.conftest import PILOT_DATASET

TOKEN = "unit-test-token-0123456789"
ORIGIN = "http://127.0.0.1:3001"
AUTH = {"Authorization": f"Bearer {TOKEN}", "Host": "127.0.0.1:3001"}
TOKEN_PROTOCOL = "ssebench.token." + base64.urlsafe_b64encode(TOKEN.encode()).decode().rstrip("=")

# Every route of the API with a request that would otherwise be served.
ROUTES: list[tuple[str, str]] = [
    ("GET", "/api/health"),
    ("GET", "/api/runs"),
    ("POST", "/api/runs"),
    ("GET", "/api/launch"),
    ("GET", "/api/runs/finished-pass"),
    ("DELETE", "/api/runs/live-1"),
    ("GET", "/api/runs/finished-pass/dialog"),
    ("GET", "/api/runs/finished-pass/diff"),
    ("GET", "/api/runs/finished-pass/session"),
    ("GET", "/api/runs/finished-pass/logs?file=agent.log"),
    ("POST", "/api/runs/live-1/stop"),
    ("GET", "/api/evaluations"),
    ("GET", "/api/evaluations/eval-some.json"),
    ("GET", "/api/evaluations/eval-some.json/compare?with=eval-other.json"),
]
MUTATING = [(method, path) for method, path in ROUTES if method != "GET"]


class StandInDaemon(BaseHTTPRequestHandler):
    """Answers like the run's daemon: a dialog that grows, a diff, a status."""

    events: list[dict[str, Any]] = []

    def do_GET(self) -> None:
        if self.path.startswith("/dialog"):
            since = int(self.path.partition("since=")[2] or 0)
            events = [event for event in self.events if event["seq"] > since]
            body: Any = {"events": events, "next": self.events[-1]["seq"] if self.events else 0}
        elif self.path == "/diff":
            body = {"base": "abc", "diff": "diff --git a/x.py b/x.py\n+live change\n"}
        elif self.path == "/status":
            body = {"phase": "agent", "agent_exit_code": None}
        else:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *arguments: object) -> None:
        pass


class StandInBackend(Backend):
    """Lists the runs it is given and reaches the stand-in daemon; records stop/cleanup."""

    name = "standin"
    supports_exec = True

    def __init__(self, runs: list[RunInfo], daemon_url: str) -> None:
        self.runs = runs
        self.daemon_url = daemon_url
        self.stopped: list[str] = []
        self.removed: list[str] = []

    def list_runs(self, labels: Mapping[str, str]) -> list[RunInfo]:
        return [run for run in self.runs if all(run.labels.get(k) == v for k, v in labels.items())]

    def endpoint(self, handle: RunHandle, port: int) -> str:
        assert port == 4263
        return self.daemon_url

    def logs(self, handle: RunHandle, follow: bool = False) -> Iterator[str]:
        yield from ("ssebench: starting", "agent: working")

    def stop(self, handle: RunHandle, grace: float) -> None:
        self.stopped.append(handle.run_id)

    def cleanup(self, handle: RunHandle) -> None:
        self.removed.append(handle.run_id)

    def exec_argv(
        self,
        handle: RunHandle,
        command: Sequence[str],
        *,
        user: str | None = None,
        workdir: str | None = None,
        tty: bool = False,
        stdin: bool = False,
        env_names: Sequence[str] = (),
    ) -> list[str]:
        return self.local_argv(command, user=user, env_names=env_names)

    def local_argv(
        self, command: Sequence[str], *, user: str | None, env_names: Sequence[str]
    ) -> list[str]:
        """What exec_argv gives: a local command that stands in for the run's exec."""
        # Stands in for `docker exec`: says who it runs as, whether it has a terminal,
        # then echoes one line of input.
        script = (
            "import os,sys; print('user=' + sys.argv[1], 'tty=' + str(os.isatty(0)));"
            "sys.stdout.flush(); print('echo:' + input())"
        )
        return [sys.executable, "-c", script, str(user)]

    def prepare_images(self, request: ImageRequest) -> Images:
        raise NotImplementedError

    def copy_from_image(
        self,
        image: str,
        path: str,
        dest: Path,
        platform: str | None,
        *,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        raise NotImplementedError

    def start(self, spec: RunSpec) -> RunHandle:
        raise NotImplementedError

    def wait(self, handle: RunHandle, timeout: float | None) -> int:
        raise NotImplementedError

    def collect_results(self, handle: RunHandle, dest: Path) -> None:
        raise NotImplementedError


def record_run(root: Path, run_id: str, status: str, error: str | None, agent: str) -> Path:
    run_dir = root / "py-semver-prerelease" / "none" / agent / run_id
    (run_dir / "archive").mkdir(parents=True)
    grade = {"status": status, "error_msg": error, "steps": [{"name": "apply", "ok": True}]}
    write_json(
        run_dir / "summary.json",
        {
            "run_id": run_id,
            "task": "py-semver-prerelease",
            "config": {"agent": agent, "model": "none"},
            "status": status,
            "error_msg": error,
            "grade": grade,
            "exit_code": 0,
            "started_at": f"2026-11-29T10:00:0{len(run_id) % 10}Z",
            "finished_at": "2026-11-29T10:01:00Z",
            "durations": {"total": 42.5},
            "spend": None,
        },
    )
    (run_dir / "final.patch").write_text("diff --git a/NOTES.txt b/NOTES.txt\n+note\n")
    (run_dir / "agent.log").write_text("agent said hello\n")
    dialog = [
        {"seq": n, "ts": "2026-11-29T10:00:00Z", "type": "message", "text": f"m{n}"}
        for n in (1, 2, 3)
    ]
    (run_dir / "archive" / "dialog.jsonl").write_text(
        "".join(json.dumps(event) + "\n" for event in dialog)
    )
    return run_dir


def live_run(run_id: str, state: str = "running") -> RunInfo:
    return RunInfo(
        run_id=run_id,
        name=f"ssebench-{run_id}",
        state=state,  # type: ignore[arg-type]
        exit_code=None,
        image="ssebench/agent-sleeper/py-semver-prerelease:1",
        labels={
            labels.RUN_ID: run_id,
            labels.WEBUI: "true",
            labels.TASK_ID: "py-semver-prerelease",
            labels.AGENT: "sleeper",
            labels.MODEL: "none",
        },
        created_at="2026-11-29T11:00:00Z",
        handle=RunHandle(backend="standin", run_id=run_id, name=f"ssebench-{run_id}"),
    )


@pytest.fixture(scope="module")
def daemon() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandInDaemon)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def results(tmp_path: Path) -> Path:
    record_run(tmp_path, "finished-pass", "passed", None, "reference")
    record_run(tmp_path, "finished-fail", "failed", "Hidden test failed", "dummy")
    return tmp_path


def make_client(results: Path, daemon: str, **overrides: Any) -> tuple[TestClient, StandInBackend]:
    backend = StandInBackend([live_run("live-1")], daemon)
    fields: dict[str, Any] = {
        "results": results,
        "dataset": str(PILOT_DATASET),
        "token": TOKEN,
        "terminal": True,
        **overrides,
    }
    client = TestClient(
        create_app(WebSettings(**fields), backend), base_url="http://127.0.0.1:3001"
    )
    return client, backend


@pytest.fixture
def client(results: Path, daemon: str) -> Iterator[tuple[TestClient, StandInBackend]]:
    made = make_client(results, daemon)
    with made[0]:
        yield made


def call(client: TestClient, method: str, path: str, headers: dict[str, str]) -> Any:
    body = {"task": "py-semver-prerelease", "agent": "reference"} if method == "POST" else None
    return client.request(method, path, headers=headers, json=body)


# -- security ------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_every_route_needs_the_token(client: Any, method: str, path: str) -> None:
    web, backend = client
    assert call(web, method, path, {"Host": "127.0.0.1:3001"}).status_code == 401
    wrong = {"Host": "127.0.0.1:3001", "Authorization": "Bearer " + "x" * len(TOKEN)}
    answer = call(web, method, path, wrong)
    assert answer.status_code == 401 and TOKEN not in answer.text
    assert backend.stopped == [] and backend.removed == []


@pytest.mark.parametrize(("method", "path"), [*ROUTES, ("GET", "/"), ("GET", "/static/app.js")])
def test_every_route_refuses_a_foreign_origin(client: Any, method: str, path: str) -> None:
    web, backend = client
    answer = call(web, method, path, {**AUTH, "Origin": "http://evil.example"})
    assert answer.status_code == 403
    assert backend.stopped == [] and backend.removed == []


@pytest.mark.parametrize("path", ["/", "/api/health", "/api/runs"])
def test_a_foreign_host_is_refused_on_loopback(client: Any, path: str) -> None:
    web, _ = client
    answer = web.get(path, headers={**AUTH, "Host": "rebound.example:3001"})
    assert answer.status_code == 403


def test_same_origin_and_listed_origins_pass(results: Path, daemon: str) -> None:
    web, _ = make_client(results, daemon, cors_origins=("https://board.example",))
    with web:
        assert web.get("/api/health", headers={**AUTH, "Origin": ORIGIN}).status_code == 200
        listed = web.get("/api/health", headers={**AUTH, "Origin": "https://board.example"})
        assert listed.status_code == 200
        assert listed.headers["access-control-allow-origin"] == "https://board.example"
        preflight = web.options(
            "/api/runs",
            headers={"Host": "127.0.0.1:3001", "Origin": "https://board.example"},
        )
        assert preflight.status_code == 204
        assert "authorization" in preflight.headers["access-control-allow-headers"]


def test_the_page_shell_is_public_and_strict(client: Any) -> None:
    web, _ = client
    page = web.get("/", headers={"Host": "127.0.0.1:3001"})
    assert page.status_code == 200 and "ssebench" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"


def test_health_says_hosted_and_terminal(client: Any) -> None:
    web, _ = client
    health = web.get("/api/health", headers=AUTH).json()
    assert health["hosted"] is False and health["terminal"] is True
    assert health["token_required"] is True


@pytest.mark.parametrize(("method", "path"), MUTATING)
def test_hosted_mode_refuses_every_mutating_route(
    results: Path, daemon: str, method: str, path: str
) -> None:
    web, backend = make_client(results, daemon, hosted=True)
    with web:
        assert call(web, method, path, AUTH).status_code == 403
        assert backend.stopped == [] and backend.removed == []


def test_hosted_mode_refuses_the_launcher_and_the_terminal(results: Path, daemon: str) -> None:
    web, _ = make_client(results, daemon, hosted=True)
    with web:
        health = web.get("/api/health", headers=AUTH).json()
        assert health["hosted"] is True and health["terminal"] is False
        assert web.get("/api/launch", headers=AUTH).status_code == 403
        with (
            pytest.raises(WebSocketDisconnect),
            web.websocket_connect(
                "/api/runs/live-1/terminal", headers=AUTH, subprotocols=[TOKEN_PROTOCOL]
            ),
        ):
            pass
        assert web.get("/api/runs", headers=AUTH).status_code == 200


def test_the_terminal_needs_the_token_in_its_subprotocol(client: Any) -> None:
    web, _ = client
    for protocols in ([], ["ssebench.v1"], ["ssebench.token.d3Jvbmc"]):
        with (
            pytest.raises(WebSocketDisconnect),
            web.websocket_connect(
                "/api/runs/live-1/terminal",
                headers={"Host": "127.0.0.1:3001"},
                subprotocols=protocols,
            ),
        ):
            pass
    with (
        pytest.raises(WebSocketDisconnect),
        web.websocket_connect(
            "/api/runs/live-1/terminal",
            headers={"Host": "127.0.0.1:3001", "Origin": "http://evil.example"},
            subprotocols=[TOKEN_PROTOCOL],
        ),
    ):
        pass


def test_terminal_off_unless_asked(results: Path, daemon: str) -> None:
    web, _ = make_client(results, daemon, terminal=False)
    with web:
        assert web.get("/api/health", headers=AUTH).json()["terminal"] is False
        with (
            pytest.raises(WebSocketDisconnect),
            web.websocket_connect(
                "/api/runs/live-1/terminal", headers=AUTH, subprotocols=[TOKEN_PROTOCOL]
            ),
        ):
            pass


# -- reading runs --------------------------------------------------------------------


def test_the_list_has_live_and_finished_runs(client: Any) -> None:
    web, _ = client
    data = web.get("/api/runs", headers=AUTH).json()
    by_id = {run["run_id"]: run for run in data["runs"]}
    assert by_id["live-1"]["state"] == "running" and by_id["live-1"]["agent"] == "sleeper"
    assert by_id["finished-pass"]["status"] == "passed"
    assert by_id["finished-fail"]["error_msg"] == "Hidden test failed"
    assert by_id["finished-fail"]["duration"] == 42.5
    failed = web.get("/api/runs?status=failed", headers=AUTH).json()
    assert [run["run_id"] for run in failed["runs"]] == ["finished-fail"]
    live = web.get("/api/runs?state=live", headers=AUTH).json()
    assert [run["run_id"] for run in live["runs"]] == ["live-1"]
    assert web.get("/api/runs?sort=nonsense", headers=AUTH).status_code == 400


def test_a_finished_run_from_its_files(client: Any) -> None:
    web, _ = client
    detail = web.get("/api/runs/finished-fail", headers=AUTH).json()
    assert detail["grade"]["status"] == "failed" and detail["error_msg"] == "Hidden test failed"
    assert detail["log_files"] == ["agent.log"] and detail["can_remove"] is False
    dialog = web.get("/api/runs/finished-fail/dialog?since=1", headers=AUTH).json()
    assert [event["seq"] for event in dialog["events"]] == [2, 3] and dialog["live"] is False
    assert "NOTES.txt" in web.get("/api/runs/finished-fail/diff", headers=AUTH).json()["diff"]
    log = web.get("/api/runs/finished-fail/logs?file=agent.log", headers=AUTH).json()
    assert log["text"] == "agent said hello\n"
    # Only the run directory's known log files: no path reaches the file system.
    other = web.get("/api/runs/finished-fail/logs?file=../../../etc/passwd", headers=AUTH).json()
    assert other["text"] == ""
    assert web.get("/api/runs/nope", headers=AUTH).status_code == 404
    assert web.get("/api/runs/latest", headers=AUTH).status_code == 400


def test_a_running_run_from_its_daemon(client: Any) -> None:
    web, _ = client
    StandInDaemon.events = [{"seq": 1, "type": "message", "text": "first"}]
    first = web.get("/api/runs/live-1/dialog?since=0", headers=AUTH).json()
    assert first["live"] is True and [event["text"] for event in first["events"]] == ["first"]
    StandInDaemon.events.append({"seq": 2, "type": "message", "text": "second"})
    grown = web.get(f"/api/runs/live-1/dialog?since={first['next']}", headers=AUTH).json()
    assert [event["text"] for event in grown["events"]] == ["second"]
    diff = web.get("/api/runs/live-1/diff", headers=AUTH).json()
    assert diff == {
        "diff": "diff --git a/x.py b/x.py\n+live change\n",
        "live": True,
        "truncated": False,
    }
    detail = web.get("/api/runs/live-1", headers=AUTH).json()
    assert detail["phase"] == "agent" and detail["terminal"] is True and detail["can_stop"] is True
    deadline = time.monotonic() + 10
    lines: list[str] = []
    while time.monotonic() < deadline and len(lines) < 2:
        lines = web.get("/api/runs/live-1/logs?since=0", headers=AUTH).json()["lines"]
    assert lines == ["ssebench: starting", "agent: working"]


def test_stop_and_remove_reach_the_backend(client: Any) -> None:
    web, backend = client
    assert web.post("/api/runs/live-1/stop", headers=AUTH, json={}).status_code == 202
    deadline = time.monotonic() + 10
    while not backend.stopped and time.monotonic() < deadline:
        time.sleep(0.05)
    assert backend.stopped == ["live-1"]
    assert web.delete("/api/runs/live-1", headers=AUTH).json()["removed"] is True
    assert backend.removed == ["live-1"]
    assert web.delete("/api/runs/finished-pass", headers=AUTH).status_code == 409


def test_a_thousand_runs_stay_fast(tmp_path: Path, daemon: str) -> None:
    for number in range(1000):
        status = ("passed", "failed", "error")[number % 3]
        record_run(
            tmp_path, f"bulk-{number:04d}", status, None if number % 3 == 0 else "x", "dummy"
        )
    web, _ = make_client(tmp_path, daemon)
    with web:
        started = time.monotonic()
        first = web.get("/api/runs?limit=100&sort=run_id&order=asc", headers=AUTH).json()
        cold = time.monotonic() - started
        started = time.monotonic()
        for _ in range(10):
            web.get("/api/runs?status=failed&q=bulk-09&sort=duration", headers=AUTH)
        warm = (time.monotonic() - started) / 10
    assert first["total"] == 1001 and len(first["runs"]) == 100
    assert first["runs"][0]["run_id"] == "bulk-0000"
    assert cold < 5 and warm < 0.5, (cold, warm)


def test_select_sorts_missing_values_last_both_ways() -> None:
    rows = [
        {"run_id": "a", "spend": None},
        {"run_id": "b", "spend": 2.0},
        {"run_id": "c", "spend": 1},
    ]
    for descending, order in ((True, ["b", "c", "a"]), (False, ["c", "b", "a"])):
        picked = select(rows, filters={}, sort="spend", descending=descending)["runs"]
        assert [item["run_id"] for item in picked] == order


# -- launching -----------------------------------------------------------------------


def test_the_launch_command_is_an_argument_vector(tmp_path: Path) -> None:
    launcher = Launcher(WebSettings(dataset=str(PILOT_DATASET), backend="docker"), tmp_path)
    argv = launcher.argv(run_id="r1", task="py-semver-prerelease", agent="reference", model=None)
    assert argv[:4] == [sys.executable, "-m", "ssebench.cli.main", "run"]
    assert "--keep-container" in argv and "--run-id=r1" in argv
    assert "--task=py-semver-prerelease" in argv and f"--results={tmp_path}" in argv
    with pytest.raises(Exception, match="No task"):
        launcher.argv(run_id="r1", task="--help", agent="reference", model=None)
    with pytest.raises(Exception, match="Unknown agent"):
        launcher.argv(run_id="r1", task="py-semver-prerelease", agent="x; rm -rf /", model=None)
    with pytest.raises(Exception, match="model name"):
        launcher.argv(run_id="r1", task="py-semver-prerelease", agent="dummy", model="-x y")
    with pytest.raises(Exception, match="Invalid run ID"):
        launcher.argv(run_id="../x", task="py-semver-prerelease", agent="dummy", model=None)


def test_launch_refuses_bad_input(client: Any) -> None:
    web, _ = client
    for body in ({}, {"task": "py-semver-prerelease"}, {"task": 3, "agent": "dummy"}):
        assert web.post("/api/runs", headers=AUTH, json=body).status_code == 400
    unknown = web.post("/api/runs", headers=AUTH, json={"task": "nope", "agent": "dummy"})
    assert unknown.status_code == 400 and "No task" in unknown.json()["error"]
    taken = {"task": "py-semver-prerelease", "agent": "dummy", "run_id": "finished-pass"}
    assert web.post("/api/runs", headers=AUTH, json=taken).status_code == 409


def test_launch_options(client: Any) -> None:
    web, _ = client
    options = web.get("/api/launch", headers=AUTH).json()
    assert "py-semver-prerelease" in [task["id"] for task in options["tasks"]]
    assert {"reference", "dummy", "sleeper"} <= {agent["name"] for agent in options["agents"]}


# -- the terminal --------------------------------------------------------------------


def test_the_terminal_runs_the_exec_command_in_a_pseudo_terminal(client: Any) -> None:
    web, _ = client
    with web.websocket_connect(
        "/api/runs/live-1/terminal?user=model&cols=100&rows=30",
        headers={"Host": "127.0.0.1:3001", "Origin": ORIGIN},
        subprotocols=["ssebench.v1", TOKEN_PROTOCOL],
    ) as socket:
        assert socket.accepted_subprotocol == "ssebench.v1"
        output = b""
        while b"tty=True" not in output:
            output += socket.receive_bytes()
        assert b"user=model" in output
        socket.send_text(json.dumps({"type": "resize", "cols": 90, "rows": 20}))
        socket.send_text(json.dumps({"type": "input", "data": "hello\r"}))
        while b"echo:hello" not in output:
            output += socket.receive_bytes()
        while True:
            message = socket.receive()
            if message.get("text"):
                assert json.loads(message["text"]) == {"type": "exit", "code": 0}
                break


def test_the_terminal_refuses_other_users(client: Any) -> None:
    web, _ = client
    with (
        pytest.raises(WebSocketDisconnect),
        web.websocket_connect(
            "/api/runs/live-1/terminal?user=sse-runner", headers=AUTH, subprotocols=[TOKEN_PROTOCOL]
        ),
    ):
        pass


def test_a_launch_does_not_pass_the_token_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    class Recorder:
        def __init__(self, argv: list[str], **options: Any) -> None:
            seen.update(options, argv=argv)

        def poll(self) -> int:
            return 0

    monkeypatch.setenv("SSEBENCH_WEBUI_TOKEN", TOKEN)
    monkeypatch.setattr("ssebench.webui.launcher.subprocess.Popen", Recorder)
    launcher = Launcher(WebSettings(dataset=str(PILOT_DATASET), token=TOKEN), tmp_path)
    launched = launcher.launch(task="py-semver-prerelease", agent="reference", model=None)
    assert "SSEBENCH_WEBUI_TOKEN" not in seen["env"]
    assert seen["start_new_session"] is True
    assert all(TOKEN not in word for word in seen["argv"])
    assert launched.output == tmp_path / ".webui" / "launches" / f"{launched.run_id}.log"


# -- the start -----------------------------------------------------------------------


class SlowListing(StandInBackend):
    """A backend whose listing costs seconds, as the Kubernetes client's first does."""

    def __init__(self, daemon_url: str, seconds: float) -> None:
        super().__init__([live_run("live-1")], daemon_url)
        self.seconds = seconds
        self.listings = 0

    def list_runs(self, labels: Mapping[str, str]) -> list[RunInfo]:
        self.listings += 1
        time.sleep(self.seconds)
        return super().list_runs(labels)


def test_the_backend_is_listed_before_the_first_request(results: Path, daemon: str) -> None:
    backend = SlowListing(daemon, 1.0)
    settings = WebSettings(results=results, dataset=str(PILOT_DATASET), token=TOKEN)
    with TestClient(create_app(settings, backend), base_url=ORIGIN) as client:
        assert backend.listings == 1  # during the start, before any request
        started = time.monotonic()
        answer = client.get("/api/runs", headers=AUTH)
        assert answer.status_code == 200 and time.monotonic() - started < 0.5
        assert "live-1" in {run["run_id"] for run in answer.json()["runs"]}


def test_a_backend_that_answers_slowly_delays_the_start_a_bounded_time(
    results: Path, daemon: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ssebench.webui.app.WARM_UP_SECONDS", 0.2)
    backend = SlowListing(daemon, 2.0)
    settings = WebSettings(results=results, dataset=str(PILOT_DATASET), token=TOKEN)
    started = time.monotonic()
    with TestClient(create_app(settings, backend), base_url=ORIGIN) as client:
        assert time.monotonic() - started < 1.5
        # The first request waits for the listing that is under way, not for another.
        answer = client.get("/api/runs", headers=AUTH)
        assert answer.status_code == 200 and backend.listings == 1
