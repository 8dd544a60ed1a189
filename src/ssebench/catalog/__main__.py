"""`python -m ssebench.catalog --manifest FILE [--host H] [--port N]`: the catalog
service, as its image runs it (deploy/images/catalog.Dockerfile)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ssebench.catalog.server import make_server
from ssebench.errors import SsebenchError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ssebench-catalog", description=__doc__)
    parser.add_argument("--manifest", type=Path, required=True, help="the manifest.json to serve")
    parser.add_argument("--host", default="0.0.0.0", help="default 0.0.0.0 (all addresses)")
    parser.add_argument("--port", type=int, default=8080, help="default 8080")
    arguments = parser.parse_args(argv)
    try:
        server = make_server(arguments.manifest, arguments.host, arguments.port)
    except SsebenchError as error:
        print(f"ssebench-catalog: error: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"ssebench-catalog: error: cannot listen: {error.strerror}", file=sys.stderr)
        return 1
    print(
        f"ssebench-catalog: serving {arguments.manifest} on port {arguments.port}", file=sys.stderr
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
