"""What the tests of the real agents share: one run of an agent on the pilot task with a
scripted model (tests/docker/model_stack.py), what could be seen of it from outside
while it went on, and the check that the run's key is nowhere.

The key of these runs is the proxy's master key: the proxy runs without its database,
so it cannot make a key per run (model_stack.py says why).
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ssebench.agents import load_agent
from tests.cli import last_line_verdict, run_arguments, start_ssebench
from tests.conftest import PILOT_DATASET
from tests.docker.conftest import new_run_id
from tests.docker.model_stack import ModelStack, docker

TASK = "py-semver-prerelease"
# Reads every process's argv, as ps does, in a task container that may have no ps.
READ_ARGV = (
    "import os\n"
    "for pid in filter(str.isdigit, os.listdir('/proc')):\n"
    "    try:\n"
    "        print(open(f'/proc/{pid}/cmdline', 'rb').read().replace(b'\\0', b' ').decode())\n"
    "    except (OSError, ValueError):\n"
    "        pass\n"
)


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tool call of a scripted turn."""
    return {"id": call_id, "name": name, "arguments": arguments}


def install_image(agent: str) -> str:
    """The agent's install image, named by its pinned versions: the upstream program's
    and the agent's (agent.json's own, else this ssebench's release version)."""
    loaded = load_agent(agent)
    assert loaded.upstream is not None, f"{agent} wraps no upstream program"
    return f"ssebench/agent-install/{agent}:{loaded.upstream.version}-{loaded.version}"


@dataclass
class Watch:
    """What could be seen of a run from outside while it went on: every process's argv
    on the host and in the task container, and the container's labels."""

    host: list[str] = field(default_factory=list)
    container: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)

    def look(self, container: str) -> None:
        inside = docker("exec", container, "python3", "-c", READ_ARGV, check=False)
        if inside.returncode == 0:
            self.container.append(inside.stdout)
        # Right after the look inside, so that an agent seen there is most likely still
        # running when ps looks (a loaded machine makes each look slow).
        # -ww: whole lines; off a terminal ps may cut them at 80 columns, and a key
        # late in a long argv would go unseen.
        ps = subprocess.run(
            ["ps", "-ww", "-eo", "args"], capture_output=True, text=True, timeout=30
        )
        self.host.append(ps.stdout)
        labels = docker("inspect", "--format", "{{json .Config.Labels}}", container, check=False)
        if labels.returncode == 0:
            self.labels.append(labels.stdout)


@dataclass
class AgentRun:
    status: str
    run_dir: Path
    output: str
    seconds: float
    watch: Watch | None

    @cached_property
    def summary(self) -> dict[str, Any]:
        return dict(json.loads((self.run_dir / "summary.json").read_text()))

    def dialog(self) -> list[dict[str, Any]]:
        with (self.run_dir / "archive" / "dialog.jsonl").open() as lines:
            return [json.loads(line) for line in lines]

    def agent_events(self) -> list[dict[str, Any]]:
        """The dialog's events that the agent's wrapper wrote."""
        return [event for event in self.dialog() if event.get("source") == "agent"]


def run_agent(
    model_stack: ModelStack,
    agent: str,
    model: str,
    results: Path,
    *options: str,
    watch: bool = False,
    dataset: Path = PILOT_DATASET,
    task: str = TASK,
) -> AgentRun:
    """Run the agent on task (the pilot's TASK) with model's script and options, to its
    end; with watch, look at the run from outside every half second while it goes on."""
    run_id = new_run_id(agent)
    arguments = run_arguments(dataset, task, agent, run_id, results, *options)
    log_path = results.parent / f"{run_id}.log"
    seen = Watch() if watch else None
    started = time.monotonic()
    with log_path.open("w") as log:
        process = start_ssebench(
            *arguments, "--model", model, "--timeout", "900", env=model_stack.env, output=log
        )
        try:
            while process.poll() is None:
                if seen is not None:
                    seen.look(f"ssebench-{run_id}")
                time.sleep(0.5)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=60)
    seconds = time.monotonic() - started
    output = log_path.read_text()
    assert process.returncode == 0, output[-5000:]
    status, run_dir = last_line_verdict(output)
    run = AgentRun(status, run_dir, output, seconds, seen)
    assert status == run.summary["status"], run.summary
    assert run.summary["config"]["agent"] == agent and run.summary["config"]["model"] == model
    return run


def assert_key_is_nowhere(model_stack: ModelStack, run: AgentRun, agent: str, argv: str) -> None:
    """The run's key is in no file of the run directory, no line of ssebench's output,
    no argv seen while the agent ran (argv: a part of the agent's own, which proves that
    the watch saw it running), no label of the run's container, no image of the run or
    the agent's install image, and no log line of the proxy."""
    key = model_stack.env["LITELLM_MASTER_KEY"]
    for path in run.run_dir.rglob("*"):
        if path.is_file():
            assert key not in path.read_text(errors="replace"), path
    assert key not in run.output
    watch = run.watch
    assert watch is not None, "the run was watched"
    assert any(argv in seen for seen in watch.container), watch.container[-3:]
    assert any(argv in seen for seen in watch.host), "ps on the host saw the agent"
    assert watch.labels, "the container's labels were read"
    assert not any(key in seen for seen in watch.host + watch.container + watch.labels)
    images = {image for image in run.summary["images"].values() if image}
    assert images, run.summary["images"]
    for image in images | {install_image(agent)}:
        assert key not in docker("image", "inspect", image).stdout, image
        assert key not in docker("history", "--no-trunc", image).stdout, image
    litellm = docker(
        "ps", "-q", "--filter", "label=com.docker.compose.project=ssebench",
        "--filter", "label=com.docker.compose.service=litellm",
    ).stdout  # fmt: skip
    assert litellm.split(), "the proxy's container was found"
    for container in litellm.split():
        logs = docker("logs", container, check=False)
        assert key not in logs.stdout + logs.stderr
