"""Runs with a model, for real: the local stack with the real LiteLLM proxy (built
here), a scripted OpenAI-compatible model server behind it, and the mini agent in a
task container on the internal network.

The proxy runs without its database (LiteLLM's database layer cannot start on this
machine), so it cannot make per-run keys: these runs opt in to the master key
(SSEBENCH_PROXY_MASTER_KEY_FOR_RUNS=1). Key management itself is tested against a
stand-in of the admin API in tests/unit/test_proxy_keys.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ssebench.proxy.stack import SERVICE_URL
from tests.cli import sleeper_started
from tests.conftest import PILOT_DATASET
from tests.docker.conftest import new_run_id
from tests.docker.test_docker_backend_runs import start_run
from tests.polling import wait_until

pytestmark = pytest.mark.docker
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TASK = "py-semver-prerelease"
FAKE_MODEL = "fake-model"
DEFAULT_NETWORK = "ssebench_default"
AGENTS_NETWORK = "ssebench_agents"


WAIT_FOR_SERVER = """
import time, urllib.request
for _ in range(50):
    try:
        urllib.request.urlopen("http://127.0.0.1:8000/health", timeout=2)
        break
    except OSError:
        time.sleep(0.2)
else:
    raise SystemExit("the fake model server did not start")
"""


@dataclass
class Stack:
    env: dict[str, str]
    script_dir: Path
    image: str


def ssebench(
    *arguments: str, env: dict[str, str], timeout: float = 1500
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ssebench.cli.main", *arguments],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def docker(
    *arguments: str, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["docker", *arguments], capture_output=True, text=True, timeout=300, env=env
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


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


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    work = tmp_path_factory.mktemp("model-runs")
    base = {**os.environ, "XDG_STATE_HOME": str(work / "state")}
    status = ssebench("proxy", "status", env=base, timeout=120)
    if status.returncode == 0:
        pytest.fail("a LiteLLM stack is already running here; these tests start their own")
    models = work / "models"
    models.mkdir()
    (models / "fake.yaml").write_text(
        "provider: fake\nkey_variable: OPENAI_API_KEY\n"
        f"api_base: http://{FAKE_MODEL}:8000/v1\n"
        "models:\n  - {name: fake-coder, litellm_model: openai/fake-coder}\n"
    )
    env = {
        **base,
        "LITELLM_MASTER_KEY": "sk-master-" + secrets.token_hex(12),
        "OPENAI_API_KEY": "provider-" + secrets.token_hex(12),
        "SSEBENCH_MODELS_DIR": str(models),
        "SSEBENCH_PROXY_DATABASE": "0",
        "SSEBENCH_PROXY_MASTER_KEY_FOR_RUNS": "1",
    }
    build = ssebench("proxy", "build", "--no-database", env=env)
    assert build.returncode == 0, build.stderr[-3000:]
    image = build.stdout.split()[1]
    # The stack's default network, made as Compose would (it adopts it), so the
    # model server is on it before `ssebench run` starts the stack.
    if docker("network", "inspect", DEFAULT_NETWORK, check=False).returncode != 0:
        docker(
            "network", "create", "--label", "com.docker.compose.project=ssebench",
            "--label", "com.docker.compose.network=default", DEFAULT_NETWORK,
        )  # fmt: skip
    script_dir = work / "script"
    script_dir.mkdir()
    (script_dir / "turns.json").write_text(json.dumps(script_turns()))
    os.chmod(script_dir, 0o777)
    name = f"ssebench-test-{FAKE_MODEL}-{secrets.token_hex(3)}"
    server = FIXTURES / "fake_model_server.py"
    docker(
        "run", "-d", "--rm", "--name", name, "--network", DEFAULT_NETWORK,
        "--network-alias", FAKE_MODEL, "-e", "OPENAI_API_KEY",
        "--mount", f"type=bind,source={server},target=/fake/server.py,readonly",
        "--mount", f"type=bind,source={script_dir},target=/script",
        "--entrypoint", "python3", image, "/fake/server.py", "--host", "0.0.0.0",
        "--port", "8000", "--script", "/script/turns.json",
        "--provider-key-variable", "OPENAI_API_KEY", "--requests-log", "/script/requests.jsonl",
        env=env,  # -e NAME takes the value from this environment, never from argv
    )  # fmt: skip
    ready = docker("exec", name, "python3", "-c", WAIT_FOR_SERVER, check=False)
    assert ready.returncode == 0, docker("logs", name, check=False).stderr
    try:
        yield Stack(env=env, script_dir=script_dir, image=image)
    finally:
        docker("rm", "-f", name, check=False)
        down = ssebench("proxy", "down", env=env, timeout=300)
        assert down.returncode == 0, down.stderr


def test_mini_solves_a_task_through_the_real_proxy(stack: Stack, tmp_path: Path) -> None:
    run_id = new_run_id("mini")
    done = ssebench(
        "run", "--local", str(PILOT_DATASET), "--task", TASK, "--agent", "mini",
        "--model", "fake-coder", "--run-id", run_id, "--results", str(tmp_path),
        "--timeout", "600", env=stack.env,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "starting the LiteLLM stack" in done.stderr, "ssebench run started the stack"
    status, run_dir_text = done.stdout.strip().splitlines()[-1].split("\t")
    run_dir = Path(run_dir_text)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert status == summary["status"] == "passed", summary
    assert summary["config"]["model"] == "fake-coder"
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

    requests = [json.loads(line) for line in (stack.script_dir / "requests.jsonl").open()]
    chats = [r for r in requests if r["path"].endswith("/chat/completions")]
    assert len(chats) == 4, "every scripted turn went through the proxy"
    assert all(r["body"]["model"] == "fake-coder" for r in chats)
    provider = hashlib.sha256(f"Bearer {stack.env['OPENAI_API_KEY']}".encode()).hexdigest()
    assert all(r["authorization_sha256"] == provider for r in chats), "the proxy's own key"
    assert chats[-1]["body"]["messages"][-1]["role"] == "tool"

    secrets_here = (stack.env["LITELLM_MASTER_KEY"], stack.env["OPENAI_API_KEY"])
    for path in run_dir.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert not any(secret in text for secret in secrets_here), path
    assert not any(secret in output for secret in secrets_here)


def test_a_restricted_run_reaches_the_proxy_and_nothing_else(stack: Stack) -> None:
    up = ssebench("proxy", "up", "--no-database", env=stack.env)
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
        "health = 'http://litellm:4000/health/liveliness'\n"
        "alive = urllib.request.urlopen(health, timeout=5).status\n"
        "print(alive, reach(sys.argv[1], 8000), reach('fake-model', 8000))\n"
    )
    done = docker(
        "run", "--rm", "--network", AGENTS_NETWORK, "--entrypoint", "python3", stack.image,
        "-c", probe, fake_address,
    )  # fmt: skip
    assert done.stdout.split() == ["200", "False", "False"], done.stdout + done.stderr


def test_an_open_run_reaches_the_proxy_at_the_same_url(stack: Stack, tmp_path: Path) -> None:
    """--egress open: on the default bridge and on ssebench_agents, so the real proxy
    answers at the URL a restricted run gets as SSE_BASE_URL."""
    up = ssebench("proxy", "up", "--no-database", env=stack.env)
    assert up.returncode == 0, up.stderr[-3000:]
    run_id = new_run_id("open-proxy")
    process = start_run(tmp_path, run_id, "--egress", "open")
    try:
        wait_until(lambda: sleeper_started(run_id), what="the sleeper agent to start")
        networks = docker(
            "inspect", "--format", "{{json .NetworkSettings.Networks}}", f"ssebench-{run_id}"
        ).stdout
        assert set(json.loads(networks)) == {"bridge", AGENTS_NETWORK}
        probe = (
            "import sys, urllib.request\n"
            "print(urllib.request.urlopen(sys.argv[1] + '/health/liveliness', timeout=5).status)"
        )
        done = ssebench(
            "runs", "exec", run_id, "--user", "model", "--",
            "python3", "-c", probe, SERVICE_URL, env=stack.env, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0 and done.stdout.split() == ["200"], done.stdout + done.stderr
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=120)
