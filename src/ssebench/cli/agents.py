"""`ssebench agents list`: every agent ssebench can run, and where it comes from."""

from __future__ import annotations

import argparse
from typing import Any

from ssebench.agents import discover_agents
from ssebench.cli.output import print_json, print_table
from ssebench.cli.run import add_agents_dir_option


def register(commands: Any) -> None:
    parser = commands.add_parser("agents", help="the agents ssebench can run")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    listing = actions.add_parser(
        "list",
        help="list the agents",
        description="List the built-in agents, those of --agents-dir and "
        "$SSEBENCH_AGENTS_PATH, and those of installed extensions (entry point group "
        "ssebench.agents), with their versions and the upstream program each wraps.",
    )
    add_agents_dir_option(listing)
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=list_command)


def list_command(arguments: argparse.Namespace) -> int:
    agents = sorted(discover_agents(arguments.agents_dir), key=lambda agent: agent.name)
    if arguments.json:
        print_json({"agents": [agent.summary() for agent in agents]})
        return 0
    print_table(
        ("AGENT", "VERSION", "UPSTREAM", "UPSTREAM VERSION", "MODEL", "API", "FROM"),
        [
            (
                agent.name,
                agent.version,
                f"{agent.upstream.registry}:{agent.upstream.package}" if agent.upstream else None,
                agent.upstream.version if agent.upstream else None,
                "yes" if agent.needs_model else "no",
                agent.api,
                agent.origin if agent.origin != "folder" else f"folder ({agent.path})",
            )
            for agent in agents
        ],
    )
    return 0
