"""`ssebench proxy`: the local LiteLLM stack (deploy/compose/) and the models it serves."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from typing import Any

from ssebench.cli.output import print_json
from ssebench.proxy import LocalStack, ModelCatalog


def _say(message: str) -> None:
    print(f"ssebench: {message}", file=sys.stderr, flush=True)


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "proxy",
        help="the local LiteLLM proxy stack",
        description="Run the local LiteLLM stack (the proxy and its Postgres, Compose "
        "project ssebench). Needs LITELLM_MASTER_KEY, and the provider keys of the "
        "models you use, in the environment.",
    )
    actions = parser.add_subparsers(dest="proxy_action", metavar="ACTION")
    actions.required = True
    up = actions.add_parser("up", help="build what is missing and start the stack")
    up.add_argument(
        "--no-database",
        action="store_true",
        help="run the proxy without Postgres: it then cannot make per-run keys "
        "(also SSEBENCH_PROXY_DATABASE=0)",
    )
    up.set_defaults(handler=up_command)
    down = actions.add_parser("down", help="stop and remove the stack's containers")
    down.set_defaults(handler=down_command)
    status = actions.add_parser("status", help="whether the proxy runs and answers")
    status.add_argument("--json", action="store_true")
    status.set_defaults(handler=status_command)
    build = actions.add_parser("build", help="build the stack's images")
    build.add_argument(
        "--no-database",
        action="store_true",
        help="the proxy's image without LiteLLM's Prisma client (which needs downloads "
        "from Prisma's servers) and no Postgres image",
    )
    build.set_defaults(handler=build_command)
    config = actions.add_parser("config", help="print the proxy configuration made from models/")
    config.set_defaults(handler=config_command)
    models = actions.add_parser("models", help="list the models runs may use")
    models.add_argument("--json", action="store_true")
    models.set_defaults(handler=models_command)


def _database(arguments: argparse.Namespace) -> bool | None:
    return False if getattr(arguments, "no_database", False) else None


def up_command(arguments: argparse.Namespace) -> int:
    stack = LocalStack(database=_database(arguments), say=_say)
    status = stack.up(ModelCatalog.load())
    print(f"ready\t{status.host_url}")
    return 0


def down_command(arguments: argparse.Namespace) -> int:
    LocalStack(say=_say).down()
    print("down")
    return 0


def status_command(arguments: argparse.Namespace) -> int:
    status = LocalStack().status()
    if arguments.json:
        print_json(asdict(status))
    else:
        state = "ready" if status.healthy else ("starting" if status.running else "stopped")
        containers = ", ".join(f"{name} {state}" for name, state in status.containers.items())
        print(f"{state}\t{status.host_url}\t{containers or 'no containers'}")
    return 0 if status.healthy else 3


def build_command(arguments: argparse.Namespace) -> int:
    for service, image in LocalStack(database=_database(arguments), say=_say).build().items():
        print(f"{service}\t{image}")
    return 0


def config_command(arguments: argparse.Namespace) -> int:
    sys.stdout.write(ModelCatalog.load().litellm_config_text())
    return 0


def models_command(arguments: argparse.Namespace) -> int:
    catalog = ModelCatalog.load()
    entries = [catalog.get(name) for name in catalog.names]
    if arguments.json:
        print_json(
            {
                "models": [
                    {
                        "name": model.name,
                        "provider": model.provider,
                        "key_variable": model.key_variable,
                        "litellm_model": model.litellm_model,
                    }
                    for model in entries
                ]
            }
        )
    else:
        for model in entries:
            print(f"{model.name}\t{model.provider}\t{model.key_variable or 'no key'}")
    return 0
