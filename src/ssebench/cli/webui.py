"""`ssebench webui`: the web UI, on 127.0.0.1:3001 unless told otherwise (docs/webui.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ssebench.backends import selected_backend_name
from ssebench.cli.run import add_agents_dir_option
from ssebench.errors import UserError
from ssebench.webui.settings import DEFAULT_HOST, DEFAULT_PORT, load_settings


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "webui",
        help="watch, read, launch and reach runs in a browser",
        description="Serve the web UI. The token comes from $SSEBENCH_WEBUI_TOKEN, never "
        "from the command line; it is required to listen on anything but loopback. "
        "Also: SSEBENCH_WEBUI_HOSTED, SSEBENCH_WEBUI_TERMINAL, "
        "SSEBENCH_WEBUI_CORS_ORIGINS, SSEBENCH_BACKEND.",
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"default {DEFAULT_HOST}")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    parser.add_argument(
        "--results", default="results", metavar="DIR", help="the results folder (./results)"
    )
    parser.add_argument(
        "--local",
        metavar="DIR",
        help="the launcher's dataset (default: the catalog service of $SSEBENCH_CATALOG, "
        "else $SSEBENCH_DATASET or ./datasets/pilot)",
    )
    parser.add_argument(
        "--backend", help="docker (default), kubernetes, ...; also $SSEBENCH_BACKEND"
    )
    add_agents_dir_option(parser)
    parser.set_defaults(handler=webui_command)


def webui_command(arguments: argparse.Namespace) -> int:
    settings = load_settings(
        host=arguments.host,
        port=arguments.port,
        results=Path(arguments.results),
        dataset=arguments.local,
        backend=selected_backend_name(arguments.backend),
        agents_dirs=tuple(Path(folder) for folder in arguments.agents_dir),
    )
    try:
        import uvicorn

        from ssebench.webui.app import create_app
    except ImportError as error:
        raise UserError(
            f"The web UI needs its extra ({error.name} is missing): pip install 'ssebench[webui]'"
        ) from None
    app = create_app(settings)
    mode = "hosted (read-only)" if settings.hosted else "full"
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    print(f"ssebench webui: http://{host}:{settings.port} ({mode})", file=sys.stderr, flush=True)
    # uvicorn logs request lines (method, path, status), never headers: the token
    # travels only in the Authorization header or the WebSocket subprotocol.
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="info")
    return 0
