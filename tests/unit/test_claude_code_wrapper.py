"""The claude-code wrapper's reading of Claude Code's stream-json, on lines of the shape
Claude Code 2.1.332 printed against the real proxy (tests/docker/agents/
test_claude_code.py runs the real thing), and what it gives Claude Code."""

from __future__ import annotations

import json
import sys
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ssebench.runtime import agent_kit

RUN = Path(__file__).resolve().parents[2] / "src" / "ssebench" / "agents" / "claude-code" / "run"


@pytest.fixture
def wrapper(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    # In the container the runtime is the package ssebench_runtime.
    monkeypatch.setitem(sys.modules, "ssebench_runtime", sys.modules["ssebench.runtime"])
    loader = SourceFileLoader("claude_code_run", str(RUN))
    spec = spec_from_loader("claude_code_run", loader)
    assert spec is not None
    module = module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.fixture
def posted(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    monkeypatch.setattr(agent_kit, "post_event", lambda event: events.append(dict(event)))
    return events


def assistant(message_id: str, *blocks: dict[str, Any], **extra: Any) -> str:
    message = {"id": message_id, "role": "assistant", "content": list(blocks)}
    return json.dumps({"type": "assistant", "message": message, **extra})


def tool_result(call_id: str, content: Any, is_error: bool = False) -> str:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    if is_error:
        block["is_error"] = True
    return json.dumps({"type": "user", "message": {"role": "user", "content": [block]}})


def test_a_session_becomes_messages_tools_and_usage(
    wrapper: ModuleType, posted: list[dict[str, Any]]
) -> None:
    dialog = wrapper.Dialog()
    lines = [
        json.dumps({"type": "system", "subtype": "init", "mcp_servers": []}),
        # One line per content block; both blocks are one answer, one step.
        assistant("msg-1", {"type": "text", "text": "Let me read it."}),
        assistant("msg-1", {"type": "tool_use", "id": "c1", "name": "Read", "input": {"f": 1}}),
        tool_result("c1", "1\thello"),
        assistant("msg-2", {"type": "tool_use", "id": "c2", "name": "Bash", "input": {}}),
        tool_result("c2", [{"type": "text", "text": "Exit code 1"}], is_error=True),
        "not json: a line of the agent's own",
        assistant("msg-3", {"type": "text", "text": "Done."}),
        json.dumps(
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "num_turns": 3,
                "api_error_status": None,
                "terminal_reason": "completed",
                "usage": {"input_tokens": 3000, "output_tokens": 300},
            }
        ),
    ]
    for line in lines:
        dialog.line(line)
    dialog.usage()
    assert posted == [
        {"type": "message", "role": "assistant", "text": "Let me read it.", "step": 1},
        {"type": "tool", "id": "c1", "name": "Read", "status": "running", "input": '{"f": 1}'},
        {"type": "tool", "id": "c1", "name": "Read", "status": "success", "output": "1\thello"},
        {"type": "tool", "id": "c2", "name": "Bash", "status": "running", "input": "{}"},
        {"type": "tool", "id": "c2", "name": "Bash", "status": "error", "output": "Exit code 1"},
        {"type": "message", "role": "assistant", "text": "Done.", "step": 3},
        {"type": "usage", "input_tokens": 3000, "output_tokens": 300, "num_turns": 3},
    ]
    assert wrapper.ending(dialog, 0, 40) == ("success", "the agent stopped", False)


def test_an_answer_the_model_could_not_give_is_a_model_error(
    wrapper: ModuleType, posted: list[dict[str, Any]]
) -> None:
    dialog = wrapper.Dialog()
    text = "API Error: 500 litellm.InternalServerError: the upstream is down"
    dialog.line(
        json.dumps({"type": "system", "subtype": "api_retry", "attempt": 1, "error_status": 500})
    )
    dialog.line(
        assistant(
            "e1",
            {"type": "text", "text": text},
            error="server_error",
            is_api_error_message=True,
            api_error_status=500,
        )
    )
    dialog.line(
        json.dumps(
            {
                "type": "result",
                "subtype": "success",
                "is_error": True,
                "terminal_reason": "api_error",
                "api_error_status": 500,
                "result": text,
            }
        )
    )
    assert posted == []  # Claude Code's stand-in answer is no message of the model's
    assert wrapper.ending(dialog, 1, 40) == ("error", text, True)


def test_a_refused_request_without_the_stand_in_is_a_model_error_too(
    wrapper: ModuleType,
) -> None:
    dialog = wrapper.Dialog()
    dialog.line(
        json.dumps(
            {"type": "result", "is_error": True, "api_error_status": 400, "result": "Budget"}
        )
    )
    assert wrapper.ending(dialog, 1, 40) == ("error", "HTTP 400: Budget", True)


def test_the_turn_limit_and_a_crash_are_errors_of_the_agent(wrapper: ModuleType) -> None:
    limit = wrapper.Dialog()
    limit.line(json.dumps({"type": "result", "subtype": "error_max_turns", "is_error": True}))
    assert wrapper.ending(limit, 1, 7) == ("error", "the turn limit (7) was reached", False)
    crash = wrapper.Dialog()
    assert wrapper.ending(crash, 2, 40) == (
        "error",
        "claude exited with status 2: no result line",
        False,
    )


def test_the_key_goes_into_the_environment_and_never_into_argv(
    wrapper: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSE_MCP_URL", "http://127.0.0.1:4263/mcp")
    environment = wrapper.claude_environment("http://proxy:4000", "sk-run-key", "m")
    assert environment["ANTHROPIC_API_KEY"] == "sk-run-key"
    assert environment["ANTHROPIC_BASE_URL"] == "http://proxy:4000"
    assert environment["DISABLE_TELEMETRY"] == environment["DISABLE_AUTOUPDATER"] == "1"
    assert not any(name.endswith("_KEY") for name in environment if name != "ANTHROPIC_API_KEY")
    argv = wrapper.claude_command(40)
    assert not any("sk-run-key" in argument for argument in argv)
    mcp = json.loads(argv[argv.index("--mcp-config") + 1])
    assert mcp == {"mcpServers": {"ssebench": {"type": "http", "url": "http://127.0.0.1:4263/mcp"}}}
    assert argv[argv.index("--max-turns") + 1] == "40"
