"""The guide's example agent (docs/examples/agents/hello-agent), from a folder outside
the package, run end to end on a pilot task: once named by --agents-dir, once found
through $SSEBENCH_AGENTS_PATH. Its install image (cowsay from PyPI, hash-pinned) is
built once and its program runs in the task container."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli import last_line_verdict, run_arguments, ssebench
from tests.conftest import PILOT_DATASET
from tests.docker.conftest import new_run_id

pytestmark = pytest.mark.docker
EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "agents" / "hello-agent"
TASK = "py-semver-prerelease"


@pytest.fixture
def user_agents(tmp_path: Path) -> Path:
    """A user's own folder of agents, nowhere near the package."""
    folder = tmp_path / "my-agents"
    shutil.copytree(EXAMPLE, folder / "hello-agent")
    return folder


def run_hello(results: Path, *extra: str, env: dict[str, str] | None = None) -> Path:
    arguments = run_arguments(
        PILOT_DATASET, TASK, "hello-agent", new_run_id("hello"), results, *extra
    )
    done = ssebench(*arguments, env=env, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    status, run_dir = last_line_verdict(done.stdout)
    assert status == "failed"  # it says hello and fixes nothing
    return run_dir


def check_hello_run(run_dir: Path) -> None:
    assert run_dir.parent.parent.name == "none"  # no model
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["config"]["agent"] == "hello-agent"
    assert summary["status"] == "failed" and summary["exit_code"] == 0
    patch = (run_dir / "final.patch").read_text()
    # The program from the install image answered, and its answer is the patch.
    assert "+++ b/HELLO.txt" in patch and "Hello!" in patch
    dialog = [json.loads(line) for line in (run_dir / "archive" / "dialog.jsonl").open()]
    agent_events = [event for event in dialog if event.get("source") == "agent"]
    kinds = [event["type"] for event in agent_events]
    assert kinds == ["prompt", "tool", "tool", "message", "complete"], kinds
    prompt, running, done, message, complete = agent_events
    assert "Fix the issue below" in prompt["text"]
    assert (running["name"], running["status"]) == ("cowsay", "running")
    assert done["status"] == "success" and "Hello!" in done["output"]
    assert "fix nothing" in message["text"]
    assert (complete["status"], complete["reason"]) == ("success", "said hello")


def test_outside_agent_by_agents_dir(user_agents: Path, tmp_path: Path) -> None:
    run_dir = run_hello(tmp_path / "results", "--agents-dir", str(user_agents))
    check_hello_run(run_dir)


def test_outside_agent_by_agents_path(user_agents: Path, tmp_path: Path) -> None:
    environment = {"SSEBENCH_AGENTS_PATH": f"{tmp_path / 'elsewhere'}:{user_agents}"}
    (tmp_path / "elsewhere").mkdir()
    run_dir = run_hello(tmp_path / "results", env=environment)
    check_hello_run(run_dir)
