"""The web UI's launcher and the user's agent folders (`ssebench webui --agents-dir`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ssebench.errors import UserError
from ssebench.webui.launcher import Launcher
from ssebench.webui.settings import WebSettings, load_settings
from tests.conftest import PILOT_DATASET

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "agents"


def test_settings_keep_the_agent_folders_absolute(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(EXAMPLES.parent)
    settings = load_settings(
        host="127.0.0.1",
        port=3001,
        results=Path("results"),
        dataset=None,
        backend="docker",
        environment={},
        agents_dirs=(Path("agents"),),
    )
    assert settings.agents_dirs == (EXAMPLES,)


def test_launcher_offers_and_launches_a_user_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSEBENCH_AGENTS_PATH", raising=False)
    settings = WebSettings(dataset=str(PILOT_DATASET), backend="docker", agents_dirs=(EXAMPLES,))
    launcher = Launcher(settings, tmp_path)
    offered = {agent["name"]: agent for agent in launcher.options()["agents"]}
    assert offered["hello-agent"]["needs_model"] is False
    assert "reference" in offered
    argv = launcher.argv(run_id="r1", task="py-semver-prerelease", agent="hello-agent", model=None)
    assert "--agent=hello-agent" in argv and f"--agents-dir={EXAMPLES}" in argv
    # Without the folder the agent is unknown, and the launcher says which ones it has.
    plain = Launcher(WebSettings(dataset=str(PILOT_DATASET), backend="docker"), tmp_path)
    assert "hello-agent" not in {agent["name"] for agent in plain.options()["agents"]}
    with pytest.raises(UserError, match=r"Unknown agent 'hello-agent'; the agents are: .*dummy"):
        plain.argv(run_id="r2", task="py-semver-prerelease", agent="hello-agent", model=None)


def test_launcher_finds_agents_of_the_path_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSEBENCH_AGENTS_PATH", str(EXAMPLES))
    launcher = Launcher(WebSettings(dataset=str(PILOT_DATASET), backend="docker"), tmp_path)
    argv = launcher.argv(run_id="r1", task="py-semver-prerelease", agent="hello-agent", model=None)
    # The launched run inherits the variable; no option is needed.
    assert not [item for item in argv if item.startswith("--agents-dir")]
