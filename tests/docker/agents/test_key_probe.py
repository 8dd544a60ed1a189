"""The run's key stays out of the model's reach, for every upstream agent: a scripted
model has its agent print every environment, /proc/PID/environ and argv the agent's
user can read, and search the file system for key-like text, as a model after the key
would. What the model received is read back from the scripted server's own log: the
probe's output reached it, and the key (the proxy's master key in these runs) never
did. The agent holds a placeholder; the runtime's model relay adds the key
(runtime/model_relay.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.docker.agents.agent_runs import run_agent, tool_call
from tests.docker.agents.test_mini_swe_agent import SUBMIT
from tests.docker.agents.test_opencode import TITLE
from tests.docker.model_stack import ModelStack

pytestmark = pytest.mark.docker
# What a model after the key has its agent run.
KEY_PROBE = (
    "env; "
    "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\"; echo; done 2>/dev/null; "
    "ps -ww -eo args 2>/dev/null || for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < \"$f\"; "
    "echo; done; "
    "grep -rIs -l -e 'sk-' /home /tmp /etc /opt /run /root /var/lib 2>/dev/null | head -50; "
    "echo PROBE-DONE"
)
# A change that breaks the task's build: its test_patch check answers FAILED.
BREAK = "echo 'def broken(:' >> semver/version.py"


def probe_script(agent: str) -> Any:
    """The agent's shell tool running KEY_PROBE, then an end without a fix."""
    end = {"content": "I found nothing to fix; stopping."}
    if agent == "codex":
        return [
            {"content": "Looking around.", "tool_calls": [
                tool_call("call-probe", "exec_command", {"cmd": KEY_PROBE})
            ]},
            end,
        ]  # fmt: skip
    if agent == "mini-swe-agent":
        # Also a check that fails, end to end: a change that breaks the build.
        return [
            {"content": "Looking around.", "tool_calls": [
                tool_call("call-probe", "bash", {"command": KEY_PROBE})
            ]},
            {"content": "Trying a change.", "tool_calls": [
                tool_call("call-break", "bash", {"command": BREAK})
            ]},
            {"content": "Checking it.", "tool_calls": [
                tool_call("call-check", "bash", {"command": "test_patch"})
            ]},
            {"content": "Stopping.", "tool_calls": [
                tool_call("call-quit", "bash", {"command": SUBMIT})
            ]},
        ]  # fmt: skip
    name = "Bash" if agent == "claude-code" else "bash"
    arguments = {"command": KEY_PROBE, "description": "Look at the environment"}
    turns = [
        {"content": "Looking around.", "tool_calls": [tool_call("call-probe", name, arguments)]},
        end,
    ]
    return {"turns": turns, "side": [TITLE]} if agent == "opencode" else turns


@pytest.mark.parametrize("agent", ["claude-code", "codex", "opencode", "mini-swe-agent"])
def test_the_model_never_receives_the_key(
    model_stack: ModelStack, tmp_path: Path, agent: str
) -> None:
    model = model_stack.script(f"{agent}-probes", probe_script(agent))
    run = run_agent(model_stack, agent, model, tmp_path / "results")
    assert run.status == "failed", run.summary  # no fix: graded, not an error
    key = model_stack.env["LITELLM_MASTER_KEY"]
    received = [json.dumps(request) for request in model_stack.requests(model)]
    assert len(received) >= 2, received
    # The probe ran and its output went to the model: the agent's own environment
    # (SSE_MODEL_NAME) and the end of the probe are in what it received.
    after_probe = "".join(received[1:])
    assert "PROBE-DONE" in after_probe and "SSE_MODEL_NAME" in after_probe, after_probe[-3000:]
    assert not any(key in text for text in received)
    if agent == "mini-swe-agent":
        # test_patch answered FAILED (exit 1) through MCP, and the model was told so.
        (check,) = [
            event
            for event in run.agent_events()
            if event.get("id") == "call-check" and event.get("status") != "running"
        ]
        assert str(check["output"]).startswith("FAILED"), check
        assert "FAILED" in received[-1]
