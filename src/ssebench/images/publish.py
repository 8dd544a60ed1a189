"""Publish prebuilt images: build a task's and an agent's layers here, and give them the
names prebuilt_images() computes, so `ssebench run --prebuilt` finds them (spec,
"Prebuilt images").

The images are built by a backend's ImageBuilder (Backend.image_builder(): Docker's,
Podman's, an extension's), which also names and pushes them. Targets: `push` pushes
them to the registry; `local` (also `docker`, its older name) leaves them, so named, in
the backend's local image store (a cluster that uses this dockerd, as k8s-local does,
runs them with imagePullPolicy Never); `kind` loads them from Docker's store into the
nodes of a kind cluster.
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from ssebench.agents import Agent
from ssebench.errors import UserError
from ssebench.extensions import ImageRequest, Images, Mode, prebuilt_images
from ssebench.images.layers import image_request
from ssebench.tasks.model import Task

Target = Literal["push", "local", "docker", "kind"]
TARGETS: tuple[Target, ...] = ("push", "local", "docker", "kind")
MODES: tuple[Mode, ...] = ("sandbox", "sidecar")

Build = Callable[[ImageRequest], Images]
Command = Callable[[Sequence[str]], None]
Tag = Callable[[str, str], None]
Push = Callable[[str], None]


@dataclass(frozen=True)
class Publication:
    """One image to publish: the local image a build made, and its published name."""

    local: str
    name: str


def plan(
    tasks: Iterable[Task],
    agents: Iterable[Agent],
    *,
    registry: str,
    modes: Iterable[Mode] = MODES,
    platform: str | None = None,
    rebuild: bool = False,
) -> list[ImageRequest]:
    """The image requests of every task x agent x mode, as a run would make them."""
    requests = []
    for task in tasks:
        for agent in agents:
            for mode in modes:
                requests.append(
                    dataclasses.replace(
                        image_request(task, agent),
                        mode=mode,
                        registry=registry,
                        platform=platform,
                        rebuild=rebuild,
                    )
                )
    return requests


def published_names(requests: Iterable[ImageRequest]) -> list[str]:
    """The names prebuilt_images gives the requests, each once, in order."""
    names: dict[str, None] = {}
    for request in requests:
        published = prebuilt_images(dataclasses.replace(request, prebuilt=True))
        for name in (published.run, published.environment):
            if name is not None:
                names.setdefault(name)
    return list(names)


def build_all(requests: Iterable[ImageRequest], build: Build) -> list[Publication]:
    """Build each request's layers (build: builds.prepare_images) and pair every local
    image with its published name. A name that two builds would give different images
    is refused: it would publish one of them silently."""
    pairs: dict[str, str] = {}
    for request in requests:
        local = build(dataclasses.replace(request, prebuilt=False))
        published = prebuilt_images(dataclasses.replace(request, prebuilt=True))
        for made, name in ((local.run, published.run), (local.environment, published.environment)):
            if made is None or name is None:
                continue
            if pairs.setdefault(name, made) != made:
                raise UserError(f"{name} would be two different images ({pairs[name]}, {made})")
    return [Publication(local=made, name=name) for name, made in pairs.items()]


def kind_command(argv: Sequence[str]) -> None:
    try:
        completed = subprocess.run(
            ["kind", *argv], capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False
        )
    except FileNotFoundError:
        raise UserError("--load kind needs the kind command on the PATH") from None
    if completed.returncode != 0:
        lines = [line for line in completed.stderr.splitlines() if line.strip()]
        reason = lines[-1].strip() if lines else f"status {completed.returncode}"
        raise UserError(f"kind load failed: {reason}")


def deliver(
    publications: Sequence[Publication],
    target: Target,
    *,
    tag: Tag,
    push: Push,
    kind_cluster: str = "kind",
    kind: Command = kind_command,
) -> None:
    """Name the local images as published (tag), then push or load them."""
    for item in publications:
        if item.local != item.name:
            tag(item.local, item.name)
    if target == "push":
        for item in publications:
            push(item.name)
    elif target == "kind" and publications:
        kind(["load", "docker-image", "--name", kind_cluster, *(p.name for p in publications)])
