"""The built-in agents: one folder each, with agent.json (name, version, description)
and the `run` program that the agent layer makes the image's command."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ssebench.errors import UserError

AGENTS_DIR = Path(__file__).parent
REFERENCE = "reference"


@dataclass(frozen=True)
class Agent:
    name: str
    version: str
    description: str
    path: Path
    needs_model: bool

    @property
    def is_reference(self) -> bool:
        return self.name == REFERENCE


def _load(folder: Path) -> Agent:
    data = json.loads((folder / "agent.json").read_text(encoding="utf-8"))
    return Agent(
        name=str(data["name"]),
        version=str(data["version"]),
        description=str(data.get("description", "")),
        path=folder,
        needs_model=bool(data.get("needs_model", False)),
    )


def builtin_agents() -> list[Agent]:
    return [
        _load(folder) for folder in sorted(AGENTS_DIR.iterdir()) if (folder / "agent.json").exists()
    ]


def load_agent(name: str) -> Agent:
    for agent in builtin_agents():
        if agent.name == name:
            return agent
    known = ", ".join(agent.name for agent in builtin_agents())
    raise UserError(f"Unknown agent {name!r}; the agents are: {known}")
