"""The agent model (agent.json, checked) and where agents come from: built-in, the
user's folders (--agents-dir, $SSEBENCH_AGENTS_PATH) and extensions (entry points)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from ssebench import agents
from ssebench.agents import Upstream, discover_agents, load_agent, read_agent
from ssebench.errors import UserError

CLAUDE = {
    "name": "claude-x",
    "version": "2",
    "description": "wraps it",
    "needs_model": True,
    "api": "anthropic-messages",
    "upstream": {"registry": "npm", "package": "@anthropic-ai/claude-code", "version": "1.2.3"},
}


def make_agent(root: Path, data: dict[str, Any] | str, *, folder: str | None = None) -> Path:
    name = folder or (data["name"] if isinstance(data, dict) else "bad")
    path = root / name
    path.mkdir(parents=True)
    (path / "agent.json").write_text(data if isinstance(data, str) else json.dumps(data))
    (path / "run").write_text("#!/bin/sh\n")
    (path / "run").chmod(0o755)
    return path


@pytest.fixture(autouse=True)
def no_extensions(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[EntryPoint]]:
    """The entry points the tests give; none unless a test adds some."""
    given: list[EntryPoint] = []
    monkeypatch.setattr(
        agents, "entry_points", lambda group: [e for e in given if e.group == group]
    )
    monkeypatch.delenv(agents.PATH_VARIABLE, raising=False)
    yield given


def test_agent_json_with_api_and_upstream(tmp_path: Path) -> None:
    agent = read_agent(make_agent(tmp_path, CLAUDE), origin="folder", found_by="--agents-dir")
    assert agent.api == "anthropic-messages"
    assert agent.upstream == Upstream("npm", "@anthropic-ai/claude-code", "1.2.3")
    assert agent.needs_model and agent.origin == "folder"
    assert agent.install_dockerfile is None
    (agent.path / "install.Dockerfile").write_text("FROM scratch\n")
    assert agent.install_dockerfile == agent.path / "install.Dockerfile"


def test_the_builtin_agents_load() -> None:
    names = {agent.name for agent in agents.builtin_agents()}
    assert {"reference", "dummy", "mini", "sleeper"} <= names
    assert load_agent("mini").api == "openai-chat"
    assert load_agent("reference").is_reference


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"name": "Big"}, "name 'Big' must be"),
        ({"name": 3}, '"name" must be a non-empty string'),
        ({"version": ""}, '"version" must be a non-empty string'),
        ({"needs_model": "yes"}, '"needs_model" must be true or false'),
        ({"api": "smoke-signals"}, '"api" must be one of anthropic-messages'),
        ({"upstream": "npm"}, '"upstream" must be an object'),
        ({"upstream": {"registry": "cpan", "package": "x", "version": "1"}}, '"registry"'),
        ({"upstream": {"registry": "npm", "package": "x"}}, 'upstream "version" must be'),
        ({"description": ["a"]}, '"description" must be a string'),
    ],
)
def test_a_bad_agent_json_is_one_line_naming_the_file(
    tmp_path: Path, change: dict[str, Any], problem: str
) -> None:
    folder = make_agent(tmp_path, {**CLAUDE, **change}, folder="agent")
    with pytest.raises(UserError) as raised:
        read_agent(folder)
    message = str(raised.value)
    assert message.startswith(f"{folder / 'agent.json'}: ")
    assert problem in message and "\n" not in message


def test_agent_json_that_is_not_json_or_has_no_run(tmp_path: Path) -> None:
    folder = make_agent(tmp_path, "{not json", folder="agent")
    with pytest.raises(UserError, match=r"agent\.json is not valid JSON"):
        read_agent(folder)
    (folder / "agent.json").write_text("[]")
    with pytest.raises(UserError, match="must hold a JSON object"):
        read_agent(folder)
    (folder / "agent.json").write_text(json.dumps(CLAUDE))
    (folder / "run").unlink()
    with pytest.raises(UserError, match="has no run program"):
        read_agent(folder)


def test_agents_dir_is_a_folder_of_agents_or_one_agent(tmp_path: Path) -> None:
    make_agent(tmp_path / "many", CLAUDE)
    make_agent(tmp_path / "many", {**CLAUDE, "name": "other"})
    single = make_agent(tmp_path, {**CLAUDE, "name": "single"})
    found = {a.name: a for a in discover_agents([tmp_path / "many", single], environment={})}
    assert {"claude-x", "other", "single", "reference"} <= set(found)
    assert found["single"].origin == "folder" and found["single"].found_by == "--agents-dir"
    assert found["single"].path.is_absolute()


def test_agents_path_variable_is_pathsep_separated(tmp_path: Path) -> None:
    first = make_agent(tmp_path / "a", CLAUDE).parent
    second = make_agent(tmp_path / "b", {**CLAUDE, "name": "two"}).parent
    environment = {agents.PATH_VARIABLE: f"{first}{os.pathsep}{os.pathsep}{second}"}
    found = {a.name: a for a in discover_agents(environment=environment)}
    assert found["two"].found_by == "$SSEBENCH_AGENTS_PATH"
    assert found["claude-x"].path == first / "claude-x"
    assert [f for f, _ in agents.user_folders(["x"], environment)] == [Path("x"), first, second]


def test_a_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"--agents-dir names .*nope, which is not a folder"):
        discover_agents([tmp_path / "nope"], environment={})
    environment = {agents.PATH_VARIABLE: str(tmp_path / "gone")}
    with pytest.raises(UserError, match=r"\$SSEBENCH_AGENTS_PATH names .*gone"):
        discover_agents(environment=environment)


def test_a_user_folder_cannot_replace_a_builtin_agent(tmp_path: Path) -> None:
    make_agent(tmp_path, {"name": "reference", "version": "9"})
    with pytest.raises(UserError) as raised:
        load_agent("dummy", [tmp_path], environment={})
    message = str(raised.value)
    assert "Two agents are named 'reference'" in message
    assert "(builtin)" in message and "(--agents-dir)" in message


def test_one_folder_named_twice_is_one_agent(tmp_path: Path) -> None:
    make_agent(tmp_path, CLAUDE)
    environment = {agents.PATH_VARIABLE: str(tmp_path)}
    found = [a for a in discover_agents([tmp_path], environment) if a.name == "claude-x"]
    assert len(found) == 1 and found[0].found_by == "--agents-dir"


def test_an_unknown_agent_lists_the_known_ones(tmp_path: Path) -> None:
    make_agent(tmp_path, CLAUDE)
    with pytest.raises(UserError) as raised:
        load_agent("nobody", [tmp_path], environment={})
    message = str(raised.value)
    assert message.startswith("Unknown agent 'nobody'; the agents are: ")
    known = message.removeprefix("Unknown agent 'nobody'; the agents are: ").split(";")[0]
    assert {"claude-x", "dummy", "reference"} <= set(known.split(", "))
    assert "--agents-dir" in message and "\n" not in message


def test_only_the_builtin_reference_gets_the_reference_patch(tmp_path: Path) -> None:
    agent = read_agent(make_agent(tmp_path, {"name": "reference", "version": "1"}), origin="folder")
    assert not agent.is_reference


@pytest.fixture
def extension_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An importable module agents_ext whose FOLDER holds an agent folder."""
    root = tmp_path / "ext"
    make_agent(root / "agents", {**CLAUDE, "name": "from-ext"})
    (root / "agents_ext.py").write_text(
        "from pathlib import Path\n"
        "FOLDER = Path(__file__).parent / 'agents'\n"
        "def folder():\n    return str(FOLDER)\n"
        "NUMBER = 3\n"
        "def broken():\n    raise RuntimeError('no folder today')\n"
    )
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delitem(sys.modules, "agents_ext", raising=False)
    return root


@pytest.mark.parametrize("value", ["agents_ext:FOLDER", "agents_ext:folder"])
def test_an_entry_point_gives_a_folder(
    extension_module: Path, no_extensions: list[EntryPoint], value: str
) -> None:
    no_extensions.append(EntryPoint("myext", value, agents.ENTRY_POINT_GROUP))
    agent = load_agent("from-ext", environment={})
    assert agent.origin == "extension" and agent.found_by == "entry point myext"
    assert agent.path == extension_module / "agents" / "from-ext"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("agents_ext:broken", "failed to load: RuntimeError: no folder today"),
        ("agents_ext_missing:X", "failed to load: ModuleNotFoundError"),
        ("agents_ext:NUMBER", "must give a folder path, not int"),
    ],
)
def test_a_broken_entry_point_is_named(
    extension_module: Path, no_extensions: list[EntryPoint], value: str, problem: str
) -> None:
    no_extensions.append(EntryPoint("myext", value, agents.ENTRY_POINT_GROUP))
    with pytest.raises(UserError) as raised:
        discover_agents(environment={})
    assert f"The entry point 'myext' ({value}) of ssebench.agents" in str(raised.value)
    assert problem in str(raised.value)


def test_an_extension_cannot_replace_a_user_agent(
    tmp_path: Path, extension_module: Path, no_extensions: list[EntryPoint]
) -> None:
    make_agent(tmp_path / "mine", {**CLAUDE, "name": "from-ext"})
    no_extensions.append(EntryPoint("myext", "agents_ext:FOLDER", agents.ENTRY_POINT_GROUP))
    with pytest.raises(UserError, match=r"\(--agents-dir\) and .* \(entry point myext\)"):
        discover_agents([tmp_path / "mine"], environment={})


def test_the_version_tags_a_release_unless_the_agent_sets_its_own(tmp_path: Path) -> None:
    from ssebench import __version__
    from ssebench.agents import release_version

    assert release_version() == __version__.replace("+", "-")
    assert load_agent("reference", ()).version == release_version()
    own = read_agent(make_agent(tmp_path / "a", {"name": "mine", "version": "2.1"}))
    assert own.version == "2.1"
    unset = read_agent(make_agent(tmp_path / "b", {"name": "unset"}))
    assert unset.version == release_version()
    with pytest.raises(UserError, match=r'"version" .* must be an image tag'):
        read_agent(make_agent(tmp_path / "c", {"name": "bad", "version": "1.0+local"}))
