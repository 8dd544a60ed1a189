"""Agents: what an agent is (a folder with agent.json), and where ssebench finds them.

An agent folder holds
    agent.json          name, description, needs_model, optionally version (default:
                        ssebench's, release_version()), and for a wrapped upstream
                        agent "api" and "upstream" {registry, package, version}
    run                 the program the agent layer makes the image's command
    install.Dockerfile  optional: builds the task-independent install image whose
                        /opt/ssebench/agent-install/ the agent layer copies in

Where agents come from (docs/agents.md), in this order:
    builtin     the folders beside this file
    folder      each --agents-dir DIR, then each folder of $SSEBENCH_AGENTS_PATH
    extension   each entry point of the group `ssebench.agents` (sorted by name)
A DIR (or an entry point's folder) is either one agent folder (it holds agent.json) or a
folder of agent folders. Two different folders that define the same name are refused,
whichever they are: a user's folder never silently replaces a built-in agent (the
reference agent is given the task's reference patch).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ssebench.errors import UserError
from ssebench.host import entry_points as installed
from ssebench.host.entry_points import EntryPoint

AGENTS_DIR = Path(__file__).parent
REFERENCE = "reference"
AGENT_FILE = "agent.json"
INSTALL_DOCKERFILE = "install.Dockerfile"
PATH_VARIABLE = "SSEBENCH_AGENTS_PATH"
ENTRY_POINT_GROUP = "ssebench.agents"
APIS = ("anthropic-messages", "openai-responses", "openai-chat")
REGISTRIES = ("npm", "pypi")
# What an image tag may be (the agent's version tags its images).
TAG_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]*$")

Origin = Literal["builtin", "folder", "extension"]


@dataclass(frozen=True)
class Upstream:
    """The upstream program an agent wraps, pinned: its package registry, name, version."""

    registry: str
    package: str
    version: str


@dataclass(frozen=True)
class Agent:
    name: str
    version: str
    description: str
    path: Path
    needs_model: bool
    api: str | None = None
    upstream: Upstream | None = None
    origin: Origin = "builtin"
    # Where it was found, for people: the folder's option/variable or the entry point.
    found_by: str = "builtin"

    @property
    def is_reference(self) -> bool:
        # Only the package's own reference agent gets the task's reference patch.
        return self.name == REFERENCE and self.origin == "builtin"

    @property
    def install_dockerfile(self) -> Path | None:
        path = self.path / INSTALL_DOCKERFILE
        return path if path.is_file() else None

    def summary(self) -> dict[str, Any]:
        """What `ssebench agents list --json` shows of the agent."""
        return {
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "needs_model": self.needs_model,
            "api": self.api,
            "upstream": None
            if self.upstream is None
            else {
                "registry": self.upstream.registry,
                "package": self.upstream.package,
                "version": self.upstream.version,
            },
            "install_image": self.install_dockerfile is not None,
            "origin": self.origin,
            "found_by": self.found_by,
            "path": str(self.path),
        }


def release_version() -> str:
    """The version of this ssebench as an image tag: the version of a built-in agent,
    and of an agent whose agent.json sets none, so a release's images are
    <registry>/agent-<agent>/<task>:<release version> (a local version's "+" is no
    tag character, so it becomes "-")."""
    from ssebench import __version__

    return __version__.replace("+", "-")


# --- agent.json -----------------------------------------------------------------------


def _text(
    data: Mapping[str, Any], key: str, where: str, *, required: bool = True, within: str = ""
) -> str | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise UserError(f'{where}: {within}"{key}" must be a non-empty string')
    return value


def _upstream(value: object, where: str) -> Upstream | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise UserError(f'{where}: "upstream" must be an object {{registry, package, version}}')
    registry = _text(value, "registry", where, within="upstream ")
    if registry not in REGISTRIES:
        raise UserError(
            f'{where}: upstream "registry" must be one of {", ".join(REGISTRIES)}, not {registry!r}'
        )
    package = _text(value, "package", where, within="upstream ")
    version = _text(value, "version", where, within="upstream ")
    assert registry is not None and package is not None and version is not None
    return Upstream(registry=registry, package=package, version=version)


def read_agent(folder: Path, *, origin: Origin = "builtin", found_by: str = "builtin") -> Agent:
    """The agent of folder, checked. Raises UserError naming agent.json and the problem."""
    where = str(folder / AGENT_FILE)
    try:
        data = json.loads((folder / AGENT_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{where} is missing: an agent folder needs one") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"{where} cannot be read: {error}") from None
    except json.JSONDecodeError as error:
        raise UserError(f"{where} is not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise UserError(f"{where} must hold a JSON object")
    name = _text(data, "name", where)
    assert name is not None
    if not NAME_PATTERN.match(name):
        raise UserError(f"{where}: name {name!r} must be [a-z0-9][a-z0-9._-]*")
    version = _text(data, "version", where, required=False) or release_version()
    if not TAG_PATTERN.match(version):
        raise UserError(f'{where}: "version" {version!r} must be an image tag: [A-Za-z0-9_.-]')
    description = data.get("description", "")
    if not isinstance(description, str):
        raise UserError(f'{where}: "description" must be a string')
    needs_model = data.get("needs_model", False)
    if not isinstance(needs_model, bool):
        raise UserError(f'{where}: "needs_model" must be true or false')
    api = _text(data, "api", where, required=False)
    if api is not None and api not in APIS:
        raise UserError(f'{where}: "api" must be one of {", ".join(APIS)}, not {api!r}')
    if not (folder / "run").is_file():
        raise UserError(f"{folder} has no run program: an agent folder needs one")
    return Agent(
        name=name,
        version=version,
        description=description,
        path=folder,
        needs_model=needs_model,
        api=api,
        upstream=_upstream(data.get("upstream"), where),
        origin=origin,
        found_by=found_by,
    )


# --- where agents come from -----------------------------------------------------------


def agent_folders(root: Path) -> list[Path]:
    """root when it is an agent folder, else its sub-folders that hold agent.json."""
    if (root / AGENT_FILE).is_file():
        return [root]
    return sorted(child for child in root.iterdir() if (child / AGENT_FILE).is_file())


def _folder_agents(root: Path, *, origin: Origin, found_by: str) -> list[Agent]:
    if not root.is_dir():
        raise UserError(f"{found_by} names {root}, which is not a folder")
    # Absolute: the folder is a build context, and a launched run may start elsewhere.
    folders = agent_folders(root.resolve())
    return [read_agent(folder, origin=origin, found_by=found_by) for folder in folders]


def user_folders(
    agents_dirs: Sequence[str | Path] = (), environment: Mapping[str, str] | None = None
) -> list[tuple[Path, str]]:
    """The user's agent folders, each with what named it: --agents-dir first, then
    $SSEBENCH_AGENTS_PATH (os.pathsep-separated; empty entries are ignored)."""
    environment = os.environ if environment is None else environment
    folders = [(Path(folder), "--agents-dir") for folder in agents_dirs]
    for entry in environment.get(PATH_VARIABLE, "").split(os.pathsep):
        if entry.strip():
            folders.append((Path(entry), f"${PATH_VARIABLE}"))
    return folders


def _entry_point_folder(entry_point: EntryPoint) -> Path:
    """The folder an entry point gives: a path, or a callable that returns one."""
    label = f"entry point {entry_point.name!r} ({entry_point.value}) of {ENTRY_POINT_GROUP}"
    try:
        value = entry_point.load()
        if callable(value):
            value = value()
    except Exception as error:  # a broken extension is named, not a traceback
        raise UserError(f"The {label} failed to load: {type(error).__name__}: {error}") from None
    if not isinstance(value, str | os.PathLike):
        raise UserError(f"The {label} must give a folder path, not {type(value).__name__}")
    return Path(value)


def entry_points(*, group: str) -> Iterable[EntryPoint]:
    """The entry points of group, read without importlib.metadata, whose import (email,
    zipfile, ...) costs a run's start-up more than reading them (ssebench.host.entry_points)."""
    return installed.entry_points(group)


def _extension_agents() -> list[Agent]:
    found: list[Agent] = []
    for entry_point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        folder = _entry_point_folder(entry_point)
        found_by = f"entry point {entry_point.name}"
        found.extend(_folder_agents(folder, origin="extension", found_by=found_by))
    return found


def builtin_agents() -> list[Agent]:
    """The agents shipped in the package. They are read from its folder directly, not
    through the entry point group, so an install with stale metadata still has them."""
    return [read_agent(folder) for folder in agent_folders(AGENTS_DIR)]


def _unique(agents: Iterable[Agent]) -> list[Agent]:
    """agents without repeats of one folder; refuses one name from two folders."""
    by_name: dict[str, Agent] = {}
    for agent in agents:
        known = by_name.get(agent.name)
        if known is None:
            by_name[agent.name] = agent
        elif known.path.resolve() != agent.path.resolve():
            raise UserError(
                f"Two agents are named {agent.name!r}: {known.path} ({known.found_by}) and "
                f"{agent.path} ({agent.found_by}); rename one in its agent.json"
            )
    return list(by_name.values())


def discover_agents(
    agents_dirs: Sequence[str | Path] = (), environment: Mapping[str, str] | None = None
) -> list[Agent]:
    """Every agent: built-in, the user's folders, then extensions. Raises UserError."""
    found = builtin_agents()
    for folder, found_by in user_folders(agents_dirs, environment):
        found.extend(_folder_agents(folder, origin="folder", found_by=found_by))
    found.extend(_extension_agents())
    return _unique(found)


def load_agent(
    name: str,
    agents_dirs: Sequence[str | Path] = (),
    environment: Mapping[str, str] | None = None,
) -> Agent:
    """The agent called name. Raises UserError listing the known ones when it is unknown."""
    agents = discover_agents(agents_dirs, environment)
    for agent in agents:
        if agent.name == name:
            return agent
    known = ", ".join(sorted(agent.name for agent in agents))
    raise UserError(
        f"Unknown agent {name!r}; the agents are: {known} "
        f"(add a folder with --agents-dir or ${PATH_VARIABLE})"
    )
