"""The assistant: OpenCode started in a run's container to answer questions about it.

A panel of the run's page opens a WebSocket; while it is open the assistant has a proxy
key of its own (made for it alone, with ASSISTANT_BUDGET_USD, under the run ID with
"-assistant" added), and each question runs `opencode run --format json` in the
container through the backend's exec_argv. The key, the proxy's address and the whole
OpenCode configuration reach the container only as environment variables passed by
name (exec_argv's env_names): never in the argument vector, the page or a log. The key
is revoked when the panel closes, when the run stops running, and when the server
stops.

The assistant only reads: its OpenCode configuration denies edits, the shell and the
web, and has no MCP server, so it cannot change the tree that is graded. Its session
lives in a private directory under /tmp of the container, apart from the agent's
dialog; nothing of it is written to the run's results.

The messages: the page sends {"type": "ask", "text"}; the server sends {"type":
"ready", "managed_key", "budget"} once the key is made, then for each question
{"type": "text", "text"}, {"type": "tool", "name", "status", "input", "output"} as
OpenCode reports them and {"type": "done", "code"} at its end, or {"type": "error",
"message"}.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from ssebench.errors import SsebenchError
from ssebench.extensions import Backend, RunHandle
from ssebench.proxy.session import ModelSession, plan_model_access
from ssebench.webui.settings import TOKEN_VARIABLE

LOG = logging.getLogger("ssebench.webui.assistant")
ASSISTANT_BUDGET_USD = 1.0
# Where the opencode agent's install layer puts OpenCode in a run's image.
OPENCODE = "/opt/ssebench/agents/opencode/install/bin/opencode"
AGENT = "opencode"
PROVIDER = "ssebench"
KEY_VARIABLE = "SSEBENCH_ASSISTANT_KEY"
CONFIG_VARIABLE = "OPENCODE_CONFIG_CONTENT"
HOME_VARIABLES = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")
QUIET_SETTINGS = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
    "OPENCODE_DISABLE_TERMINAL_TITLE": "1",
}
MAX_QUESTION_CHARS = 4000
CLIP = 4000
RUN_CHECK_SECONDS = 3.0


def unavailable_reason(
    *, hosted: bool, backend: Backend, run_id: str, agent: str, running: bool
) -> str | None:
    """Why the assistant cannot start in this run, or None when it can."""
    if hosted:
        return "Hosted mode: this web UI only shows runs, so it starts no assistant"
    if not backend.supports_exec:
        return f"The {backend.name} backend cannot run commands in a run's container"
    # exec_argv builds an argument vector and runs nothing: a backend that cannot pass
    # variables by name (Kubernetes) says so here, before any key is made.
    try:
        backend.exec_argv(
            RunHandle(backend=backend.name, run_id=run_id, name=""),
            ["true"],
            env_names=[KEY_VARIABLE],
        )
    except SsebenchError as error:
        return f"The assistant needs exec with --env, which this backend refuses: {error}"
    if agent != AGENT:
        return (
            "The assistant is OpenCode, which only the images of opencode runs carry; "
            f"this run's agent is {agent or 'unknown'}"
        )
    if not running:
        return "The run's container is not running (keep it with --keep-container --keep-alive)"
    return None


def configuration(service_url: str, model: str) -> dict[str, Any]:
    """OpenCode's configuration: the run's model through the proxy, and only reading."""
    return {
        "provider": {
            PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "ssebench proxy",
                "options": {
                    "baseURL": service_url.rstrip("/") + "/v1",
                    "apiKey": f"{{env:{KEY_VARIABLE}}}",
                },
                "models": {model: {"name": model}},
            }
        },
        "enabled_providers": [PROVIDER],
        "model": f"{PROVIDER}/{model}",
        "small_model": f"{PROVIDER}/{model}",
        "permission": {"edit": "deny", "bash": "deny", "webfetch": "deny"},
        "mcp": {},
        "autoupdate": False,
        "share": "disabled",
        "lsp": False,
        "formatter": False,
    }


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def event_of(line: str) -> dict[str, Any] | None:
    """The page's message for one line of OpenCode's JSON output, or None."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict):
        return None
    part = _mapping(event.get("part"))
    kind = event.get("type")
    if kind == "text" and str(part.get("text", "")).strip():
        return {"type": "text", "text": str(part["text"])[:CLIP]}
    if kind == "tool_use":
        state = _mapping(part.get("state"))
        output = state.get("error") if state.get("status") == "error" else state.get("output")
        return {
            "type": "tool",
            "name": str(part.get("tool") or ""),
            "status": str(state.get("status") or ""),
            "input": json.dumps(state.get("input"))[:CLIP],
            "output": str(output or "")[:CLIP],
        }
    if kind == "error":
        error = _mapping(event.get("error"))
        data = _mapping(error.get("data"))
        message = str(data.get("message") or error.get("name") or "error")
        return {"type": "error", "message": message[:CLIP]}
    return None


@dataclass(eq=False)
class Assistant:
    """One panel's assistant: its key, its private OpenCode home, its questions."""

    backend: Backend
    handle: RunHandle
    workdir: str | None
    session: ModelSession
    home: str
    asked: int = 0

    @classmethod
    def open(
        cls, backend: Backend, handle: RunHandle, model: str, workdir: str | None
    ) -> Assistant:
        """Make the assistant's key (blocking: the proxy's admin API)."""
        plan = plan_model_access(model, ASSISTANT_BUDGET_USD, backend.proxy())
        session = plan.open(f"{handle.run_id}-assistant", lambda line: LOG.info("%s", line))
        home = f"/tmp/ssebench-assistant-{secrets.token_hex(8)}"
        return cls(backend, handle, workdir, session, home)

    def environment(self) -> dict[str, str]:
        """What the exec command's process gets; the container gets the NAMES' values."""
        base = {key: value for key, value in os.environ.items() if key != TOKEN_VARIABLE}
        config = configuration(self.session.service_url, self.session.key.model)
        return {
            **base,
            **QUIET_SETTINGS,
            **{name: f"{self.home}/{name.lower()}" for name in HOME_VARIABLES},
            CONFIG_VARIABLE: json.dumps(config),
            KEY_VARIABLE: self.session.key.secret,
        }

    def argv(self) -> list[str]:
        names: Sequence[str] = [
            *QUIET_SETTINGS,
            *HOME_VARIABLES,
            CONFIG_VARIABLE,
            KEY_VARIABLE,
        ]
        command = [OPENCODE, "run", "--format", "json"]
        if self.asked:
            command.append("--continue")  # the same session: it remembers the last answers
        return self.backend.exec_argv(
            self.handle, command, user="model", workdir=self.workdir, stdin=True, env_names=names
        )

    async def ask(self, question: str, send: Callable[[dict[str, Any]], Awaitable[None]]) -> int:
        """Run one question to its end, sending what OpenCode reports; its exit status."""
        process = await asyncio.create_subprocess_exec(
            *self.argv(),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=self.environment(),
            start_new_session=True,
        )
        self.asked += 1
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(question.encode())
        await process.stdin.drain()
        process.stdin.close()
        try:
            while line := await process.stdout.readline():
                message = event_of(line.decode(errors="replace"))
                if message is not None:
                    await send(message)
            return await process.wait()
        finally:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()

    def close(self) -> None:
        """Revoke the key (best effort, once); blocking."""
        self.session.finish(lambda line: LOG.info("assistant of %s: %s", self.handle.run_id, line))


class Panels:
    """The open panels' assistants, so that the server's end revokes every key."""

    def __init__(self) -> None:
        self.open: set[Assistant] = set()

    def close_all(self) -> None:
        for assistant in list(self.open):
            self.open.discard(assistant)
            assistant.close()


async def converse(
    websocket: WebSocket,
    assistant: Assistant,
    still_running: Callable[[], Awaitable[bool]],
) -> None:
    """Answer the page's questions until it goes away or the run stops running."""

    async def send(message: dict[str, Any]) -> None:
        await websocket.send_text(json.dumps(message))

    await send(
        {
            "type": "ready",
            "managed_key": assistant.session.key.managed,
            "budget": assistant.session.key.budget,
        }
    )

    async def questions() -> None:
        while True:
            try:
                message = json.loads(await websocket.receive_text())
            except ValueError:
                continue
            text = message.get("text") if isinstance(message, dict) else None
            if not isinstance(text, str) or not text.strip() or message.get("type") != "ask":
                continue
            if len(text) > MAX_QUESTION_CHARS:
                await send(
                    {"type": "error", "message": f"Ask in at most {MAX_QUESTION_CHARS} characters"}
                )
                continue
            try:
                code = await assistant.ask(text, send)
            except (SsebenchError, OSError) as error:
                await send({"type": "error", "message": f"OpenCode did not start: {error}"})
                continue
            await send({"type": "done", "code": code})

    async def watch_run() -> None:
        while await still_running():
            await asyncio.sleep(RUN_CHECK_SECONDS)

    talking = asyncio.create_task(questions())
    watching = asyncio.create_task(watch_run())
    try:
        await asyncio.wait({talking, watching}, return_when=asyncio.FIRST_COMPLETED)
        if watching.done() and not talking.done():
            with contextlib.suppress(Exception):
                await send(
                    {"type": "error", "message": "The run stopped: the assistant's key is revoked"}
                )
    finally:
        for task in (talking, watching):
            task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.gather(talking, watching, return_exceptions=True)
        if websocket.client_state == WebSocketState.CONNECTED:
            with contextlib.suppress(WebSocketDisconnect, RuntimeError):
                await websocket.close()
