"""The web UI's JSON API plumbing: errors as {"error": ...} answers, ASCII JSON (names
an agent chose may hold lone surrogates), bounded JSON request bodies."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ssebench.errors import SsebenchError, UserError

MAX_BODY_BYTES = 16 * 1024

Handler = Callable[[Request], Awaitable[Response]]


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class AsciiJSONResponse(JSONResponse):
    """JSON in ASCII: a lone surrogate (a byte that was not UTF-8 in a name the agent
    chose, or a \\udcff the agent wrote into its dialog) is sent as its \\u escape,
    which every JSON reader takes, instead of failing the UTF-8 encoding (a 500 that hid
    the run's page)."""

    def render(self, content: Any) -> bytes:
        return json.dumps(
            content, ensure_ascii=True, allow_nan=False, separators=(",", ":")
        ).encode("ascii")


def json_answer(data: Any, status: int = 200) -> JSONResponse:
    return AsciiJSONResponse(data, status_code=status, headers={"cache-control": "no-store"})


def api_route(handler: Handler) -> Handler:
    """Turn ApiError and ssebench's own errors into {"error": ...} answers."""

    async def handle(request: Request) -> Response:
        try:
            return await handler(request)
        except ApiError as error:
            return json_answer({"error": str(error)}, error.status)
        except UserError as error:
            return json_answer({"error": str(error)}, 400)
        except SsebenchError as error:
            return json_answer({"error": str(error)}, 502)

    return handle


async def json_body(request: Request) -> Any:
    """The request's JSON body (None when empty), for every POST route.

    Only application/json (415 otherwise): a page of another site cannot send that type
    without a preflight, and a form cannot send it at all. A body larger than
    MAX_BODY_BYTES is refused (413) from its Content-Length before a byte is read, or
    as soon as the stream passes the cap when no length was declared.
    """
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media_type != "application/json":
        raise ApiError(415, "Send the body as Content-Type: application/json")
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise ApiError(400, "Content-Length must be a whole number")
        if int(declared) > MAX_BODY_BYTES:
            raise ApiError(413, f"The request is larger than {MAX_BODY_BYTES} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > MAX_BODY_BYTES:
            raise ApiError(413, f"The request is larger than {MAX_BODY_BYTES} bytes")
    if not body.strip():
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        raise ApiError(400, "The body must be JSON") from None


def integer_param(request: Request, name: str, default: int) -> int:
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ApiError(400, f"{name} must be a whole number") from None
