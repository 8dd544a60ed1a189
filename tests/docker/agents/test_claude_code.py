"""The claude-code agent, for real: Anthropic's Claude Code (the pinned native binary
from its install image) in the task container of py-semver-prerelease, speaking the
Anthropic Messages API to the real LiteLLM proxy, which translates for the scripted
OpenAI-compatible model of tests/docker/model_stack.py.

The script calls Claude Code's own tools by their names (Read, Edit) and the tool
layer's test_patch by the name Claude Code gives an MCP tool (mcp__ssebench__test_patch).
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.cli import last_line_verdict, run_arguments, start_ssebench
from tests.conftest import PILOT_DATASET
from tests.docker.conftest import new_run_id
from tests.docker.model_stack import ModelStack, docker

pytestmark = pytest.mark.docker
TASK = "py-semver-prerelease"
AGENT = "claude-code"
SOURCE = "/src/semver"
VERSION_FILE = f"{SOURCE}/semver/version.py"
TEST_PATCH = "mcp__ssebench__test_patch"
# The fix of the reference patch, in one line: numeric identifiers compare as numbers,
# below alphanumeric ones.
FIXED_LINE = (
    '    return (0, tuple((0, int(i), "") if i.isdigit() else (1, 0, i) for i in identifiers))\n'
)


def install_image() -> str:
    """The agent's install image, named by its pinned versions (agent.json)."""
    folder = Path(__file__).resolve().parents[3] / "src" / "ssebench" / "agents" / AGENT
    agent = json.loads((folder / "agent.json").read_text())
    return f"ssebench/agent-install/{AGENT}:{agent['upstream']['version']}-{agent['version']}"


def call(call_id: str, name: str, arguments: dict[str, object]) -> dict[str, object]:
    return {"id": call_id, "name": name, "arguments": arguments}


def solving_script() -> list[dict[str, object]]:
    return [
        {
            "content": "I will read how pre-release identifiers are compared.",
            "tool_calls": [call("call-read", "Read", {"file_path": VERSION_FILE})],
        },
        {"content": None, "tool_calls": [call("call-check", TEST_PATCH, {})]},
        {
            "content": "Numeric identifiers compare as strings. Fixing that.",
            "tool_calls": [
                call(
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


def giving_up_script() -> list[dict[str, object]]:
    return [
        {
            "content": "Let me look at the code first.",
            "tool_calls": [call("call-read", "Read", {"file_path": VERSION_FILE})],
        },
        {"content": "I cannot find the cause of this issue; I give up."},
    ]


@dataclass
class Samples:
    """What `ps` showed of every process's argv, outside and inside the task container,
    while the run went on."""

    outside: list[str] = field(default_factory=list)
    inside: list[str] = field(default_factory=list)

    def take(self, container: str) -> None:
        host = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, timeout=30)
        self.outside.append(host.stdout)
        # The task image has python3 and perhaps no ps: read /proc as ps does.
        inside = subprocess.run(
            ["docker", "exec", container, "python3", "-c", READ_ARGV],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if inside.returncode == 0:
            self.inside.append(inside.stdout)


READ_ARGV = """
import os
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as stream:
                print(stream.read().replace(b"\\0", b" ").decode(errors="replace"))
        except OSError:
            pass
"""


def run_claude(
    model_stack: ModelStack, model: str, results: Path, samples: Samples | None = None
) -> tuple[str, Path, str]:
    """Run claude-code on the task with the model's script: (grade, run dir, output);
    with samples, take them every half second while the run goes on."""
    run_id = new_run_id("claude")
    arguments = run_arguments(PILOT_DATASET, TASK, AGENT, run_id, results)
    log_path = results.parent / f"{run_id}.log"
    with log_path.open("w") as log:
        process = start_ssebench(
            *arguments, "--model", model, "--timeout", "900", env=model_stack.env, output=log
        )
        try:
            while process.poll() is None:
                if samples is not None:
                    samples.take(f"ssebench-{run_id}")
                time.sleep(0.5)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=60)
    output = log_path.read_text()
    assert process.returncode == 0, output[-5000:]
    status, run_dir = last_line_verdict(output)
    return status, run_dir, output


def agent_events(run_dir: Path) -> list[dict[str, object]]:
    events = [json.loads(line) for line in (run_dir / "archive" / "dialog.jsonl").open()]
    return [event for event in events if event.get("source") == "agent"]


def tool_events(events: list[dict[str, object]], call_id: str) -> list[dict[str, object]]:
    return [e for e in events if e["type"] == "tool" and e["id"] == call_id]


def test_claude_code_reads_checks_edits_and_passes(model_stack: ModelStack, tmp_path: Path) -> None:
    model = model_stack.script(f"{AGENT}-solves", solving_script())
    samples = Samples()
    status, run_dir, output = run_claude(model_stack, model, tmp_path / "results", samples)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert status == summary["status"] == "passed", summary
    assert summary["config"]["agent"] == AGENT and summary["config"]["model"] == model
    patch = (run_dir / "final.patch").read_text()
    assert "+" + FIXED_LINE.rstrip("\n") in patch.splitlines(), patch

    events = agent_events(run_dir)
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

    check_key_is_nowhere(model_stack, run_dir, output, samples)


def check_key_is_nowhere(
    model_stack: ModelStack, run_dir: Path, output: str, samples: Samples
) -> None:
    """The run's key (the master key: the proxy has no database to make one) is in no
    file of the run directory, no argv the samples caught, no log line and no image
    or container the run made."""
    key = model_stack.env["LITELLM_MASTER_KEY"]
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert key not in path.read_text(errors="replace"), path
    assert key not in output
    # The samples caught Claude Code itself running, inside and outside.
    assert any("claude --print" in sample for sample in samples.inside), samples.inside[-3:]
    assert any("claude --print" in sample for sample in samples.outside)
    assert not any(key in sample for sample in samples.outside + samples.inside)
    # The run's image (the agent layer on the task's) and the install image.
    summary = json.loads((run_dir / "summary.json").read_text())
    images = {image for image in summary["images"].values() if image}
    assert images, summary["images"]
    images.add(install_image())
    for image in images:
        assert key not in docker("image", "inspect", image).stdout, image
        assert key not in docker("history", "--no-trunc", image).stdout, image
    litellm = docker(
        "ps", "-q", "--filter", "label=com.docker.compose.project=ssebench",
        "--filter", "label=com.docker.compose.service=litellm",
    ).stdout  # fmt: skip
    for container in litellm.split():
        logs = docker("logs", container, check=False)
        assert key not in logs.stdout + logs.stderr


def test_claude_code_gives_up_and_fails(model_stack: ModelStack, tmp_path: Path) -> None:
    model = model_stack.script(f"{AGENT}-gives-up", giving_up_script())
    status, run_dir, _ = run_claude(model_stack, model, tmp_path / "results")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert status == summary["status"] == "failed", summary
    events = agent_events(run_dir)
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
    started = time.monotonic()
    status, run_dir, _ = run_claude(model_stack, model, tmp_path / "results")
    took = time.monotonic() - started
    summary = json.loads((run_dir / "summary.json").read_text())
    assert status == summary["status"] == "error", summary
    assert str(summary["error_msg"]).startswith("Model error: API Error: 500"), summary
    assert "the upstream is down" in str(summary["error_msg"])
    # Long before the run's timeout (900 s): Claude Code's few retries, then the end.
    assert took < 600, took
    events = agent_events(run_dir)
    complete = events[-1]
    assert complete["type"] == "complete" and complete["status"] == "error"
    assert complete["model_error"] is True
    assert not [e for e in events if e["type"] in ("message", "tool")], events
