"""mini-swe-agent, for real: its pinned install (install.Dockerfile) in the task's
container, driven through the real LiteLLM proxy by the scripted model server of
tests/docker/model_stack.py (turns with `bash` tool calls: mini-swe-agent 2's own
format), on the pilot task py-semver-prerelease."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PILOT_DATASET
from tests.docker.agents.agent_runs import (
    TASK,
    AgentRun,
    assert_key_is_nowhere,
    run_agent,
    tool_call,
)
from tests.docker.model_stack import ModelStack

pytestmark = pytest.mark.docker
AGENT = "mini-swe-agent"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def bash_turn(call_id: str, command: str, text: str | None = None) -> dict[str, Any]:
    return {"content": text, "tool_calls": [tool_call(call_id, "bash", {"command": command})]}


def solving_turns() -> list[dict[str, Any]]:
    patch = (PILOT_DATASET / TASK / "reference.patch").read_text()
    return [
        bash_turn(
            "call-read",
            "grep -n '_prerelease_key' -A6 semver/version.py",
            "I will look at how pre-release identifiers are compared.",
        ),
        bash_turn("call-check", "test_patch", "First, what do the checks say now?"),
        bash_turn(
            "call-edit",
            f"git apply <<'PATCH'\n{patch}PATCH",
            "Numeric identifiers must compare as numbers. Fixing that.",
        ),
        bash_turn("call-recheck", "test_patch"),
        bash_turn("call-submit", SUBMIT, "The checks pass. Done."),
    ]


def run_mini_swe_agent(
    model_stack: ModelStack, model: str, results: Path, watch: bool = False
) -> AgentRun:
    # Difficulty 1: test_patch builds the change and runs the task's tests.
    return run_agent(model_stack, AGENT, model, results, "--difficulty", "1", watch=watch)


def test_mini_swe_agent_reads_checks_edits_and_passes(
    model_stack: ModelStack, tmp_path: Path
) -> None:
    model = model_stack.script("mini-swe-agent-solves", solving_turns())
    run = run_mini_swe_agent(model_stack, model, tmp_path / "results", watch=True)
    assert run.status == "passed", run.summary

    agent = run.agent_events()
    assert agent[0]["type"] == "prompt" and "Pre-release versions" in str(agent[0]["text"])
    tools = [e for e in agent if e["type"] == "tool"]
    finished = {str(e["id"]): e for e in tools if e["status"] != "running"}
    assert [e["id"] for e in tools if e["status"] == "running"] == [
        "call-read", "call-check", "call-edit", "call-recheck", "call-submit",
    ]  # fmt: skip
    assert "def _prerelease_key" in str(finished["call-read"]["output"])
    # The task's visible tests do not cover the bug: test_patch passes before and after.
    for check in ("call-check", "call-recheck"):
        assert finished[check]["input"] == "test_patch"
        assert str(finished[check]["output"]).startswith("PASSED: the build and the tests")
        assert finished[check]["status"] == "success"
    assert finished["call-edit"]["status"] == "success"
    assert finished["call-submit"]["status"] == "success"
    messages = [e for e in agent if e["type"] == "message"]
    assert [m["step"] for m in messages] == [1, 2, 3, 4, 5]
    assert messages[0]["usage"] == {"input_tokens": 1000, "output_tokens": 100}
    usage = next(e for e in agent if e["type"] == "usage")
    assert usage["input_tokens"] == 5000 and usage["model_calls"] == 5
    assert agent[-1]["type"] == "complete" and agent[-1]["status"] == "success"
    # The runtime ran the two checks, asked for through MCP (difficulty 1: with the tests).
    calls = [e["tool"] for e in run.dialog() if e["type"] == "tool_call"]
    assert calls == ["test", "test"]
    assert "_identifier_key" in (run.run_dir / "final.patch").read_text()

    chats = model_stack.requests(model)
    assert len(chats) == 5, "every scripted turn went through the proxy, no retry"
    assert chats[0]["body"]["tools"][0]["function"]["name"] == "bash"
    assert chats[-1]["body"]["messages"][-1]["role"] == "tool"

    assert_key_is_nowhere(model_stack, run, AGENT, argv="driver.py")


def test_mini_swe_agent_that_gives_up_is_graded_failed(
    model_stack: ModelStack, tmp_path: Path
) -> None:
    turns = [
        bash_turn("call-look", "ls", "Let me see the repository."),
        bash_turn("call-quit", SUBMIT, "I cannot fix this issue."),
    ]
    model = model_stack.script("mini-swe-agent-gives-up", turns)
    run = run_mini_swe_agent(model_stack, model, tmp_path / "results")
    assert run.status == "failed", run.summary
    agent = run.agent_events()
    assert agent[-1]["type"] == "complete" and agent[-1]["status"] == "success"
    assert [m["text"] for m in agent if m["type"] == "message"][-1] == "I cannot fix this issue."


def test_mini_swe_agent_whose_model_answers_500_ends_as_an_error(
    model_stack: ModelStack, tmp_path: Path
) -> None:
    turns = [{"error": 500, "message": "the upstream is down", "repeat": True}]
    model = model_stack.script("mini-swe-agent-errors", turns)
    run = run_mini_swe_agent(model_stack, model, tmp_path / "results")
    assert run.status == "error", run.summary
    error = str(run.summary["error_msg"])
    assert error.startswith("Model error: InternalServerError"), run.summary
    assert "the upstream is down" in error, run.summary
    complete = run.agent_events()[-1]
    assert complete["type"] == "complete" and complete["model_error"] is True
    # mini-swe-agent's retries are bounded (3 attempts): the run ends by itself, long
    # before its 900 s timeout.
    assert run.seconds < 400, run.seconds
    # Each of mini-swe-agent's attempts reached the upstream (the proxy may retry too).
    assert len(model_stack.requests(model)) >= 3
