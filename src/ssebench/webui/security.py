"""The checks every HTTP request and WebSocket goes through, before any route sees it.

In this order, so that a request from a foreign page learns nothing, not even whether
its token was right:

1. Host: on loopback, only a loopback name (a DNS-rebinding page sends its own name).
2. Origin: absent, or the request's own origin, or one of SSEBENCH_WEBUI_CORS_ORIGINS.
3. The token, when one is set: `Authorization: Bearer <token>`, or for a WebSocket,
   which a browser cannot give headers, the subprotocol `ssebench.token.<base64url>`.
   Compared in constant time. The page shell and its static files carry no data and
   are served without it: a browser navigation cannot send a header, and the page has
   to load before it can ask for the token.
4. Hosted mode: only GET and HEAD (and a CORS preflight from a listed origin).

Failures are 403 (Host, Origin, hosted) or 401 (token), as plain JSON, with no detail
that echoes what the request sent.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
from collections.abc import Iterable, Mapping

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ssebench.webui.settings import WebSettings, is_loopback, normalize_origin

TOKEN_PROTOCOL_PREFIX = "ssebench.token."
# The subprotocol the server answers with; the token's own never goes back.
APP_PROTOCOL = "ssebench.v1"
PUBLIC_PATHS = ("/", "/favicon.ico")
PUBLIC_PREFIXES = ("/static/",)
READ_METHODS = ("GET", "HEAD")
SECURITY_HEADERS = (
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:; "
        # xterm.js sets the terminal's size and colours through a style element.
        b"style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; "
        b"form-action 'self'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
)


def headers_of(scope: Scope) -> dict[str, str]:
    """The request's headers; a repeated one keeps its first value."""
    found: dict[str, str] = {}
    for key, value in scope.get("headers", []):
        found.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
    return found


def offered_protocols(headers: Mapping[str, str]) -> list[str]:
    return [word.strip() for word in headers.get("sec-websocket-protocol", "").split(",") if word]


def token_from_protocols(protocols: Iterable[str]) -> str | None:
    for protocol in protocols:
        if protocol.startswith(TOKEN_PROTOCOL_PREFIX):
            encoded = protocol[len(TOKEN_PROTOCOL_PREFIX) :]
            try:
                return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
            except (binascii.Error, UnicodeDecodeError, ValueError):
                return None
    return None


def token_matches(expected: str, given: str | None) -> bool:
    # compare_digest takes as long for a near miss as for a wild guess.
    return given is not None and hmac.compare_digest(expected.encode(), given.encode())


def _host_name(host_header: str) -> str:
    if host_header.startswith("["):
        return host_header[1 : host_header.find("]")] if "]" in host_header else ""
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


class Guard:
    """ASGI middleware that applies the checks above and adds security headers."""

    def __init__(self, app: ASGIApp, settings: WebSettings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = headers_of(scope)
        refusal = self.refusal(scope, headers)
        if refusal is not None:
            status, message = refusal
            await _refuse(scope, receive, send, status, message)
            return
        origin = headers.get("origin")
        cors_origin = self._listed_origin(origin)
        if scope["type"] == "http" and scope["method"] == "OPTIONS":
            await self._preflight(send, cors_origin)
            return
        await self.app(scope, receive, _with_headers(send, cors_origin))

    def refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        """(status, message) for a request that must not go through, else None."""
        host = headers.get("host", "")
        if self.settings.loopback_only and not is_loopback(_host_name(host)):
            return 403, "This host name is not served here"
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin, scope, host):
            return 403, "Cross-origin request refused"
        method = scope.get("method", "GET") if scope["type"] == "http" else "GET"
        preflight = method == "OPTIONS" and self._listed_origin(origin) is not None
        if self.settings.token is not None and not preflight and not _is_public(scope):
            given = (
                token_from_protocols(offered_protocols(headers))
                if scope["type"] == "websocket"
                else _bearer(headers)
            )
            if not token_matches(self.settings.token, given):
                return 401, "A valid token is required"
        if self.settings.hosted and method not in READ_METHODS and not preflight:
            return 403, "Hosted mode: this web UI only shows runs"
        return None

    def _origin_allowed(self, origin: str, scope: Scope, host: str) -> bool:
        try:
            normalized = normalize_origin(origin)
        except ValueError:
            return False
        if normalized in self.settings.cors_origins:
            return True
        scheme = {"ws": "http", "wss": "https"}.get(scope.get("scheme", ""), scope.get("scheme"))
        try:
            return normalized == normalize_origin(f"{scheme}://{host}")
        except ValueError:
            return False

    def _listed_origin(self, origin: str | None) -> str | None:
        if origin is None:
            return None
        try:
            normalized = normalize_origin(origin)
        except ValueError:
            return None
        return origin if normalized in self.settings.cors_origins else None

    async def _preflight(self, send: Send, cors_origin: str | None) -> None:
        methods = b"GET, HEAD" if self.settings.hosted else b"GET, HEAD, POST, DELETE"
        headers = [*SECURITY_HEADERS, (b"content-length", b"0")]
        if cors_origin is not None:
            headers += [
                (b"access-control-allow-origin", cors_origin.encode("latin-1")),
                (b"access-control-allow-methods", methods),
                (b"access-control-allow-headers", b"authorization, content-type"),
                (b"access-control-max-age", b"600"),
                (b"vary", b"origin"),
            ]
        await send({"type": "http.response.start", "status": 204, "headers": headers})
        await send({"type": "http.response.body", "body": b""})


def _is_public(scope: Scope) -> bool:
    path: str = scope.get("path", "")
    return scope["type"] == "http" and (
        path in PUBLIC_PATHS or any(path.startswith(prefix) for prefix in PUBLIC_PREFIXES)
    )


def _bearer(headers: dict[str, str]) -> str | None:
    scheme, _, value = headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def _with_headers(send: Send, cors_origin: str | None) -> Send:
    extra = list(SECURITY_HEADERS)
    if cors_origin is not None:
        extra += [
            (b"access-control-allow-origin", cors_origin.encode("latin-1")),
            (b"vary", b"origin"),
        ]

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return sending


async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [
        *SECURITY_HEADERS,
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
    ]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="ssebench"'))
    if scope["type"] == "websocket":
        await receive()  # the websocket.connect event comes first
        # Before accept, the denial-response extension sends a real HTTP status; without
        # it, closing the handshake makes the server answer 403.
        if "websocket.http.response" in scope.get("extensions", {}):
            await send(
                {"type": "websocket.http.response.start", "status": status, "headers": headers}
            )
            await send({"type": "websocket.http.response.body", "body": body})
        else:
            await send({"type": "websocket.close", "code": 1008})
        return
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
