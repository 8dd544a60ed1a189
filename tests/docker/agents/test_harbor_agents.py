"""The four upstream agents on an imported Harbor task (hello-world of
tests/docker/harbor_dataset.py), each driven by a scripted model through the real
LiteLLM proxy: each writes the file the task asks for with its own tool, and the task's
own tests grade the container's final state with a reward of 1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.docker.agents.agent_runs import run_agent, tool_call
from tests.docker.model_stack import ModelStack

pytestmark = pytest.mark.docker

TASK = "hello-world"
HELLO = "Hello, world!\n"
WRITE_IT = "echo 'Hello, world!' > hello.txt"
DONE = {"content": "Done: /app/hello.txt says Hello, world!"}


def said(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "content": "I will write the file.",
        "tool_calls": [tool_call(call_id, name, arguments)],
    }


# Each agent's turns, in its own tools (as in its own test file).
SCRIPTS: dict[str, Any] = {
    "claude-code": [
        said("call-write", "Write", {"file_path": "/app/hello.txt", "content": HELLO}),
        DONE,
    ],
    "codex": [said("call-write", "exec_command", {"cmd": WRITE_IT}), DONE],
    "mini-swe-agent": [
        said("call-write", "bash", {"command": WRITE_IT}),
        said("call-submit", "bash", {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}),
    ],
    "opencode": {
        "turns": [
            said("call-write", "write", {"filePath": "/app/hello.txt", "content": HELLO}),
            DONE,
        ],
        "side": [{"contains": "You are a title generator", "turn": {"content": "Hello"}}],
    },
}


@pytest.mark.parametrize("agent", sorted(SCRIPTS))
def test_an_upstream_agent_solves_a_harbor_task_graded_by_its_reward(
    model_stack: ModelStack, harbor_dataset: Path, tmp_path: Path, agent: str
) -> None:
    model = model_stack.script(f"{agent}-harbor", SCRIPTS[agent])
    run = run_agent(
        model_stack, agent, model, tmp_path / "results", dataset=harbor_dataset, task=TASK
    )
    result = json.loads((run.run_dir / "result.json").read_text())
    assert (run.status, result["reward"]) == ("passed", {"reward": 1.0}), run.output[-4000:]
    prompt = next(event for event in run.agent_events() if event["type"] == "prompt")
    assert 'Create a file called hello.txt with "Hello, world!"' in str(prompt["text"])
    assert "+Hello, world!" in (run.run_dir / "final.patch").read_text()
