"""The codex agent for real: OpenAI's Codex CLI (the pinned native binary, installed by
the agent's install image) in the task container, speaking the Responses API to the
real LiteLLM proxy, which bridges it to chat completions for the scripted model
server, a chat-only `openai/` model of tests/docker/model_stack.py written as
docs/models.md shows (the bridge is the model's second proxy entry).

The scripted turns call Codex's tools by the names Codex gives them: exec_command
(its shell; Codex applies an `apply_patch` command itself, as a file change) and
mcp__ssebench__test_patch (the ssebench MCP server's tool, which the wrapper's relay
offers the model as a plain function).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.docker.agents.agent_runs import AgentRun, assert_key_is_nowhere, run_agent, tool_call
from tests.docker.model_stack import ModelStack

pytestmark = pytest.mark.docker
AGENT = "codex"
READ = "grep -n '_prerelease_key' -A6 semver/version.py"
# The fix in Codex's own patch format (what its apply_patch reads).
FIX = """*** Begin Patch
*** Update File: semver/version.py
@@
+def _identifier_key(identifier):
+    # Numeric identifiers compare as numbers, below alphanumeric ones.
+    if identifier.isdigit():
+        return (0, int(identifier), "")
+    return (1, 0, identifier)
+
+
 def _prerelease_key(identifiers):
     # A release (no pre-release identifiers) sorts after every pre-release
     # of the same major.minor.patch.
     if not identifiers:
         return (1, ())
-    return (0, identifiers)
+    return (0, tuple(_identifier_key(i) for i in identifiers))
*** End Patch
"""


def solving_turns() -> list[dict[str, Any]]:
    return [
        {
            "content": "I will look at how pre-release identifiers are compared.",
            "tool_calls": [tool_call("call-read", "exec_command", {"cmd": READ})],
        },
        {
            "content": "Numeric identifiers must compare as numbers. Fixing that.",
            "tool_calls": [
                tool_call("call-fix", "exec_command", {"cmd": f"apply_patch <<'PATCH'\n{FIX}PATCH"})
            ],
        },
        {
            "content": "Checking the change.",
            "tool_calls": [tool_call("call-check", "mcp__ssebench__test_patch", {})],
        },
        {"content": "Done: numeric pre-release identifiers now compare numerically."},
    ]


def giving_up_turns() -> list[dict[str, Any]]:
    return [
        {
            "content": "Let me look first.",
            "tool_calls": [tool_call("call-read", "exec_command", {"cmd": READ})],
        },
        {"content": "I cannot fix this one; I am stopping without a change."},
    ]


def run_codex(
    stack: ModelStack, model: str, results: Path, *options: str, watch: bool = False
) -> AgentRun:
    return run_agent(stack, AGENT, model, results, *options, watch=watch)


def test_codex_reads_checks_with_mcp_edits_and_passes_and_the_key_stays_hidden(
    model_stack: ModelStack, tmp_path: Path
) -> None:
    model = model_stack.script("codex-solves", solving_turns())
    run = run_codex(model_stack, model, tmp_path / "results", "--difficulty", "1", watch=True)
    assert run.status == "passed", run.summary

    agent = run.agent_events()
    assert agent[0]["type"] == "prompt" and "Pre-release versions" in str(agent[0]["text"])
    tools = [e for e in agent if e["type"] == "tool"]
    finals = [e for e in tools if e["status"] != "running"]
    assert [(e["name"], e["status"]) for e in finals] == [
        ("shell", "success"),
        ("apply_patch", "success"),
        ("test_patch", "success"),
    ], finals
    assert "_prerelease_key" in str(finals[0]["output"])
    assert "semver/version.py" in json.dumps(finals[1]["input"])
    assert str(finals[2]["output"]).startswith("PASSED"), finals[2]
    messages = [e["text"] for e in agent if e["type"] == "message"]
    assert messages[-1] == "Done: numeric pre-release identifiers now compare numerically."
    assert any(e["type"] == "usage" for e in agent)
    assert agent[-1]["type"] == "complete" and agent[-1]["status"] == "success", agent[-1]
    assert "_identifier_key" in (run.run_dir / "final.patch").read_text()

    # What went to the scripted model: Codex's tools as plain functions, the MCP tool
    # among them, and the results of the calls.
    chats = [r for r in model_stack.requests(model) if str(r["path"]).endswith("/chat/completions")]
    assert len(chats) == 4, [r["path"] for r in chats]
    body = chats[-1]["body"]
    assert isinstance(body, dict)
    names = {tool.get("function", tool)["name"] for tool in body["tools"]}
    assert {"exec_command", "mcp__ssebench__test_patch"} <= names
    assert all(tool.get("type") == "function" for tool in body["tools"])
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    assert "PASSED" in json.dumps(results[-1])

    assert_key_is_nowhere(model_stack, run, AGENT, argv="install/bin/codex")


def test_codex_that_gives_up_is_graded_failed(model_stack: ModelStack, tmp_path: Path) -> None:
    model = model_stack.script("codex-gives-up", giving_up_turns())
    run = run_codex(model_stack, model, tmp_path / "results")
    assert run.status == "failed", (run.summary, run.output[-3000:])
    agent = run.agent_events()
    assert agent[-1]["type"] == "complete" and agent[-1]["status"] == "success"
    texts = [e["text"] for e in agent if e["type"] == "message"]
    assert texts[-1].startswith("I cannot fix this one")


def test_codex_whose_model_answers_500_ends_by_itself_as_an_error(
    model_stack: ModelStack, tmp_path: Path
) -> None:
    model = model_stack.script(
        "codex-errors", [{"error": 500, "message": "upstream exploded", "repeat": True}]
    )
    run = run_codex(model_stack, model, tmp_path / "results")
    error = str(run.summary["error_msg"])
    assert run.status == "error", (run.summary, run.output[-3000:])
    assert error.startswith("Model error: the proxy answered HTTP 500"), run.summary
    assert "upstream exploded" in error, "the upstream's own message"
    assert run.seconds < 600, f"the run took {run.seconds:.0f}s of 900s: it did not end by itself"
    complete = run.agent_events()[-1]
    assert complete["type"] == "complete" and complete["status"] == "error"
    assert complete.get("model_error") is True
    assert len(model_stack.requests(model)) >= 1, "the model was asked"
