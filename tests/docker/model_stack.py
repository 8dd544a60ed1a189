"""The real LiteLLM proxy with a scripted model behind it, shared by the model-run tests.

One stack per test session (starting the proxy costs seconds, and every model-run
test needs the same one): `ssebench proxy build --no-database`, a scripted
OpenAI-compatible server (tests/fixtures/fake_model_server.py) on the stack's default
network as `fake-model`, and the models of MODELS registered with the proxy.

A test picks a model, writes its script with `ModelStack.script(model, turns)` and
runs with `--model <model>`: the proxy sends the request on with the model's name, and
the scripted server answers from that model's script (--script-dir). So tests of
different agents never share a script, and a rewritten script starts from its first
turn.

The proxy runs without its database (LiteLLM's database layer cannot start on this
machine), so it cannot make per-run keys: runs opt in to the master key
(SSEBENCH_PROXY_MASTER_KEY_FOR_RUNS=1). Key management itself is tested against a
stand-in of the admin API in tests/unit/test_proxy_keys.py.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FAKE_MODEL = "fake-model"
DEFAULT_NETWORK = "ssebench_default"
# The scripted model server's container: a name no user's container has.
SERVER_NAME_PREFIX = f"ssebench-test-{FAKE_MODEL}-"
# The scenarios every agent's test may script, and the agents that have tests. A test
# scripts a model of its own: the scripted server counts a model's requests across the
# session, so two tests sharing one see each other's turns.
SCENARIOS = ("solves", "gives-up", "errors", "live", "assistant", "probes", "harbor")
AGENTS = ("mini", "claude-code", "codex", "opencode", "mini-swe-agent", "outside")
# Every model is an `openai/` model of a chat-only server (the scripted one has no
# Responses route), written as docs/models.md shows: Codex's Responses requests reach it
# through the bridge entry that ssebench's proxy configuration adds (proxy/models.py).
MODELS = [f"{agent}-{scenario}" for agent in AGENTS for scenario in SCENARIOS]

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
class ModelStack:
    env: dict[str, str]
    script_dir: Path
    image: str
    server: str

    def script(self, model: str, turns: object) -> str:
        """Write `model`'s script (a list of turns or {"turns", "side"}); its name."""
        if model not in MODELS:
            raise ValueError(f"{model!r} is not one of the stack's models (model_stack.MODELS)")
        path = self.script_dir / f"{model}.json"
        path.write_text(json.dumps(turns))
        path.chmod(0o644)
        return model

    def requests(self, model: str) -> list[dict[str, object]]:
        """What the proxy sent to the scripted server for `model`, oldest first."""
        log = self.script_dir / "requests.jsonl"
        if not log.exists():
            return []
        entries = [json.loads(line) for line in log.read_text().splitlines() if line]
        return [
            e
            for e in entries
            if isinstance(e.get("body"), dict) and e["body"].get("model") == model
        ]


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


def models_file() -> str:
    lines = [
        "provider: scripted",
        "key_variable: OPENAI_API_KEY",
        f"api_base: http://{FAKE_MODEL}:8000/v1",
        "models:",
    ]
    for model in MODELS:
        lines.append(f"  - {{name: {model}, litellm_model: openai/{model}}}")
    return "\n".join(lines) + "\n"


def _left_by_a_killed_test_session(temp_root: Path) -> bool:
    """Whether the stack running here is one this fixture started in a session killed
    before its teardown: its LiteLLM config is mounted from pytest's temporary
    directory, which no stack of a user's own is."""
    listing = docker(
        "ps", "-a", "--quiet", "--filter", "label=com.docker.compose.project=ssebench"
    ).stdout.split()
    if not listing:
        return False
    containers = json.loads(docker("inspect", *listing).stdout)
    sources = [Path(mount["Source"]) for found in containers for mount in found["Mounts"]]
    configs = [source for source in sources if source.name == "litellm-config.yaml"]
    return bool(configs) and all(source.is_relative_to(temp_root) for source in configs)


@pytest.fixture(scope="session")
def model_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelStack]:
    work = tmp_path_factory.mktemp("model-stack")
    base = {**os.environ, "XDG_STATE_HOME": str(work / "state")}
    status = ssebench("proxy", "status", env=base, timeout=120)
    if status.returncode == 0:
        if not _left_by_a_killed_test_session(tmp_path_factory.getbasetemp().parent):
            pytest.fail("a LiteLLM stack is already running here; these tests start their own")
        # Its restart policy brings it back with dockerd; ours replaces it.
        print("model_stack: taking down the stack a killed earlier test session left up")
        servers = docker("ps", "-aq", "--filter", f"name=^{SERVER_NAME_PREFIX}").stdout.split()
        if servers:
            docker("rm", "-f", *servers)
        down = ssebench("proxy", "down", env=base, timeout=300)
        assert down.returncode == 0, down.stderr
    models = work / "models"
    models.mkdir()
    (models / "scripted.yaml").write_text(models_file())
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
    script_dir = work / "scripts"
    script_dir.mkdir()
    os.chmod(script_dir, 0o777)
    name = f"{SERVER_NAME_PREFIX}{secrets.token_hex(3)}"
    server = FIXTURES / "fake_model_server.py"
    docker(
        "run", "-d", "--rm", "--name", name, "--network", DEFAULT_NETWORK,
        "--network-alias", FAKE_MODEL, "-e", "OPENAI_API_KEY",
        "--mount", f"type=bind,source={server},target=/fake/server.py,readonly",
        "--mount", f"type=bind,source={script_dir},target=/scripts",
        "--entrypoint", "python3", image, "/fake/server.py", "--host", "0.0.0.0",
        "--port", "8000", "--script-dir", "/scripts",
        "--provider-key-variable", "OPENAI_API_KEY", "--requests-log", "/scripts/requests.jsonl",
        env=env,  # -e NAME takes the value from this environment, never from argv
    )  # fmt: skip
    ready = docker("exec", name, "python3", "-c", WAIT_FOR_SERVER, check=False)
    assert ready.returncode == 0, docker("logs", name, check=False).stderr
    try:
        yield ModelStack(env=env, script_dir=script_dir, image=image, server=name)
    finally:
        docker("rm", "-f", name, check=False)
        down = ssebench("proxy", "down", env=env, timeout=300)
        assert down.returncode == 0, down.stderr
