"""The run's daemon: a JSON API for the agent and the tools that watch a run.

The same agent API is served on TCP port 4263 and on the agent socket, its checks
also as the MCP tool `test_patch` at /mcp (mcp.py); it is unauthenticated, so it
offers nothing that would let the agent see what it must not (the hidden tests, the
grade before grading) or act as another user. The admin socket is root-only and
adds the calls with which the entrypoint moves the run on.

Phases: starting -> agent -> grading -> graded. Once the agent has exited, the
agent's actions (posting to the dialog, running tools) answer 409.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol, cast
from urllib.parse import parse_qs, urlsplit

from . import __version__
from .config import Task
from .dialog import Dialog, EventError
from .logs import LogFile, Redactor
from .mcp import PATH as MCP_PATH
from .mcp import CheckOutcome, HttpAnswer, McpEndpoint, ToolRefused, json_answer
from .processes import Completed
from .repository import BaseRepository
from .unixhttp import UnixHTTPServer
from .workspace import Workspace

NAME = "ssebench-daemon"
TOOLS_BY_DIFFICULTY: dict[int, tuple[str, ...]] = {1: ("build", "test"), 2: ("build",), 3: ()}
OUTPUT_LIMIT = 64 * 1024
DIALOG_OUTPUT_LIMIT = 8 * 1024
MAX_BODY_BYTES = 1024 * 1024
AGENT_EXIT_WAIT_SECONDS = 30.0

Response = tuple[int, Any]


class ApiError(Exception):
    def __init__(self, status: int, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status = status
        self.details = details

    def payload(self) -> dict[str, Any]:
        return {"error": str(self), **self.details}


class Daemon:
    def __init__(
        self,
        *,
        task: Task,
        difficulty: int,
        repository: BaseRepository,
        workspace: Workspace,
        dialog: Dialog,
        log: LogFile,
        redactor: Redactor,
    ) -> None:
        self.task = task
        self.difficulty = difficulty
        self.repository = repository
        self.workspace = workspace
        self.dialog = dialog
        self.log = log
        self.redactor = redactor
        self._state_lock = threading.Lock()
        self._tool_lock = threading.Lock()
        self.phase = "starting"
        self.agent_exit_code: int | None = None
        self.timed_out = False
        self.result: dict[str, Any] | None = None
        self.tool_calls = 0
        self._servers: list[ThreadingHTTPServer] = []
        self._serving = False
        self.mcp = McpEndpoint(self, log.line)
        self._routes: dict[
            tuple[str, str], tuple[bool, Callable[[dict[str, list[str]], bytes], Response]]
        ] = {
            ("GET", "/version"): (False, self._version),
            ("GET", "/prompt"): (False, self._prompt),
            ("GET", "/diff"): (False, self._diff),
            ("GET", "/dialog"): (False, self._dialog_read),
            ("POST", "/dialog"): (False, self._dialog_post),
            ("GET", "/result"): (False, self._result),
            ("GET", "/status"): (False, self._status),
            ("POST", "/tools/build"): (False, lambda q, b: self._tool("build")),
            ("POST", "/tools/test"): (False, lambda q, b: self._tool("test")),
            ("POST", "/admin/agent-started"): (True, self._admin_agent_started),
            ("POST", "/admin/agent-exited"): (True, self._admin_agent_exited),
            ("POST", "/admin/result"): (True, self._admin_result),
            ("GET", "/admin/status"): (True, self._admin_status),
        }

    # -- serving -------------------------------------------------------------------

    def start(
        self,
        *,
        host: str,
        port: int,
        agent_socket: Path | None,
        admin_socket: Path | None,
        admin_uids: frozenset[int],
    ) -> None:
        """Bind every listener, then serve each in a thread; raises if one cannot bind."""
        try:
            self._servers.append(_TCPServer((host, port), self, admin=False))
            if agent_socket is not None:
                # Any local user may use the agent API, as over TCP.
                self._servers.append(_UnixServer(agent_socket, self, admin=False, mode=0o666))
            if admin_socket is not None:
                self._servers.append(
                    _UnixServer(admin_socket, self, admin=True, mode=0o600, peer_uids=admin_uids)
                )
        except BaseException:
            self.stop()
            raise
        for server in self._servers:
            # A short poll interval makes stop() quick; idle polling costs nothing.
            thread = threading.Thread(
                target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
            )
            thread.start()
        self._serving = True
        self.log.line(f"daemon {__version__} listening on {host}:{self.port}")

    @property
    def port(self) -> int:
        """The TCP port, useful when started on port 0."""
        if not self._servers:
            return 0
        return cast(tuple[str, int], self._servers[0].server_address)[1]

    def stop(self) -> None:
        if self._serving:
            # shutdown() waits for its loop's next poll: the listeners' all at once, not
            # one after another, since the container's exit (and the run's) waits here.
            stoppers = [threading.Thread(target=server.shutdown) for server in self._servers]
            for stopper in stoppers:
                stopper.start()
            for stopper in stoppers:
                stopper.join()
        for server in self._servers:
            server.server_close()
        self._servers.clear()
        self._serving = False

    def handle(
        self, method: str, url: str, headers: dict[str, str], body: bytes, *, admin: bool
    ) -> HttpAnswer:
        """One HTTP request: MCP's to its endpoint, the JSON API's to dispatch();
        headers are keyed in lower case."""
        if urlsplit(url).path == MCP_PATH:
            try:
                return self.mcp.handle(method, headers, body)
            except Exception as error:  # a bug must answer 500, not kill the connection
                self.log.exception(f"{method} {MCP_PATH} failed", error)
                status, payload = 500, {"error": f"Internal error: {type(error).__name__}"}
        else:
            status, payload = self.dispatch(method, url, body, admin=admin)
        return json_answer(status, payload)

    def dispatch(self, method: str, url: str, body: bytes, *, admin: bool) -> Response:
        parsed = urlsplit(url)
        route = self._routes.get((method, parsed.path))
        if route is not None and route[0] and not admin:
            route = None  # admin endpoints do not exist on the agent's listeners
        if route is None:
            if any(
                p == parsed.path and (admin or not a) for (_, p), (a, _) in self._routes.items()
            ):
                return 405, {"error": f"{method} is not allowed on {parsed.path}"}
            return 404, {"error": f"no such endpoint: {parsed.path}"}
        try:
            return route[1](parse_qs(parsed.query), body)
        except ApiError as error:
            return error.status, error.payload()
        except Exception as error:  # a bug must answer 500, not kill the connection
            self.log.exception(f"{method} {parsed.path} failed", error)
            return 500, {"error": f"Internal error: {type(error).__name__}"}

    # -- agent API -----------------------------------------------------------------

    def _version(self, query: dict[str, list[str]], body: bytes) -> Response:
        return 200, {"name": NAME, "version": __version__}

    def _prompt(self, query: dict[str, list[str]], body: bytes) -> Response:
        return 200, {"task": self.task.id, "prompt": self.task.prompt}

    def _diff(self, query: dict[str, list[str]], body: bytes) -> Response:
        patch = self.repository.diff()
        return 200, {"base": self.repository.base, "diff": patch.decode("utf-8", "replace")}

    def _dialog_read(self, query: dict[str, list[str]], body: bytes) -> Response:
        raw = query.get("since", ["0"])[-1]
        try:
            since = int(raw)
        except ValueError:
            raise ApiError(400, "'since' must be an integer") from None
        events, last = self.dialog.since(since)
        return 200, {"events": events, "next": last}

    def _dialog_post(self, query: dict[str, list[str]], body: bytes) -> Response:
        self._require_agent_running()
        try:
            event = self.dialog.append_from_agent(_json_body(body))
        except EventError as error:
            raise ApiError(400, str(error)) from None
        return 201, {"seq": event["seq"]}

    def _result(self, query: dict[str, list[str]], body: bytes) -> Response:
        with self._state_lock:
            if self.result is None:
                return 404, {"error": "not graded yet", "phase": self.phase}
            return 200, self.result

    def _status(self, query: dict[str, list[str]], body: bytes) -> Response:
        with self._state_lock:
            return 200, {"phase": self.phase, "agent_exit_code": self.agent_exit_code}

    def _require_agent_running(self) -> None:
        with self._state_lock:
            if self.phase in ("grading", "graded"):
                raise ApiError(
                    409, "the agent has exited; its actions are closed", phase=self.phase
                )

    def _tool(self, name: str) -> Response:
        self._require_agent_running()
        allowed = TOOLS_BY_DIFFICULTY.get(self.difficulty, ())
        if name not in allowed:
            raise ApiError(
                403,
                f"tool '{name}' is not available at difficulty {self.difficulty}",
                difficulty=self.difficulty,
                allowed=list(allowed),
            )
        with self._tool_lock:
            # The agent may have exited while this call waited for the previous one.
            self._require_agent_running()
            with self._state_lock:
                self.tool_calls += 1
            self.dialog.append("tool_call", tool=name)
            started = time.monotonic()
            exit_code: int | None
            try:
                ok, exit_code, output = self._run_tool(name)
            except Exception as error:
                self.log.exception(f"tool {name} failed", error)
                ok, exit_code = False, None
                output = f"the tool failed: internal error {type(error).__name__}\n".encode()
            seconds = round(time.monotonic() - started, 3)
            text = self.redactor.text(output[-OUTPUT_LIMIT:].decode("utf-8", "replace"))
            self.dialog.append(
                "tool_result",
                tool=name,
                ok=ok,
                exit_code=exit_code,
                seconds=seconds,
                output=text[-DIALOG_OUTPUT_LIMIT:],
            )
            self.log.line(f"tool {name}: ok={ok} exit_code={exit_code} ({seconds:.1f}s)")
        return 200, {"ok": ok, "exit_code": exit_code, "output": text, "seconds": seconds}

    def run_strongest_check(self) -> CheckOutcome | None:
        """MCP's test_patch: the test tool, else the build tool, whichever the difficulty
        allows (None: neither), run as the HTTP tools are, so that the level is enforced
        and the dialog records it. Raises ToolRefused once the agent has exited."""
        allowed = TOOLS_BY_DIFFICULTY.get(self.difficulty, ())
        try:
            self._require_agent_running()
            check = next((name for name in ("test", "build") if name in allowed), None)
            if check is None:
                return None
            _, answer = self._tool(check)
        except ApiError as error:
            raise ToolRefused(str(error)) from None
        return CheckOutcome(
            check=check,
            ok=answer["ok"],
            exit_code=answer["exit_code"],
            output=answer["output"],
            seconds=answer["seconds"],
        )

    def _run_tool(self, name: str) -> tuple[bool, int, bytes]:
        """Build (and test) the current tree on a fresh copy, as the grader would."""
        steps = [("build", self.task.build)]
        if name == "test":
            steps.append(("test", self.task.test))
        workspace = self.workspace
        workspace.reset()
        output = bytearray()

        def record(label: str, completed: Completed) -> bool:
            output.extend(f"$ {label}\n".encode())
            output.extend(completed.output)
            if completed.timed_out:
                output.extend(f"\n[{label}: timed out after {workspace.step_timeout}s]\n".encode())
            return completed.exit_code == 0

        extracted = workspace.extract_base()
        if not record("(copy the base commit)", extracted):
            return False, extracted.exit_code, bytes(output)
        applied = workspace.apply(self.repository.diff())
        if not record("git apply (your changes)", applied):
            return False, applied.exit_code, bytes(output)
        for step, command in steps:
            if not command:
                output.extend(f"(the task has no {step} command)\n".encode())
                continue
            completed = workspace.run_command(command)
            if not record(command, completed):
                return False, completed.exit_code, bytes(output)
        return True, 0, bytes(output)

    # -- admin API -----------------------------------------------------------------

    def _admin_agent_started(self, query: dict[str, list[str]], body: bytes) -> Response:
        data = _json_body(body) or {}
        with self._state_lock:
            self.phase = "agent"
        self.dialog.append("agent_started", command=data.get("command"))
        return 200, {"phase": "agent"}

    def _admin_agent_exited(self, query: dict[str, list[str]], body: bytes) -> Response:
        data = _json_body(body) or {}
        exit_code = data.get("exit_code")
        timed_out = bool(data.get("timed_out", False))
        with self._state_lock:
            self.phase = "grading"
            self.agent_exit_code = exit_code if isinstance(exit_code, int) else None
            self.timed_out = timed_out
        # A tool still running would race with grading for the runner user.
        self.workspace.close()
        if self._tool_lock.acquire(timeout=AGENT_EXIT_WAIT_SECONDS):
            self._tool_lock.release()
        self.dialog.append("agent_exited", exit_code=self.agent_exit_code, timed_out=timed_out)
        return 200, {"phase": "grading"}

    def _admin_result(self, query: dict[str, list[str]], body: bytes) -> Response:
        result = _json_body(body)
        if not isinstance(result, dict):
            raise ApiError(400, "the result is a JSON object")
        with self._state_lock:
            self.result = result
            self.phase = "graded"
        self.dialog.append("graded", status=result.get("status"), error_msg=result.get("error_msg"))
        return 200, {"phase": "graded"}

    def _admin_status(self, query: dict[str, list[str]], body: bytes) -> Response:
        with self._state_lock:
            return 200, {
                "phase": self.phase,
                "agent_exit_code": self.agent_exit_code,
                "timed_out": self.timed_out,
                "graded": self.result is not None,
                "task": self.task.id,
                "difficulty": self.difficulty,
                "tool_calls": self.tool_calls,
                "dialog_events": self.dialog.last_seq,
                "version": __version__,
            }


def _json_body(body: bytes) -> Any:
    if not body:
        return None
    try:
        return json.loads(body)
    except ValueError:
        raise ApiError(400, "the request body is not JSON") from None


class _AppServer(Protocol):
    app: Daemon
    admin: bool
    listener: str


class _Handler(BaseHTTPRequestHandler):
    server_version = NAME
    protocol_version = "HTTP/1.0"
    # A client that stops mid-request must not hold a thread forever.
    timeout = 60

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        server = cast(_AppServer, self.server)
        started = time.monotonic()
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY_BYTES:
            answer = json_answer(413, {"error": f"the body must be 0 to {MAX_BODY_BYTES} bytes"})
        else:
            body = self.rfile.read(length) if length else b""
            headers = {name.lower(): value for name, value in self.headers.items()}
            answer = server.app.handle(method, self.path, headers, body, admin=server.admin)
        status, extra, data = answer
        self.send_response(status)
        for name, value in extra.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        elapsed = time.monotonic() - started
        path = urlsplit(self.path).path
        server.app.log.line(f"{server.listener} {method} {path} -> {status} ({elapsed:.3f}s)")

    def log_message(self, format: str, *args: Any) -> None:
        # Requests are logged by _dispatch; the default would print the client's
        # address to stderr (and fails on a unix socket, which has none).
        pass


class _TCPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], app: Daemon, *, admin: bool) -> None:
        self.app = app
        self.admin = admin
        self.listener = "tcp"
        super().__init__(address, _Handler)


class _UnixServer(UnixHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        path: Path,
        app: Daemon,
        *,
        admin: bool,
        mode: int,
        peer_uids: frozenset[int] | None = None,
    ) -> None:
        self.app = app
        self.admin = admin
        self.listener = "admin" if admin else "socket"
        super().__init__(path, _Handler, mode=mode, peer_uids=peer_uids)
