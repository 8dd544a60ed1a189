"""The claude-code agent, for real: Anthropic's Claude Code (the pinned native binary
from its install image) in the task container of py-semver-prerelease, speaking the
Anthropic Messages API to the real LiteLLM proxy, which translates for the scripted
OpenAI-compatible model of tests/docker/model_stack.py.

The script calls Claude Code's own tools by their names (Read, Edit) and the tool
layer's test_patch by the name Claude Code gives an MCP tool (mcp__ssebench__test_patch).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.docker.agents.agent_runs import (
    AgentRun,
    assert_key_is_nowhere,
    run_agent,
    tool_call,
)
from tests.docker.model_stack import ModelStack

pytestmark = pytest.mark.docker
AGENT = "claude-code"
SOURCE = "/src/semver"
VERSION_FILE = f"{SOURCE}/semver/version.py"
TEST_PATCH = "mcp__ssebench__test_patch"
# The fix of the reference patch, in one line: numeric identifiers compare as numbers,
# below alphanumeric ones.
FIXED_LINE = (
    '    return (0, tuple((0, int(i), "") if i.isdigit() else (1, 0, i) for i in identifiers))\n'
)


def solving_script() -> list[dict[str, Any]]:
    return [
        {
            "content": "I will read how pre-release identifiers are compared.",
            "tool_calls": [tool_call("call-read", "Read", {"file_path": VERSION_FILE})],
        },
        {"content": None, "tool_calls": [tool_call("call-check", TEST_PATCH, {})]},
        {
            "content": "Numeric identifiers compare as strings. Fixing that.",
            "tool_calls": [
                tool_call(
                    "call-edit",
                    "Edit",
                    {
                        "file_path": VERSION_FILE,
                        "old_string": "    return (0, identifiers)\n",
                        "new_string": FIXED_LINE,
                    },
                )
            ],
        },
        {"content": "Done: numeric pre-release identifiers now compare as numbers."},
    ]


def giving_up_script() -> list[dict[str, Any]]:
    return [
        {
            "content": "Let me look at the code first.",
            "tool_calls": [tool_call("call-read", "Read", {"file_path": VERSION_FILE})],
        },
        {"content": "I cannot find the cause of this issue; I give up."},
    ]


def run_claude(model_stack: ModelStack, model: str, results: Path, watch: bool = False) -> AgentRun:
    return run_agent(model_stack, AGENT, model, results, watch=watch)


def tool_events(events: list[dict[str, Any]], call_id: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "tool" and e["id"] == call_id]


def test_claude_code_reads_checks_edits_and_passes(model_stack: ModelStack, tmp_path: Path) -> None:
    model = model_stack.script(f"{AGENT}-solves", solving_script())
    run = run_claude(model_stack, model, tmp_path / "results", watch=True)
    assert run.status == "passed", run.summary
    patch = (run.run_dir / "final.patch").read_text()
    assert "+" + FIXED_LINE.rstrip("\n") in patch.splitlines(), patch

    events = run.agent_events()
    assert [e["type"] for e in events] == [
        "prompt",
        "message", "tool", "tool",   # Read
        "tool", "tool",              # test_patch
        "message", "tool", "tool",   # Edit
        "message", "usage", "complete",
    ], events  # fmt: skip
    assert "Pre-release versions" in str(events[0]["text"])
    read = tool_events(events, "call-read")
    assert [(e["name"], e["status"]) for e in read] == [("Read", "running"), ("Read", "success")]
    assert VERSION_FILE in str(read[0]["input"])
    assert "def _prerelease_key" in str(read[1]["output"])
    # The tool layer's answer, through MCP: at the default difficulty (2) it builds.
    check = tool_events(events, "call-check")
    assert [(e["name"], e["status"]) for e in check] == [
        (TEST_PATCH, "running"),
        (TEST_PATCH, "success"),
    ]
    assert str(check[1]["output"]).startswith("PASSED: the build"), check
    edit = tool_events(events, "call-edit")
    assert [(e["name"], e["status"]) for e in edit] == [("Edit", "running"), ("Edit", "success")]
    assert str(events[-3]["text"]).startswith("Done:")
    usage = events[-2]
    assert usage["input_tokens"] == 4 * 1000 and usage["output_tokens"] == 4 * 100, usage
    assert (events[-1]["status"], events[-1]["reason"]) == ("success", "the agent stopped")

    # Every request was one of the script's turns: Claude Code sent no side request
    # (title, quota, token count) that the proxy passed on.
    requests = model_stack.requests(model)
    assert len(requests) == 4, [r["path"] for r in requests]
    tools = [t["function"]["name"] for t in requests[0]["body"]["tools"]]  # type: ignore[index]
    assert {"Read", "Edit", "Bash", TEST_PATCH} <= set(tools), tools

    assert_key_is_nowhere(model_stack, run, AGENT, argv="claude --print")


def test_claude_code_gives_up_and_fails(model_stack: ModelStack, tmp_path: Path) -> None:
    model = model_stack.script(f"{AGENT}-gives-up", giving_up_script())
    run = run_claude(model_stack, model, tmp_path / "results")
    assert run.status == "failed", run.summary
    events = run.agent_events()
    assert [e["type"] for e in events] == [
        "prompt", "message", "tool", "tool", "message", "usage", "complete"
    ], events  # fmt: skip
    assert "give up" in str(events[4]["text"])
    assert events[-1]["status"] == "success"
    assert len(model_stack.requests(model)) == 2


def test_claude_code_ends_by_itself_when_the_model_answers_500(
    model_stack: ModelStack, tmp_path: Path
) -> None:
    turns = [{"error": 500, "message": "the upstream is down", "repeat": True}]
    model = model_stack.script(f"{AGENT}-errors", turns)
    run = run_claude(model_stack, model, tmp_path / "results")
    assert run.status == "error", run.summary
    assert str(run.summary["error_msg"]).startswith("Model error: API Error: 500"), run.summary
    assert "the upstream is down" in str(run.summary["error_msg"])
    # Long before the run's timeout (900 s): Claude Code's few retries, then the end.
    assert run.seconds < 600, run.seconds
    events = run.agent_events()
    complete = events[-1]
    assert complete["type"] == "complete" and complete["status"] == "error"
    assert complete["model_error"] is True
    assert not [e for e in events if e["type"] in ("message", "tool")], events
