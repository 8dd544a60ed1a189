"""images publish: exactly the names prebuilt_images computes, tagged and delivered."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ssebench.agents import load_agent
from ssebench.errors import UserError
from ssebench.extensions import ImageRequest, Images, prebuilt_images
from ssebench.images import publish
from ssebench.tasks.dataset import load_dataset
from tests.cli import ssebench

PILOT = Path(__file__).resolve().parents[2] / "datasets" / "pilot"
REGISTRY = "registry.test/sse"


def _requests() -> list[ImageRequest]:
    tasks = load_dataset(PILOT).tasks[:2]
    agents = [load_agent("reference"), load_agent("dummy")]
    return publish.plan(tasks, agents, registry=REGISTRY)


def _fake_build(request: ImageRequest) -> Images:
    """What a local build would name its images (the agent layer; the sidecar pair)."""
    if request.mode == "sidecar":
        return Images(
            run=f"ssebench/agent-{request.agent}/sidecar:{request.agent_version}",
            environment=f"ssebench/tool/{request.task_id}:{request.tool_version}",
        )
    return Images(run=f"ssebench/agent-{request.agent}/{request.task_id}:{request.agent_version}")


def test_names_are_those_of_prebuilt_images() -> None:
    requests = _requests()
    expected: set[str] = set()
    for request in requests:
        images = prebuilt_images(dataclasses.replace(request, prebuilt=True))
        expected |= {name for name in (images.run, images.environment) if name}
    names = publish.published_names(requests)
    assert set(names) == expected
    assert len(names) == len(expected)
    assert f"{REGISTRY}/agent-reference/sidecar:{load_agent('reference').version}" in names
    # 2 tasks x 2 agents sandbox, 2 agents' sidecar images, 2 tasks' tool-sidecar images.
    assert len(names) == 4 + 2 + 2


def test_build_tags_and_pushes_each_name_once() -> None:
    built: list[ImageRequest] = []

    def build(request: ImageRequest) -> Images:
        assert not request.prebuilt
        built.append(request)
        return _fake_build(request)

    commands: list[list[str]] = []
    publications = publish.build_all(_requests(), build)
    publish.deliver(
        publications,
        "push",
        tag=lambda image, name: commands.append(["tag", image, name]),
        push=lambda name: commands.append(["push", name]),
    )
    names = publish.published_names(_requests())
    assert sorted(p.name for p in publications) == sorted(names)
    tags = [c for c in commands if c[0] == "tag"]
    pushes = [c[1] for c in commands if c[0] == "push"]
    assert sorted(pushes) == sorted(names)
    assert len(tags) == len(names)
    assert commands.index(tags[-1]) < commands.index(["push", pushes[0]])
    assert {request.mode for request in built} == {"sandbox", "sidecar"}


@pytest.mark.parametrize("target", ["local", "docker"])
def test_load_local_only_tags_and_kind_loads_all(target: publish.Target) -> None:
    publications = publish.build_all(_requests(), _fake_build)
    calls: list[str] = []
    kind_calls: list[list[str]] = []
    publish.deliver(
        publications,
        target,
        tag=lambda image, name: calls.append("tag"),
        push=lambda name: calls.append("push"),
    )
    assert set(calls) == {"tag"}
    publish.deliver(
        publications,
        "kind",
        kind_cluster="ssebench",
        tag=lambda image, name: None,
        push=lambda name: calls.append("push"),
        kind=lambda a: kind_calls.append(list(a)),
    )
    assert "push" not in calls
    assert kind_calls == [
        ["load", "docker-image", "--name", "ssebench", *(p.name for p in publications)]
    ]


def test_one_name_for_two_images_is_refused() -> None:
    def build(request: ImageRequest) -> Images:
        return Images(run=f"local/{request.task_id}/{request.mode}")

    requests = [r for r in _requests() if r.mode == "sidecar"]
    with pytest.raises(UserError, match="two different images"):
        publish.build_all(requests, build)


def _publish_cli(*extra: str, task: str | None = None) -> list[str]:
    task = task or load_dataset(PILOT).tasks[0].id
    return [
        "images",
        "publish",
        "--registry",
        REGISTRY,
        "--tasks",
        task,
        "--agents",
        "reference",
        "--local",
        str(PILOT),
        *extra,
    ]


def test_cli_dry_run_prints_the_names() -> None:
    task = load_dataset(PILOT).tasks[0].id
    result = ssebench(*_publish_cli("--mode", "sandbox", "--dry-run", "--json"), timeout=60)
    assert result.returncode == 0, result.stderr
    version = load_agent("reference").version
    assert json.loads(result.stdout) == {
        "target": "push",
        "dry_run": True,
        "images": [f"{REGISTRY}/agent-reference/{task}:{version}"],
    }


def test_cli_unknown_task_is_one_line() -> None:
    result = ssebench(*_publish_cli("--dry-run", task="nope"), timeout=60)
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            _publish_cli("--backend", "fake", "--dry-run"),
            "ssebench: error: The backend 'fake' does not build images; build with one that "
            "does (--backend docker or --backend podman)",
        ),
        (
            ["build-case", "--backend", "fake", "--local", str(PILOT), "--tasks", "all"],
            "ssebench: error: The backend 'fake' does not build images; build with one that "
            "does (--backend docker or --backend podman)",
        ),
        (
            _publish_cli("--backend", "podman", "--load", "kind", "--dry-run"),
            "ssebench: error: --load kind loads images from Docker's store, not from "
            "Podman's: publish with --backend docker, or push them (no --load) for the "
            "cluster to pull",
        ),
    ],
    ids=["publish-fake", "build-case-fake", "podman-kind"],
)
def test_cli_backend_that_cannot_serve_is_one_line(arguments: list[str], message: str) -> None:
    result = ssebench(*arguments, timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip() == message
