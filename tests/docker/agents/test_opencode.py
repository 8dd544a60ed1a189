"""The opencode agent, for real: OpenCode's native binary (from the agent's install
image) in the task container of py-semver-prerelease, speaking OpenAI chat
completions (streamed) to the real LiteLLM proxy, in front of the scripted model of
tests/docker/model_stack.py.

The scripts call OpenCode's own tools by their names (read, edit) and the tool layer's
test_patch by the name OpenCode gives a tool of the MCP server "ssebench"
(ssebench_test_patch). OpenCode also asks the model for a title of its session: the
scripts answer that side request without using up a turn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from tests.docker.agents.agent_runs import AgentRun, assert_key_is_nowhere, run_agent
from tests.docker.agents.agent_runs import tool_call as one_call
from tests.docker.model_stack import ModelStack

pytestmark = pytest.mark.docker
AGENT = "opencode"
VERSION_FILE = "/src/semver/semver/version.py"
TEST_PATCH = "ssebench_test_patch"
UNFIXED_LINE = "    return (0, identifiers)\n"
# The reference patch's fix in one line: numeric identifiers compare as numbers, and
# below alphanumeric ones.
FIXED_LINE = (
    '    return (0, tuple((0, int(i), "") if i.isdigit() else (1, 0, i) for i in identifiers))\n'
)
TITLE = {"contains": "You are a title generator", "turn": {"content": "Pre-release order"}}
# What OpenCode's argv looks like in `ps` while it runs.
OPENCODE_ARGV = "install/bin/opencode run --format json"


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A turn that only calls a tool."""
    return {"content": None, "tool_calls": [one_call(call_id, name, arguments)]}


def solving_script() -> dict[str, Any]:
    read = tool_call("call-read", "read", {"filePath": VERSION_FILE})
    read["content"] = "I will read how pre-release identifiers are compared."
    edit = tool_call(
        "call-edit",
        "edit",
        {"filePath": VERSION_FILE, "oldString": UNFIXED_LINE, "newString": FIXED_LINE},
    )
    return {
        "turns": [
            read,
            tool_call("call-check-1", TEST_PATCH, {}),
            edit,
            tool_call("call-check-2", TEST_PATCH, {}),
            {"content": "Done: numeric pre-release identifiers now compare as numbers."},
        ],
        "side": [TITLE],
    }


def giving_up_script() -> dict[str, Any]:
    return {
        "turns": [
            tool_call("call-read", "read", {"filePath": VERSION_FILE}),
            {"content": "I cannot find the cause of this issue; I give up."},
        ],
        "side": [TITLE],
    }


def run_opencode(
    model_stack: ModelStack, model: str, results: Path, *options: str, watch: bool = False
) -> AgentRun:
    return run_agent(model_stack, AGENT, model, results, *options, watch=watch)


def calls(events: list[dict[str, Any]], call_id: str) -> list[tuple[str, str]]:
    return [(e["name"], e["status"]) for e in events if e["type"] == "tool" and e["id"] == call_id]


def scripted_bodies(model_stack: ModelStack, model: str) -> list[dict[str, Any]]:
    """The bodies of the agent's own requests (the title request has no tools)."""
    bodies = [cast(dict[str, Any], r["body"]) for r in model_stack.requests(model)]
    return [body for body in bodies if body.get("tools")]


def test_opencode_reads_checks_edits_and_passes(model_stack: ModelStack, tmp_path: Path) -> None:
    model = model_stack.script(f"{AGENT}-solves", solving_script())
    # Difficulty 1: test_patch builds the change and runs the task's tests.
    run = run_opencode(model_stack, model, tmp_path / "results", "--difficulty", "1", watch=True)
    assert run.status == "passed", run.summary
    patch = (run.run_dir / "final.patch").read_text()
    assert "+" + FIXED_LINE.rstrip("\n") in patch.splitlines(), patch

    events = run.agent_events()
    assert [e["type"] for e in events] == [
        "prompt",
        "message", "tool", "tool", "usage",  # read
        "tool", "tool", "usage",             # test_patch before the fix
        "tool", "tool", "usage",             # edit
        "tool", "tool", "usage",             # test_patch after the fix
        "message", "usage", "complete",
    ], events  # fmt: skip
    assert "Pre-release versions" in events[0]["text"]
    assert calls(events, "call-read") == [("read", "running"), ("read", "success")]
    read = [e for e in events if e.get("id") == "call-read"]
    assert read[0]["input"] == {"filePath": VERSION_FILE}
    assert "def _prerelease_key" in read[1]["output"]
    for check in ("call-check-1", "call-check-2"):
        assert calls(events, check) == [(TEST_PATCH, "running"), (TEST_PATCH, "success")]
    # The repository's own tests do not catch the bug (the hidden ones do): test_patch
    # passes before the fix too, and its answer is in the dialog each time.
    for check in ("call-check-1", "call-check-2"):
        answer = [e for e in events if e.get("id") == check][1]["output"]
        assert answer.startswith("PASSED: the build and the tests pass"), answer
    assert calls(events, "call-edit") == [("edit", "running"), ("edit", "success")]
    assert events[-3]["text"].startswith("Done:")
    usage = [e for e in events if e["type"] == "usage"]
    assert sum(u["input_tokens"] for u in usage) == 5 * 1000, usage
    assert sum(u["output_tokens"] for u in usage) == 5 * 100, usage
    assert (events[-1]["status"], events[-1]["reason"]) == ("success", "the agent stopped")

    bodies = scripted_bodies(model_stack, model)
    assert len(bodies) == 5, [body["messages"][-1] for body in bodies]
    assert all(body.get("stream") is True for body in bodies), "OpenCode streams"
    tools = {tool["function"]["name"] for tool in bodies[0]["tools"]}
    assert {"read", "edit", "bash", TEST_PATCH} <= tools, tools
    assert_key_is_nowhere(model_stack, run, AGENT, argv=OPENCODE_ARGV)


def test_opencode_gives_up_and_fails(model_stack: ModelStack, tmp_path: Path) -> None:
    model = model_stack.script(f"{AGENT}-gives-up", giving_up_script())
    run = run_opencode(model_stack, model, tmp_path / "results")
    assert run.status == "failed", run.summary
    events = run.agent_events()
    assert [e["type"] for e in events] == [
        "prompt", "tool", "tool", "usage", "message", "usage", "complete"
    ], events  # fmt: skip
    assert "give up" in events[4]["text"]
    assert events[-1]["status"] == "success"
    assert len(scripted_bodies(model_stack, model)) == 2


def test_opencode_ends_by_itself_when_the_model_answers_500(
    model_stack: ModelStack, tmp_path: Path
) -> None:
    turns = [{"error": 500, "message": "the upstream is down", "repeat": True}]
    model = model_stack.script(f"{AGENT}-errors", turns)
    run = run_opencode(model_stack, model, tmp_path / "results")
    assert run.status == "error", run.summary
    assert str(run.summary["error_msg"]).startswith("Model error: "), run.summary
    assert "the upstream is down" in run.summary["error_msg"], run.summary
    # OpenCode's own retries are bounded: the run ended long before its timeout.
    assert run.seconds < 600, run.seconds
    events = run.agent_events()
    assert events[-1]["type"] == "complete" and events[-1]["model_error"] is True, events
    assert len(model_stack.requests(model)) >= 2, "OpenCode asked again before it gave up"
