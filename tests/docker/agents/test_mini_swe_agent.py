"""mini-swe-agent, for real: its pinned install (install.Dockerfile) in the task's
container, driven through the real LiteLLM proxy by the scripted model server of
tests/docker/model_stack.py (turns with `bash` tool calls: mini-swe-agent 2's own
format), on the pilot task py-semver-prerelease."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.cli import start_ssebench
from tests.conftest import PILOT_DATASET
from tests.docker.conftest import new_run_id
from tests.docker.model_stack import ModelStack

pytestmark = pytest.mark.docker
TASK = "py-semver-prerelease"
AGENT = "mini-swe-agent"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def bash_turn(call_id: str, command: str, text: str | None = None) -> dict[str, object]:
    return {
        "content": text,
        "tool_calls": [{"id": call_id, "name": "bash", "arguments": {"command": command}}],
    }


def solving_turns() -> list[dict[str, object]]:
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


class Sampler:
    """Samples every process's argv on the host and in the run's container until stopped."""

    def __init__(self, container: str) -> None:
        self.container = container
        self.host: list[str] = []
        self.inside: list[str] = []
        self.labels: list[str] = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def sample(self) -> None:
        script = "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done 2>/dev/null"
        while not self.stopped.is_set():
            host = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True)
            self.host.append(host.stdout)
            inside = subprocess.run(
                ["docker", "exec", self.container, "sh", "-c", script],
                capture_output=True,
                text=True,
            )
            if inside.returncode == 0:
                self.inside.append(inside.stdout)
            labels = subprocess.run(
                ["docker", "inspect", "--format", "{{json .Config.Labels}}", self.container],
                capture_output=True,
                text=True,
            )
            if labels.returncode == 0:
                self.labels.append(labels.stdout)
            self.stopped.wait(0.5)

    def __enter__(self) -> Sampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.thread.join(timeout=30)


def run_agent(
    model_stack: ModelStack, tmp_path: Path, model: str, sampler: bool = False
) -> tuple[subprocess.CompletedProcess[str], Path, Sampler | None]:
    """One run of mini-swe-agent with `model`; its ssebench result and run directory."""
    run_id = new_run_id("mswea")
    arguments = [
        "run", "--local", str(PILOT_DATASET), "--task", TASK, "--agent", AGENT,
        "--model", model, "--run-id", run_id, "--results", str(tmp_path), "--timeout", "900",
        "--difficulty", "1",
    ]  # fmt: skip
    process = start_ssebench(*arguments, env=model_stack.env)
    watcher = Sampler(f"ssebench-{run_id}") if sampler else None
    if watcher is not None:
        with watcher:
            output, _ = process.communicate(timeout=1500)
    else:
        output, _ = process.communicate(timeout=1500)
    done = subprocess.CompletedProcess(arguments, process.returncode, output, "")
    lines = [line for line in output.splitlines() if "\t" in line]
    assert lines, output[-4000:]
    run_dir = Path(lines[-1].split("\t")[1])
    return done, run_dir, watcher


def agent_events(run_dir: Path) -> list[dict[str, object]]:
    events = [json.loads(line) for line in (run_dir / "archive" / "dialog.jsonl").open()]
    return [e for e in events if e.get("source") == "agent"]


def test_mini_swe_agent_reads_checks_edits_and_passes(
    model_stack: ModelStack, tmp_path: Path
) -> None:
    model = model_stack.script("mini-swe-agent-solves", solving_turns())
    key = model_stack.env["LITELLM_MASTER_KEY"]  # the run's key: no database, no per-run key
    done, run_dir, sampler = run_agent(model_stack, tmp_path, model, sampler=True)
    assert done.returncode == 0, done.stdout[-4000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "passed", summary

    agent = agent_events(run_dir)
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
    events = [json.loads(line) for line in (run_dir / "archive" / "dialog.jsonl").open()]
    assert [e["tool"] for e in events if e["type"] == "tool_call"] == ["test", "test"]
    assert "_identifier_key" in (run_dir / "final.patch").read_text()

    chats = model_stack.requests(model)
    assert len(chats) == 5, "every scripted turn went through the proxy, no retry"
    assert chats[0]["body"]["tools"][0]["function"]["name"] == "bash"
    assert chats[-1]["body"]["messages"][-1]["role"] == "tool"

    # The run key: in no file of the run directory, no process's argv, no label, no image.
    assert sampler is not None and sampler.inside, "the container's processes were sampled"
    assert any("driver.py" in sample for sample in sampler.inside), "sampled during the run"
    assert sampler.labels, "the container's labels were read"
    assert not any(key in sample for sample in sampler.host + sampler.inside + sampler.labels)
    for image in (f"ssebench/agent-{AGENT}/{TASK}:1", f"ssebench/agent-install/{AGENT}:2.4.6-1"):
        inspect = subprocess.run(["docker", "image", "inspect", image], capture_output=True)
        history = subprocess.run(
            ["docker", "history", "--no-trunc", image], capture_output=True, check=True
        )
        assert inspect.returncode == 0 and key.encode() not in inspect.stdout + history.stdout
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert key not in path.read_text(errors="replace"), path
    assert key not in done.stdout


def test_mini_swe_agent_that_gives_up_is_graded_failed(
    model_stack: ModelStack, tmp_path: Path
) -> None:
    turns = [
        bash_turn("call-look", "ls", "Let me see the repository."),
        bash_turn("call-quit", SUBMIT, "I cannot fix this issue."),
    ]
    model = model_stack.script("mini-swe-agent-gives-up", turns)
    _, run_dir, _ = run_agent(model_stack, tmp_path, model)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "failed", summary
    agent = agent_events(run_dir)
    assert agent[-1]["type"] == "complete" and agent[-1]["status"] == "success"
    assert [m["text"] for m in agent if m["type"] == "message"][-1] == "I cannot fix this issue."


def test_mini_swe_agent_whose_model_answers_500_ends_as_an_error(
    model_stack: ModelStack, tmp_path: Path
) -> None:
    turns = [{"error": 500, "message": "the upstream is down", "repeat": True}]
    model = model_stack.script("mini-swe-agent-errors", turns)
    started = time.monotonic()
    _, run_dir, _ = run_agent(model_stack, tmp_path, model)
    took = time.monotonic() - started
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "error", summary
    error = str(summary["error_msg"])
    assert error.startswith("Model error: InternalServerError"), summary
    assert "the upstream is down" in error, summary
    complete = agent_events(run_dir)[-1]
    assert complete["type"] == "complete" and complete["model_error"] is True
    # mini-swe-agent's retries are bounded (3 attempts): the run ends by itself, long
    # before its 900 s timeout.
    assert took < 400, took
    # Each of mini-swe-agent's attempts reached the upstream (the proxy may retry too).
    assert len(model_stack.requests(model)) >= 3
