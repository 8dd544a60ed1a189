"""The codex agent for real: OpenAI's Codex CLI (the pinned native binary, installed by
the agent's install image) in the task container, speaking the Responses API to the
real LiteLLM proxy, which bridges it to chat completions for the scripted model
server (a hosted_vllm/ model of tests/docker/model_stack.py).

The scripted turns call Codex's tools by the names Codex gives them: exec_command
(its shell; Codex applies an `apply_patch` command itself, as a file change) and
mcp__ssebench__test_patch (the ssebench MCP server's tool, which the wrapper's relay
offers the model as a plain function).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import PILOT_DATASET
from tests.docker.conftest import new_run_id
from tests.docker.model_stack import ModelStack, docker

pytestmark = pytest.mark.docker
TASK = "py-semver-prerelease"
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


def call(call_id: str, name: str, arguments: dict[str, object]) -> dict[str, object]:
    return {"id": call_id, "name": name, "arguments": arguments}


def solving_turns() -> list[dict[str, object]]:
    return [
        {
            "content": "I will look at how pre-release identifiers are compared.",
            "tool_calls": [call("call-read", "exec_command", {"cmd": READ})],
        },
        {
            "content": "Numeric identifiers must compare as numbers. Fixing that.",
            "tool_calls": [
                call("call-fix", "exec_command", {"cmd": f"apply_patch <<'PATCH'\n{FIX}PATCH"})
            ],
        },
        {
            "content": "Checking the change.",
            "tool_calls": [call("call-check", "mcp__ssebench__test_patch", {})],
        },
        {"content": "Done: numeric pre-release identifiers now compare numerically."},
    ]


def giving_up_turns() -> list[dict[str, object]]:
    return [
        {
            "content": "Let me look first.",
            "tool_calls": [call("call-read", "exec_command", {"cmd": READ})],
        },
        {"content": "I cannot fix this one; I am stopping without a change."},
    ]


def run_codex(
    stack: ModelStack, model: str, results: Path, *extra: str
) -> tuple[subprocess.Popen[str], str]:
    run_id = new_run_id(AGENT)
    arguments = [
        "run", "--local", str(PILOT_DATASET), "--task", TASK, "--agent", AGENT,
        "--model", model, "--run-id", run_id, "--results", str(results),
        "--timeout", "900", *extra,
    ]  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "ssebench.cli.main", *arguments],
        env=stack.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return process, run_id


def finished(process: subprocess.Popen[str]) -> tuple[str, dict[str, object], Path]:
    stdout, stderr = process.communicate(timeout=1800)
    output = stdout + stderr
    lines = stdout.strip().splitlines()
    assert lines and "\t" in lines[-1], output[-4000:]
    run_dir = Path(lines[-1].split("\t")[1])
    summary = json.loads((run_dir / "summary.json").read_text())
    return output, summary, run_dir


def agent_events(run_dir: Path) -> list[dict[str, object]]:
    events = [json.loads(line) for line in (run_dir / "archive" / "dialog.jsonl").open()]
    return [e for e in events if e.get("source") == "agent"]


class ArgvSampler:
    """The argv of every process, inside the run's container and on this machine, read
    from /proc every half second while the run goes on."""

    INSIDE = (
        "import os\n"
        "for pid in os.listdir('/proc'):\n"
        "    try:\n"
        "        print(open(f'/proc/{pid}/cmdline', 'rb').read().replace(b'\\0', b' ').decode())\n"
        "    except (OSError, ValueError):\n"
        "        pass\n"
    )

    def __init__(self, container: str) -> None:
        self.container = container
        self.inside: list[str] = []
        self.outside: list[str] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def sample(self) -> None:
        while not self.done.is_set():
            listing = subprocess.run(
                ["docker", "exec", self.container, "python3", "-c", self.INSIDE],
                capture_output=True,
                text=True,
                timeout=60,
            )
            self.inside.extend(listing.stdout.splitlines())
            host = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True)
            self.outside.extend(host.stdout.splitlines())
            time.sleep(0.5)

    def __enter__(self) -> ArgvSampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join(timeout=120)


def test_codex_reads_checks_with_mcp_edits_and_passes_and_the_key_stays_hidden(
    model_stack: ModelStack, tmp_path: Path
) -> None:
    model = model_stack.script("codex-solves", solving_turns())
    key = model_stack.env["LITELLM_MASTER_KEY"]  # the run key of a run without database
    process, run_id = run_codex(model_stack, model, tmp_path, "--difficulty", "1")
    with ArgvSampler(f"ssebench-{run_id}") as sampler:
        output, summary, run_dir = finished(process)
    assert process.returncode == 0, output[-4000:]
    assert summary["status"] == "passed", summary

    agent = agent_events(run_dir)
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
    assert "_identifier_key" in (run_dir / "final.patch").read_text()

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

    # The run key: in no process's argv (Codex was running while sampled), no file of
    # the run, no label or layer of the run's images, no line of the output.
    assert any("install/bin/codex" in line for line in sampler.inside), sampler.inside[:50]
    assert not [line for line in sampler.inside + sampler.outside if key in line]
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert key not in path.read_text(errors="replace"), path
    assert key not in output
    images = summary["images"]
    assert isinstance(images, dict) and images["run"]
    for image in {images["run"], "ssebench/agent-install/codex:0.171.0-1"}:
        assert key not in docker("image", "inspect", str(image)).stdout
        assert key not in docker("history", "--no-trunc", str(image)).stdout


def test_codex_that_gives_up_is_graded_failed(model_stack: ModelStack, tmp_path: Path) -> None:
    model = model_stack.script("codex-gives-up", giving_up_turns())
    process, _ = run_codex(model_stack, model, tmp_path)
    output, summary, run_dir = finished(process)
    assert summary["status"] == "failed", (summary, output[-3000:])
    agent = agent_events(run_dir)
    assert agent[-1]["type"] == "complete" and agent[-1]["status"] == "success"
    texts = [e["text"] for e in agent if e["type"] == "message"]
    assert texts[-1].startswith("I cannot fix this one")


def test_codex_whose_model_answers_500_ends_by_itself_as_an_error(
    model_stack: ModelStack, tmp_path: Path
) -> None:
    model = model_stack.script(
        "codex-errors", [{"error": 500, "message": "upstream exploded", "repeat": True}]
    )
    started = time.monotonic()
    process, _ = run_codex(model_stack, model, tmp_path)
    output, summary, run_dir = finished(process)
    took = time.monotonic() - started
    assert summary["status"] == "error", (summary, output[-3000:])
    assert str(summary["error_msg"]).startswith("Model error: the proxy answered HTTP 500"), summary
    assert "upstream exploded" in str(summary["error_msg"]), "the upstream's own message"
    assert took < 600, f"the run took {took:.0f}s of its 900s: it did not end by itself"
    complete = agent_events(run_dir)[-1]
    assert complete["type"] == "complete" and complete["status"] == "error"
    assert complete.get("model_error") is True
    assert len(model_stack.requests(model)) >= 1, "the model was asked"
