"""The web UI's ASGI application: the page, its JSON API and the terminal's WebSocket.

Every request passes security.Guard first (token, Origin, Host, hosted mode). The API:

GET    /api/health                      hosted?, terminal?, does it need a token
GET    /api/runs                        the run list (filters, sort, paging)
POST   /api/runs                        launch {task, agent, model?, run_id?}
GET    /api/runs/{id}                   one run: grade, settings, timings
GET    /api/runs/{id}/dialog?since=N    its dialog events after N
GET    /api/runs/{id}/diff              its patch, as now (running) or as graded
GET    /api/runs/{id}/session           an opencode run's live session (port 4096)
GET    /api/runs/{id}/logs?file=NAME    a log file of its run directory
GET    /api/runs/{id}/logs?since=N      its container's output from line N on
POST   /api/runs/{id}/stop              stop it (it is graded and recorded)

Every POST takes Content-Type application/json and at most MAX_BODY_BYTES (api.py, json_body).
DELETE /api/runs/{id}                   remove its containers
GET    /api/launch                      what the launcher offers (tasks, agents, models)
GET    /api/evaluations                 the reports of `ssebench eval` in the results folder
GET    /api/evaluations/{name}          one report: tasks x (agent, model), statistics
GET    /api/evaluations/{name}/compare?with=OTHER[&first_entry=I&second_entry=J]
                                        two reports side by side: the tasks that flipped
WS     /api/runs/{id}/terminal          a shell in its container
WS     /api/runs/{id}/assistant         OpenCode answering questions about it (assistant.py)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable
from importlib.resources import files
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket

from ssebench import __version__
from ssebench.backends import load_backend
from ssebench.errors import SsebenchError, UserError
from ssebench.extensions import Backend
from ssebench.results.directory import check_run_id
from ssebench.webui.api import (
    ApiError,
    api_route,
    integer_param,
    json_answer,
    json_body,
)
from ssebench.webui.assistant import Assistant, Panels, converse, unavailable_reason
from ssebench.webui.catalog import SORT_KEYS, RunCatalog, RunRecord, results_root, row, select
from ssebench.webui.evaluations import Evaluations, ReportNotFound
from ssebench.webui.launcher import Launcher
from ssebench.webui.models import offered_models
from ssebench.webui.opencode_session import live_session
from ssebench.webui.security import APP_PROTOCOL, Guard, offered_protocols
from ssebench.webui.settings import WebSettings
from ssebench.webui.terminal import SHELL_COMMAND, PseudoTerminal, bridge, clamp_size
from ssebench.webui.watch import Watcher

STATIC = Path(str(files("ssebench.webui") / "static"))
STOP_GRACE_SECONDS = 30.0
TERMINAL_USERS = ("model", "root")
# How long the start waits for the backend's first listing (WebUI.lifespan).
WARM_UP_SECONDS = 15.0


class WebUI:
    """The state the routes share: the backend, the caches, the launches."""

    def __init__(self, settings: WebSettings, backend: Backend) -> None:
        self.settings = settings
        self.backend = backend
        self.results = results_root(settings.results)
        self.launcher = Launcher(settings, self.results)
        self.catalog = RunCatalog(backend, self.results, launching=self.launcher.starting)
        self.watcher = Watcher(backend)
        self.evaluations = Evaluations(self.results)
        self._background: set[asyncio.Task[None]] = set()
        self.assistants = Panels()

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """Lists the backend's runs once before the first request: the first listing
        pays for the backend's client (the Kubernetes client's import and configuration
        take seconds on a loaded machine), which would otherwise make the first page
        slow. A backend that answers slowly delays the start by WARM_UP_SECONDS at most;
        its listing goes on, and the first request waits for it as it would have."""
        warm_up = asyncio.ensure_future(self._list_live_runs())
        self._background.add(warm_up)
        warm_up.add_done_callback(self._background.discard)
        # A listing that fails is said by the page (LiveRuns.error), not at the start.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(warm_up), WARM_UP_SECONDS)
        try:
            yield
        finally:
            # No assistant's key outlives the server.
            await asyncio.to_thread(self.assistants.close_all)

    async def _list_live_runs(self) -> None:
        await self.catalog.live.runs()

    @property
    def terminal_available(self) -> bool:
        return not self.settings.hosted and self.settings.terminal and self.backend.supports_exec

    def routes(self) -> list[Route | WebSocketRoute | Mount]:
        return [
            Route("/", self.page),
            Route("/api/health", api_route(self.health)),
            Route("/api/runs", api_route(self.list_runs), methods=["GET"]),
            Route("/api/runs", api_route(self.launch), methods=["POST"]),
            Route("/api/launch", api_route(self.launch_options)),
            Route("/api/evaluations", api_route(self.evaluation_list)),
            Route("/api/evaluations/{name}", api_route(self.evaluation)),
            Route("/api/evaluations/{name}/compare", api_route(self.evaluation_comparison)),
            Route("/api/runs/{run_id}", api_route(self.run_detail), methods=["GET"]),
            Route("/api/runs/{run_id}", api_route(self.remove), methods=["DELETE"]),
            Route("/api/runs/{run_id}/dialog", api_route(self.dialog)),
            Route("/api/runs/{run_id}/diff", api_route(self.diff)),
            Route("/api/runs/{run_id}/session", api_route(self.session)),
            Route("/api/runs/{run_id}/logs", api_route(self.logs)),
            Route("/api/runs/{run_id}/stop", api_route(self.stop), methods=["POST"]),
            WebSocketRoute("/api/runs/{run_id}/terminal", self.terminal),
            WebSocketRoute("/api/runs/{run_id}/assistant", self.assistant),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ]

    # -- the page --------------------------------------------------------------------

    async def page(self, request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"cache-control": "no-store"})

    async def health(self, request: Request) -> Response:
        return json_answer(
            {
                "ok": True,
                "version": __version__,
                "hosted": self.settings.hosted,
                "terminal": self.terminal_available,
                "launcher": not self.settings.hosted,
                "token_required": self.settings.token is not None,
                "backend": self.backend.name,
                "supports_exec": self.backend.supports_exec,
            }
        )

    # -- reading ---------------------------------------------------------------------

    async def _record(self, request: Request) -> RunRecord:
        run_id = request.path_params["run_id"]
        check_run_id(run_id)
        record = await self.catalog.find(run_id)
        if record is None:
            raise ApiError(404, f"No run with the ID {run_id!r}")
        return record

    async def list_runs(self, request: Request) -> Response:
        query = request.query_params
        sort = query.get("sort", "started_at")
        if sort not in SORT_KEYS:
            raise ApiError(400, f"sort must be one of {', '.join(SORT_KEYS)}")
        order = query.get("order", "desc")
        if order not in ("asc", "desc"):
            raise ApiError(400, "order must be asc or desc")
        self.launcher.reap()
        rows = [row(record) for record in await self.catalog.records()]
        if query.get("state") == "live":
            rows = [item for item in rows if item["state"] in ("running", "created", "starting")]
        filters = {key: query.get(key, "") for key in ("status", "task", "agent", "model")}
        if query.get("state") not in (None, "", "live"):
            filters["state"] = query["state"]
        selected = select(
            rows,
            filters=filters,
            query=query.get("q", ""),
            sort=sort,
            descending=order == "desc",
            limit=integer_param(request, "limit", 200),
            offset=integer_param(request, "offset", 0),
        )
        return json_answer({**selected, "backend_error": self.catalog.live.error})

    async def run_detail(self, request: Request) -> Response:
        record = await self._record(request)
        detail = await self.watcher.detail(record)
        detail["launch_output"] = self.launcher.output(record.run_id)
        detail["can_stop"] = not self.settings.hosted and (
            record.running or record.run_id in self.launcher.starting()
        )
        detail["can_remove"] = not self.settings.hosted and record.live is not None
        detail["terminal"] = self.terminal_available and record.running
        reason = self._assistant_refusal(record)
        detail["assistant"] = {"available": reason is None, "reason": reason}
        return json_answer(detail)

    async def dialog(self, request: Request) -> Response:
        record = await self._record(request)
        return json_answer(
            await self.watcher.dialog(record, max(0, integer_param(request, "since", 0)))
        )

    async def diff(self, request: Request) -> Response:
        record = await self._record(request)
        return json_answer(await self.watcher.diff(record))

    async def session(self, request: Request) -> Response:
        record = await self._record(request)
        return json_answer(await live_session(self.backend, record))

    async def logs(self, request: Request) -> Response:
        record = await self._record(request)
        name = request.query_params.get("file")
        if name:
            return json_answer(await self.watcher.log_file(record, name))
        since = max(0, integer_param(request, "since", 0))
        return json_answer(await asyncio.to_thread(self.watcher.container_output, record, since))

    # -- evaluations (read-only, so shown in hosted mode too) --------------------------

    async def evaluation_list(self, request: Request) -> Response:
        return json_answer(await asyncio.to_thread(self.evaluations.listing))

    async def evaluation(self, request: Request) -> Response:
        name = request.path_params["name"]
        try:
            return json_answer(await asyncio.to_thread(self.evaluations.view, name))
        except ReportNotFound as error:
            raise ApiError(404, str(error)) from None

    async def evaluation_comparison(self, request: Request) -> Response:
        other = request.query_params.get("with", "")
        if not other:
            raise ApiError(400, "Name the report to compare with: ?with=eval-....json")
        entries = [
            None if request.query_params.get(key) in (None, "") else integer_param(request, key, 0)
            for key in ("first_entry", "second_entry")
        ]
        try:
            comparison = await asyncio.to_thread(
                self.evaluations.comparison,
                request.path_params["name"],
                other,
                entries[0],
                entries[1],
            )
        except ReportNotFound as error:
            raise ApiError(404, str(error)) from None
        return json_answer(comparison)

    # -- acting (never in hosted mode; Guard refuses the methods, these the rest) ------

    def _not_hosted(self, what: str) -> None:
        if self.settings.hosted:
            raise ApiError(403, f"Hosted mode: {what} is turned off")

    async def launch_options(self, request: Request) -> Response:
        self._not_hosted("the launcher")
        options = await asyncio.to_thread(self.launcher.options)
        options["models"] = await asyncio.to_thread(self._models)
        return json_answer(options)

    def _models(self) -> dict[str, Any]:
        try:
            backend_proxy = self.backend.proxy()
        except SsebenchError as error:
            return {"source": "proxy", "models": [], "problem": str(error)}
        return offered_models(backend_proxy)

    async def launch(self, request: Request) -> Response:
        self._not_hosted("the launcher")
        data = await json_body(request)
        if not isinstance(data, dict):
            raise ApiError(400, "The body must be a JSON object")
        values: dict[str, str | None] = {}
        for key, required in (("task", True), ("agent", True), ("model", False), ("run_id", False)):
            value = data.get(key)
            if value in (None, "") and not required:
                values[key] = None
            elif isinstance(value, str) and value:
                values[key] = value
            else:
                raise ApiError(400, f"{key} must be a non-empty string")
        if values["run_id"] is not None and await self.catalog.find(values["run_id"]):
            raise ApiError(409, f"A run with the ID {values['run_id']!r} exists")
        launch = await asyncio.to_thread(
            self.launcher.launch,
            task=str(values["task"]),
            agent=str(values["agent"]),
            model=values["model"],
            run_id=values["run_id"],
        )
        self.catalog.forget()
        return json_answer({"run_id": launch.run_id}, 202)

    async def stop(self, request: Request) -> Response:
        self._not_hosted("stopping runs")
        await json_body(request)  # no fields, but the same rules as every POST
        record = await self._record(request)
        if self.launcher.interrupt(record.run_id):
            # Its runner stops the container, waits for the grade and records the run.
            return json_answer({"run_id": record.run_id, "stopping": True}, 202)
        if record.live is None:
            raise ApiError(409, "The run has no container to stop")
        handle = record.live.handle
        self._in_background(asyncio.to_thread(self.backend.stop, handle, STOP_GRACE_SECONDS))
        return json_answer({"run_id": record.run_id, "stopping": True}, 202)

    async def remove(self, request: Request) -> Response:
        self._not_hosted("removing runs")
        record = await self._record(request)
        if record.live is None:
            raise ApiError(409, "The run has no container to remove; its results stay")
        self.launcher.interrupt(record.run_id)
        handle = record.live.handle
        await asyncio.to_thread(self.backend.stop, handle, 0)
        await asyncio.to_thread(self.backend.cleanup, handle)
        self.catalog.forget()
        return json_answer({"run_id": record.run_id, "removed": True})

    def _in_background(self, work: Awaitable[None]) -> None:
        async def run() -> None:
            with contextlib.suppress(SsebenchError):
                await work
            self.catalog.forget()

        task = asyncio.ensure_future(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- the terminal ------------------------------------------------------------------

    async def terminal(self, websocket: WebSocket) -> None:
        # Refusing before accept answers the handshake with HTTP 403.
        if not self.terminal_available:
            await websocket.close(code=1008)
            return
        run_id = websocket.path_params["run_id"]
        user = websocket.query_params.get("user", "model")
        try:
            check_run_id(run_id)
        except UserError:
            await websocket.close(code=1008)
            return
        record = await self.catalog.find(run_id)
        if (
            record is None
            or record.live is None
            or not record.running
            or user not in TERMINAL_USERS
        ):
            await websocket.close(code=1008)
            return
        cols, rows = clamp_size(
            websocket.query_params.get("cols"), websocket.query_params.get("rows")
        )
        try:
            argv = self.backend.exec_argv(
                record.live.handle,
                SHELL_COMMAND,
                user=user,
                workdir=self.launcher.source_dir(str(row(record)["task"])),
                tty=True,
                stdin=True,
            )
            pseudo_terminal = PseudoTerminal(argv, cols, rows)
        except (SsebenchError, OSError):
            await websocket.close(code=1011)
            return
        protocol = APP_PROTOCOL if APP_PROTOCOL in offered_protocols(websocket.headers) else None
        await websocket.accept(subprotocol=protocol)
        await bridge(websocket, pseudo_terminal)

    # -- the assistant -----------------------------------------------------------------

    def _assistant_refusal(self, record: RunRecord) -> str | None:
        return unavailable_reason(
            hosted=self.settings.hosted,
            backend=self.backend,
            run_id=record.run_id,
            agent=str(row(record).get("agent") or ""),
            running=record.running,
        )

    async def assistant(self, websocket: WebSocket) -> None:
        run_id = websocket.path_params["run_id"]
        try:
            check_run_id(run_id)
        except UserError:
            await websocket.close(code=1008)
            return
        record = await self.catalog.find(run_id)
        # Refusing before accept answers the handshake with HTTP 403; the page shows
        # the reason from the run's detail instead of opening the panel.
        if record is None or record.live is None or self._assistant_refusal(record) is not None:
            await websocket.close(code=1008)
            return
        model = str(row(record).get("model") or "")
        if not model:
            await websocket.close(code=1008)
            return
        protocol = APP_PROTOCOL if APP_PROTOCOL in offered_protocols(websocket.headers) else None
        await websocket.accept(subprotocol=protocol)
        handle = record.live.handle
        workdir = self.launcher.source_dir(str(row(record)["task"]))
        try:
            helper = await asyncio.to_thread(Assistant.open, self.backend, handle, model, workdir)
        except SsebenchError as error:
            with contextlib.suppress(Exception):
                await websocket.send_text(json.dumps({"type": "error", "message": str(error)}))
                await websocket.close()
            return
        self.assistants.open.add(helper)

        async def still_running() -> bool:
            self.catalog.forget()
            found = await self.catalog.find(run_id)
            return found is not None and found.running

        try:
            await converse(websocket, helper, still_running)
        finally:
            self.assistants.open.discard(helper)
            # Shielded: a cancelled handler (the page went away) still revokes the key.
            await asyncio.shield(asyncio.to_thread(helper.close))


def create_app(settings: WebSettings, backend: Backend | None = None) -> Starlette:
    """The application; the backend is loaded from settings.backend unless given."""
    web = WebUI(settings, backend or load_backend(settings.backend))
    app = Starlette(
        routes=web.routes(),
        middleware=[Middleware(Guard, settings=settings)],
        lifespan=web.lifespan,
    )
    app.state.web = web
    return app
