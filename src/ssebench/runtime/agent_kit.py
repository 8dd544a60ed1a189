"""What every agent wrapper needs, in one place: the prompt, the dialog, the clock.

An agent folder's `run` is a small program that drives one upstream agent (Claude
Code, Codex CLI, ...). It runs as the user `model` in the task container (or the
agent container of a sidecar run), where this package is importable after

    sys.path.insert(0, "/opt/ssebench/lib")
    from ssebench_runtime import agent_kit

Standard library only, like the rest of the runtime. The wrapper:
  - gives its agent `agent_prompt()` (the same text for every agent),
  - passes it only `model_environment()` plus its own settings that point it at
    SSE_BASE_URL with SSE_API_KEY (in the environment, never in argv or a file),
  - runs it with `run_streaming()`, turning each line of its machine-readable
    output into dialog events with `post_event()` as they come,
  - ends with `finish()`, which posts the `complete` event and gives the exit code.

Dialog events an agent posts (the daemon adds seq, ts and source="agent"):
  prompt   {"role": "user", "text"}
  message  {"role": "assistant", "text", "step"?, "usage"?}
  tool     {"id", "name", "status": "running"|"success"|"error", "input"?, "output"?}
  usage    {"input_tokens", "output_tokens", ...}
  complete {"status": "success"|"error"|"timeout", "reason", "seconds"}
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any

# What a tool's output may take in the dialog; the rest is cut from the middle.
OUTPUT_LIMIT = 16 * 1024
# Stop the agent this long before TIMEOUT, so the run ends by the wrapper's own word.
DEADLINE_MARGIN_SECONDS = 10
# The name every agent's configuration gives the MCP server of the tool layer.
MCP_SERVER_NAME = "ssebench"
EXIT_CODES = {"success": 0, "timeout": 124}
# The wrapper's exit status when the run's model could not be used (the proxy answered
# an error, the budget is spent): the runtime records such a run as `error`, not as a
# failed attempt, with the reason of the agent's last `complete` event.
EXIT_MODEL_ERROR = 3
# Variables an upstream agent may see from the wrapper's own environment: the
# toolchain's, never a key. Each wrapper adds the settings of its own agent.
PASSED_VARIABLES = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TERM", "TZ", "TMPDIR")

PROMPT_TEMPLATE = """You are working in a git repository at {source_dir}. Fix the issue below.

{task_prompt}

How to work:
- Read the code and change the files in the repository with your own tools; do not commit.
- The `test_patch` tool (MCP server "{server}") builds your current change on a clean copy and
  runs the checks this task allows; it answers PASSED or FAILED with the end of the log.
- When the fix is complete, stop. Your change is graded as it is in the working tree.
"""


def log(name: str, message: str) -> None:
    print(f"{name}: {message}", file=sys.stderr, flush=True)


def daemon_url() -> str:
    return os.environ.get("SSE_DAEMON_URL", "").rstrip("/")


def mcp_url() -> str:
    """The tool layer's MCP endpoint (Streamable HTTP on the container's loopback)."""
    return os.environ.get("SSE_MCP_URL") or f"{daemon_url()}/mcp"


def task_prompt() -> str:
    """The task's own prompt, from the daemon (SSE_PROMPT stands in without one)."""
    url = daemon_url()
    if url:
        with urllib.request.urlopen(url + "/prompt", timeout=10) as answer:
            return str(json.load(answer)["prompt"])
    prompt = os.environ.get("SSE_PROMPT", "")
    if not prompt:
        raise RuntimeError("no daemon (SSE_DAEMON_URL) and no SSE_PROMPT")
    return prompt


def agent_prompt() -> str:
    """The prompt every agent gets: the task's prompt and how the run works."""
    return PROMPT_TEMPLATE.format(
        source_dir=os.environ.get("SSE_SOURCE_DIR", "."),
        task_prompt=task_prompt().strip(),
        server=MCP_SERVER_NAME,
    )


def post_event(event: Mapping[str, Any]) -> None:
    """Add an event to the run's dialog; a run without a daemon goes on without."""
    url = daemon_url()
    if not url:
        return
    request = urllib.request.Request(
        url + "/dialog",
        data=json.dumps(event).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10):
            pass
    except (OSError, ValueError) as error:
        log("agent", f"could not post to the dialog: {error}")


def clip(text: str, limit: int = OUTPUT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters left out ...]\n{text[-half:]}"


def model_settings() -> tuple[str, str, str]:
    """(base URL, key, model name) of the run's model; raises when there is none."""
    base = os.environ.get("SSE_BASE_URL", "").rstrip("/")
    key = os.environ.get("SSE_API_KEY", "")
    model = os.environ.get("SSE_MODEL_NAME", "")
    if not base or not model:
        raise RuntimeError("SSE_BASE_URL and SSE_MODEL_NAME must be set (run with --model)")
    return base, key, model


def model_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A clean environment for the upstream agent: the toolchain's variables and extra."""
    env = {name: os.environ[name] for name in PASSED_VARIABLES if name in os.environ}
    env.setdefault("LANG", "C.UTF-8")
    env.update(extra or {})
    return env


def whole_number(variable: str, default: int) -> int:
    """The setting `variable` of the environment, a whole number >= 1, else default
    when it is unset. Raises ValueError naming the variable when it is anything else."""
    value = os.environ.get(variable, "").strip()
    if not value:
        return default
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{variable} must be a whole number >= 1, not {value!r}")
    return int(value)


def deadline() -> float:
    """The monotonic time by which the agent must have stopped."""
    timeout = float(os.environ.get("TIMEOUT") or 3600)
    return time.monotonic() + max(timeout - DEADLINE_MARGIN_SECONDS, 1.0)


def run_streaming(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str,
    on_line: Callable[[str], None],
    until: float,
    stdin: str | None = None,
) -> tuple[int, bool]:
    """Run argv, handing each line of its stdout to on_line as it comes (stderr goes
    to the wrapper's stderr, the agent log). Returns (exit status, timed out); at
    `until` the agent's process group is stopped (TERM, then KILL)."""
    process = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        start_new_session=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        bufsize=1,
    )
    timed_out = False
    global _running
    _running = process

    def stop(signum: int, frame: object) -> None:
        _stop_group(process)

    signal.signal(signal.SIGTERM, stop)
    if stdin is not None and process.stdin is not None:
        process.stdin.write(stdin)
        process.stdin.close()
    assert process.stdout is not None

    def watch() -> None:
        nonlocal timed_out
        while process.poll() is None:
            if time.monotonic() >= until:
                timed_out = True
                _stop_group(process)
                return
            time.sleep(0.5)

    threading.Thread(target=watch, daemon=True).start()
    for line in process.stdout:
        line = line.rstrip("\n")
        if line:
            try:
                on_line(line)
            except Exception as error:  # one odd line must not end the run
                log("agent", f"could not read a line of the agent's output: {error!r}")
    return process.wait(), timed_out


# The agent that run_streaming runs, for stop_agent.
_running: subprocess.Popen[str] | None = None


def stop_agent() -> None:
    """Stop the agent that run_streaming runs (its whole process group: TERM, then KILL),
    for a wrapper that ends it early, as at its own turn limit. Returns at once: it may
    be called from on_line, which must go on reading the agent's output meanwhile."""
    if _running is not None:
        threading.Thread(target=_stop_group, args=(_running,), daemon=True).start()


def _stop_group(process: subprocess.Popen[str]) -> None:
    for signum, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, signum)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def finish(status: str, reason: str, started: float, *, model_error: bool = False) -> int:
    """Post the `complete` event; the wrapper's exit code: 0, 124 on timeout,
    EXIT_MODEL_ERROR when the model could not be used (model_error), else 1."""
    event: dict[str, Any] = {
        "type": "complete",
        "status": status,
        "reason": reason,
        "seconds": round(time.monotonic() - started, 1),
    }
    if model_error:
        event["model_error"] = True
    post_event(event)
    if model_error:
        return EXIT_MODEL_ERROR
    return EXIT_CODES.get(status, 1)
