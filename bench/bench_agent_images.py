"""Agent images (1)-(3): what an agent's install image costs, for each agent with an
install.Dockerfile (the built-in ones and the guide's example, docs/examples/agents/hello-agent):

(1) a cold build of its install image (--no-cache, into a throwaway tag) vs a cold
    build of the tool layer of one pilot task, the other layer ssebench builds from
    nothing once per task;
(2) a build of its agent layer for one task, once the install image exists (--no-cache
    of the agent layer only: what each further task costs) vs the same for the dummy
    agent, whose layer copies the empty install image;
(3) the size it adds: the install image, and the agent layer's own size on one task
    (agent image minus tool image) vs the dummy agent layer's own size.
"""

from __future__ import annotations

import dataclasses
import secrets
import subprocess
import tempfile
import time
from pathlib import Path

from common import PILOT, ROOT, Figure, NotMeasured, Result, docker_problem, main, run

from ssebench.agents import Agent, discover_agents, load_agent
from ssebench.images.builds import (
    BuildOutput,
    build_argv,
    build_environment,
    buildx_available,
    ensure_layers,
)
from ssebench.images.layers import Layer, run_layers
from ssebench.runner import image_request
from ssebench.tasks import load_dataset

TASK = "py-semver-prerelease"
EXAMPLES = ROOT / "docs" / "examples" / "agents"
MEGABYTE = 1_000_000


def cold_build_seconds(layer: Layer) -> float:
    """Seconds of a `docker build --no-cache` of layer into a throwaway tag (removed)."""
    throwaway = dataclasses.replace(layer, tag=f"bench-{secrets.token_hex(4)}")
    buildx = buildx_available()
    with tempfile.TemporaryDirectory(prefix="ssebench-bench-") as context:
        throwaway.write_context(Path(context))
        argv = build_argv(throwaway, Path(context), buildx=buildx)
        argv.insert(argv.index("--file"), "--no-cache")
        started = time.perf_counter()
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env=build_environment(buildx=buildx),
            timeout=3600,
        )
        seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"building {throwaway.image} failed: {done.stdout[-1500:]}")
    run(["docker", "image", "rm", throwaway.image])
    return seconds


def image_size(image: str) -> int:
    return int(run(["docker", "image", "inspect", "--format", "{{.Size}}", image]).strip())


def agent_layer_of(agent: Agent) -> tuple[Layer, Layer, Layer]:
    """The tool, install and agent layers of agent on TASK, built when missing."""
    task = load_dataset(PILOT).task(TASK)
    case, tool, layer = run_layers(image_request(task, agent))
    ensure_layers([case, tool, layer], output=BuildOutput(quiet=True))
    return tool, layer.inputs[0], layer


def measure() -> list[Result]:
    problem = docker_problem()
    if problem:
        return [NotMeasured("agent images", problem)]
    with_install = [
        agent for agent in discover_agents([EXAMPLES]) if agent.install_dockerfile is not None
    ]
    tool, _, dummy_layer = agent_layer_of(load_agent("dummy"))
    tool_cold = cold_build_seconds(tool)
    dummy_cold = cold_build_seconds(dummy_layer)
    dummy_own = image_size(dummy_layer.image) - image_size(tool.image)
    results: list[Result] = []
    for agent in sorted(with_install, key=lambda agent: agent.name):
        where = f"{agent.name} ({agent.origin})"
        try:
            _, install, layer = agent_layer_of(agent)
            install_cold = cold_build_seconds(install)
            layer_cold = cold_build_seconds(layer)
            install_size = image_size(install.image)
            own_size = image_size(layer.image) - image_size(tool.image)
        except Exception as error:  # one agent that does not build must not hide the others
            results.append(
                NotMeasured(f"agent images, {where}", f"{type(error).__name__}: {error}")
            )
            continue
        results += [
            Figure(
                f"agent images (1) cold install build, {where}",
                f"docker build --no-cache of {install.image}",
                install_cold,
                f"the same of the tool layer of {TASK}",
                tool_cold,
                note="one run each; includes its apt-get and npm/pip downloads",
            ),
            Figure(
                f"agent images (2) agent layer per task, {where}",
                "agent layer --no-cache, install image present",
                layer_cold,
                "the same for the dummy agent",
                dummy_cold,
                note=TASK,
            ),
            Figure(
                f"agent images (3) size added, {where}",
                f"agent layer's own size (install image {install_size / MEGABYTE:.1f} MB)",
                own_size / MEGABYTE,
                "the dummy agent layer's own size",
                dummy_own / MEGABYTE,
                unit="MB",
                note="image size minus the tool layer's",
            ),
        ]
    if not with_install:
        results.append(NotMeasured("agent images", "no agent has install.Dockerfile"))
    return results


if __name__ == "__main__":
    main(measure)
