"""Runs with a model, for real: the shared stack of tests/docker/model_stack.py (the
real LiteLLM proxy, built here, with a scripted OpenAI-compatible model server behind
it) and the mini agent in a task container on the run's own network."""

from __future__ import annotations

import hashlib
import json
import signal
from pathlib import Path

import pytest

from ssebench.proxy.stack_service import SERVICE_URL
from tests.cli import sleeper_started
from tests.conftest import PILOT_DATASET
from tests.docker.conftest import new_run_id
from tests.docker.model_stack import (
    DEFAULT_NETWORK,
    FAKE_MODEL,
    ModelStack,
    docker,
    ssebench,
)
from tests.docker.test_docker_backend_runs import start_run
from tests.polling import wait_until

pytestmark = pytest.mark.docker
TASK = "py-semver-prerelease"


def script_turns() -> list[dict[str, object]]:
    patch = (PILOT_DATASET / TASK / "reference.patch").read_text()
    return [
        {
            "content": "I will look at how pre-release identifiers are compared.",
            "tool_calls": [
                {
                    "id": "call-1",
                    "name": "bash",
                    "arguments": {
                        "command": "git status --short && "
                        "grep -n '_prerelease_key' -A6 semver/version.py"
                    },
                }
            ],
        },
        {
            "content": "Numeric identifiers must compare as numbers. Fixing that.",
            "tool_calls": [
                {
                    "id": "call-2",
                    "name": "bash",
                    "arguments": {"command": f"git apply <<'PATCH'\n{patch}PATCH"},
                }
            ],
        },
        {
            "content": None,
            "tool_calls": [
                {
                    "id": "call-3",
                    "name": "bash",
                    "arguments": {"command": "python3 -m unittest discover -s tests -q"},
                }
            ],
        },
        {"content": "Done: numeric pre-release identifiers now compare numerically."},
    ]


def test_mini_solves_a_task_through_the_real_proxy(model_stack: ModelStack, tmp_path: Path) -> None:
    run_id = new_run_id("mini")
    model = model_stack.script("mini-solves", script_turns())
    # The stack is shared by the session: the first model run starts it, later ones find it.
    was_up = ssebench("proxy", "status", env=model_stack.env, timeout=120).returncode == 0
    done = ssebench(
        "run", "--local", str(PILOT_DATASET), "--task", TASK, "--agent", "mini",
        "--model", model, "--run-id", run_id, "--results", str(tmp_path),
        "--timeout", "600", env=model_stack.env,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    started = "starting the LiteLLM stack" in done.stderr
    assert started != was_up, f"the stack was up: {was_up}; the run started it: {started}"
    status, run_dir_text = done.stdout.strip().splitlines()[-1].split("\t")
    run_dir = Path(run_dir_text)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert status == summary["status"] == "passed", summary
    assert summary["config"]["model"] == model
    # No database, so no per-run key: the run used the master key and has no spend.
    assert summary["spend"] is None

    events = [json.loads(line) for line in (run_dir / "archive" / "dialog.jsonl").open()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    agent = [e for e in events if e.get("source") == "agent"]
    assert [e["type"] for e in agent] == [
        "prompt",
        "message", "tool", "tool",
        "message", "tool", "tool",
        "message", "tool", "tool",
        "message", "complete",
    ]  # fmt: skip
    assert "Pre-release versions" in agent[0]["text"]
    tools = [e for e in agent if e["type"] == "tool"]
    assert [e["status"] for e in tools] == ["running", "success"] * 3
    assert agent[-2]["text"].startswith("Done:")
    assert agent[-1]["status"] == "success"
    assert "_identifier_key" in (run_dir / "final.patch").read_text()

    requests = model_stack.requests(model)
    chats = [r for r in requests if str(r["path"]).endswith("/chat/completions")]
    assert len(chats) == 4, "every scripted turn went through the proxy"
    assert all(r["body"]["model"] == model for r in chats)
    provider = hashlib.sha256(f"Bearer {model_stack.env['OPENAI_API_KEY']}".encode()).hexdigest()
    assert all(r["authorization_sha256"] == provider for r in chats), "the proxy's own key"
    assert chats[-1]["body"]["messages"][-1]["role"] == "tool"

    secrets_here = (model_stack.env["LITELLM_MASTER_KEY"], model_stack.env["OPENAI_API_KEY"])
    for path in run_dir.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert not any(secret in text for secret in secrets_here), path
    assert not any(secret in output for secret in secrets_here)


def test_a_model_run_reaches_the_proxy_and_nothing_else_of_the_stack(
    model_stack: ModelStack, tmp_path: Path
) -> None:
    """The run's own network holds the run and the proxy: the proxy answers at
    SSE_BASE_URL, the model server on the stack's default network does not, by name
    or by address (see also tests/docker/test_run_networks.py)."""
    up = ssebench("proxy", "up", "--no-database", env=model_stack.env)
    assert up.returncode == 0, up.stderr[-3000:]
    fake = docker("ps", "-q", "--filter", f"name=ssebench-test-{FAKE_MODEL}").stdout.split()[0]
    fake_address = docker(
        "inspect",
        "--format",
        f'{{{{(index .NetworkSettings.Networks "{DEFAULT_NETWORK}").IPAddress}}}}',
        fake,
    ).stdout.strip()
    probe = (
        "import socket, sys, urllib.request\n"
        "def reach(host, port):\n"
        "    try:\n"
        "        socket.create_connection((host, port), timeout=3).close(); return True\n"
        "    except OSError:\n"
        "        return False\n"
        "alive = urllib.request.urlopen(sys.argv[2] + '/health/liveliness', timeout=5).status\n"
        "print(alive, reach(sys.argv[1], 8000), reach('fake-model', 8000))\n"
    )
    run_id = new_run_id("model-net")
    model = model_stack.script("mini-gives-up", [])
    process = start_run(tmp_path, run_id, "--model", model, env=model_stack.env)
    try:
        wait_until(lambda: sleeper_started(run_id), what="the sleeper agent to start")
        networks = docker(
            "inspect", "--format", "{{json .NetworkSettings.Networks}}", f"ssebench-{run_id}"
        ).stdout
        assert set(json.loads(networks)) == {f"ssebench-net-{run_id}"}
        done = ssebench(
            "runs", "exec", run_id, "--user", "model", "--",
            "python3", "-c", probe, fake_address, SERVICE_URL, env=model_stack.env, timeout=120,
        )  # fmt: skip
        assert done.stdout.split() == ["200", "False", "False"], done.stdout + done.stderr
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=120)
