"""What each image of a run holds: the layers (docs/image-layers.md), their names and
the content digest by which a built image is found current.

A sandbox run's image is three layers, each built FROM the one before:

    case    ssebench/case/<dataset>/<task>:<content digest>   the project and the task
    tool    ssebench/tool/<task>:<tool version>               the in-container runtime
    agent   ssebench/agent-<agent>/<task>:<agent version>     the agent's program

A Layer describes one build completely (Dockerfile, build args, the files of its
context, its parent), so one content digest covers everything that goes into it. Every
image built from a Layer carries that digest as the label ssebench.layer-digest; an
image whose label matches is current and is not built again. The case image's tag is
the digest itself, so a changed task gets a new image and an unchanged one is reused.

A sidecar run has two images. The environment container's is the tool layer above;
the agent container's is the agent layer on a task-independent base:

    runtime  ssebench/agent-runtime:<tool version>             python3, git, the runtime
    agent    ssebench/agent-<agent>/sidecar:<agent version>    the agent's program

An agent with an install.Dockerfile (an upstream program, pinned) also has an install
image, built once for every task and both modes, from a scratch copy of its folder:

    install  ssebench/agent-install/<agent>:<upstream version>-<agent version>

and the agent layer copies that image's /opt/ssebench/agent-install/ to
/opt/ssebench/agents/<agent>/install/. An agent without one copies the empty directory
of ssebench/agent-install-empty:1 instead, so there is one agent.Dockerfile. The
install image is an input of the agent layer: its digest is part of the agent layer's,
and it is built (when not current) just before the layer that uses it (with_inputs).

Nothing here runs a build: builds.py builds the layers with Docker, and
ssebench.image_layers lends them to the other backends.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ssebench.agents import Agent, read_agent
from ssebench.errors import UserError
from ssebench.extensions import ImageRequest
from ssebench.runtime import __version__ as RUNTIME_VERSION
from ssebench.tasks.model import HIDDEN_FOLDER, SOURCE_FOLDER, Task, load_task

__all__ = [
    "BUILD_CA_VARIABLE",
    "DIGEST_LABEL",
    "Layer",
    "add_build_ca",
    "agent_install_layer",
    "agent_layer",
    "agent_runtime_layer",
    "case_layer",
    "environment_layer",
    "run_layers",
    "sidecar_layers",
    "tool_layer",
    "with_inputs",
]

# The package's files: the Dockerfiles of the layers and the runtime the tool layer installs.
PACKAGE_DIR = Path(__file__).parent.parent
DOCKERFILES = PACKAGE_DIR / "dockerfiles"
RUNTIME_SOURCE = PACKAGE_DIR / "runtime"
# The tool layer installs the runtime under this package name (tool.Dockerfile).
RUNTIME_PACKAGE = "ssebench_runtime"
DIGEST_LABEL = "ssebench.layer-digest"
# The case image's tag: this many hex digits of its digest are unique enough per task.
CASE_TAG_LENGTH = 12
# Bumped when the digest's recipe changes, so old images stop counting as current.
DIGEST_FORMAT = b"ssebench-layer-1"
# What never belongs in an image: caches that tools leave beside the sources.
IGNORED_NAMES = frozenset({"__pycache__", ".git", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
IGNORED_SUFFIXES = (".pyc", ".pyo")

LayerKind = Literal["environment", "case", "tool", "agent", "agent-runtime", "agent-install"]
# The builder stage of an install.Dockerfile: task-independent, so one fixed base.
INSTALL_BASE_IMAGE = "debian:bookworm-slim"
EMPTY_INSTALL_REPOSITORY = "ssebench/agent-install-empty"
EMPTY_INSTALL_VERSION = "1"

# Docker's reference grammar, one path component and a tag.
_NAME_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


# A CA bundle that a build's pip or npm needs to reach the package registries on some
# machines; the Dockerfiles take it from build-ca/ca-bundle.crt and leave it out of the
# image they make.
BUILD_CA_VARIABLE = "SSEBENCH_BUILD_CA_BUNDLE"


def add_build_ca(context: Path) -> None:
    """Put $SSEBENCH_BUILD_CA_BUNDLE (else $PIP_CERT), when set, into the build context
    as build-ca/ca-bundle.crt.

    It serves pip (`--cert`, PIP_CERT) and npm (`npm config set cafile`,
    NODE_EXTRA_CA_CERTS) alike: the stack's and the chart's images and the agents'
    install images (install.Dockerfile) use it in a build stage only, never in the
    image they leave. It is not part of a layer's digest: it is this machine's, not
    the image's content. build-ca/ exists afterwards also without a bundle (empty), so
    a Dockerfile can `COPY build-ca/ ...` and then test for the file.
    """
    (context / "build-ca").mkdir(exist_ok=True)
    bundle = os.environ.get(BUILD_CA_VARIABLE) or os.environ.get("PIP_CERT")
    if bundle and Path(bundle).is_file():
        shutil.copyfile(bundle, context / "build-ca" / "ca-bundle.crt")


@dataclass(frozen=True)
class Layer:
    """One image build: everything that decides what the image holds.

    sources maps a path in the build context to a file or folder on this host, and
    generated maps a context path to the bytes of a file made here (task.json). An
    empty context path is the context's root. tag None means the content digest.
    inputs are the other images the build copies from (COPY --from): their digests
    are part of this one's and they are built before it. build_ca adds the machine's
    CA bundle to the context (add_build_ca).
    """

    kind: LayerKind
    repository: str
    tag: str | None
    dockerfile: Path
    build_args: Mapping[str, str]
    sources: tuple[tuple[str, Path], ...]
    generated: tuple[tuple[str, bytes], ...] = ()
    parent: Layer | None = None
    platform: str | None = None
    inputs: tuple[Layer, ...] = ()
    build_ca: bool = False

    @functools.cached_property
    def digest(self) -> str:
        """SHA-256 of what goes into the image, including its parent's digest."""
        summary = hashlib.sha256(DIGEST_FORMAT)
        parts: list[str] = [
            self.kind,
            self.parent.digest if self.parent else "",
            self.platform or "",
            hashlib.sha256(self.dockerfile.read_bytes()).hexdigest(),
            json.dumps(sorted(self.build_args.items())),
        ]
        parts.extend(f"input {layer.digest}" for layer in self.inputs)
        for entry in self.context_entries():
            parts.append(entry.fingerprint())
        for path, content in sorted(self.generated):
            parts.append(f"generated {path} {hashlib.sha256(content).hexdigest()}")
        summary.update("\0".join(parts).encode())
        return summary.hexdigest()

    @property
    def image(self) -> str:
        return f"{self.repository}:{self.tag or self.digest[:CASE_TAG_LENGTH]}"

    @property
    def labels(self) -> dict[str, str]:
        """The labels of the image: its digest, by which it is found current."""
        return {DIGEST_LABEL: self.digest}

    def context_entries(self) -> Iterator[ContextEntry]:
        """Every folder, file and symlink of the context that comes from this host."""
        for target, source in self.sources:
            if not source.exists():
                raise UserError(f"{source} is missing; the {self.kind} layer needs it")
            yield from _walk(target, source)

    def write_context(self, context: Path) -> None:
        """Lay the build context out in the empty folder context.

        Modes are normalised (0755 for folders and executables, 0644 for the rest)
        because the digest counts only the executable bit.
        """
        for entry in self.context_entries():
            entry.copy_into(context)
        for path, content in self.generated:
            destination = context / path
            destination.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            destination.write_bytes(content)
            destination.chmod(0o644)
        if self.build_ca:
            add_build_ca(context)


@dataclass(frozen=True)
class ContextEntry:
    """A folder, file or symlink at path (posix, relative to the context's root)."""

    path: str
    source: Path
    kind: Literal["folder", "file", "symlink"]
    executable: bool = False

    def fingerprint(self) -> str:
        if self.kind == "folder":
            content = ""
        elif self.kind == "symlink":
            content = os.readlink(self.source)
        else:
            with self.source.open("rb") as file:
                content = hashlib.file_digest(file, "sha256").hexdigest()
        return f"{self.kind} {self.path} {int(self.executable)} {content}"

    def copy_into(self, context: Path) -> None:
        destination = context / self.path if self.path else context
        if self.kind == "folder":
            destination.mkdir(mode=0o755, parents=True, exist_ok=True)
            destination.chmod(0o755)  # mkdir's mode is subject to the umask
            return
        destination.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        if self.kind == "symlink":
            destination.symlink_to(os.readlink(self.source))
            return
        shutil.copyfile(self.source, destination)
        destination.chmod(0o755 if self.executable else 0o644)


def _ignored(name: str) -> bool:
    return name in IGNORED_NAMES or name.endswith(IGNORED_SUFFIXES)


def _entry(path: str, source: Path) -> ContextEntry:
    mode = source.lstat().st_mode
    if stat.S_ISLNK(mode):
        return ContextEntry(path, source, "symlink")
    if stat.S_ISDIR(mode):
        return ContextEntry(path, source, "folder")
    return ContextEntry(path, source, "file", executable=bool(mode & stat.S_IXUSR))


def _walk(target: str, source: Path) -> Iterator[ContextEntry]:
    """source and, for a folder, everything under it, in a stable order."""
    yield _entry(target, source)
    if source.is_symlink() or not source.is_dir():
        return
    for child in sorted(source.iterdir(), key=lambda path: path.name):
        if not _ignored(child.name):
            yield from _walk(f"{target}/{child.name}" if target else child.name, child)


def _checked_component(value: str, what: str) -> str:
    if not _NAME_COMPONENT.match(value):
        raise UserError(
            f"The {what} {value!r} cannot be part of an image name: use lowercase letters "
            "and digits, separated by single '.', '_' or '-'"
        )
    return value


def _checked_tag(value: str, what: str) -> str:
    if not _TAG.match(value):
        raise UserError(
            f"The {what} {value!r} cannot be an image tag: use up to 128 of A-Z a-z 0-9 _ . -, "
            "not starting with '.' or '-'"
        )
    return value


def environment_layer(task: Task, *, platform: str | None = None) -> Layer | None:
    """The image a task with its own environment/Dockerfile runs in (None without one).

    Its context is the environment/ folder plus build-ca/ (the machine's CA bundle, for
    a build stage that installs from a package registry; never for the final stage).
    The case layer is built FROM it, so the task's base_image is not used.
    """
    folder = task.environment_dir
    if folder is None:
        return None
    return Layer(
        kind="environment",
        repository=(
            f"ssebench/environment/{_checked_component(task.dataset, 'dataset name')}/"
            f"{_checked_component(task.id, 'task ID')}"
        ),
        tag=None,
        dockerfile=folder / "Dockerfile",
        build_args={},
        sources=(("", folder),),
        platform=platform,
        build_ca=True,
    )


def case_layer(task: Task, *, platform: str | None = None) -> Layer:
    """The case image of task: its base image (or its own environment image), packages,
    source and private files."""
    metadata = json.dumps(task.container_metadata(), indent=2, sort_keys=True) + "\n"
    environment = environment_layer(task, platform=platform)
    return Layer(
        kind="case",
        repository=(
            f"ssebench/case/{_checked_component(task.dataset, 'dataset name')}/"
            f"{_checked_component(task.id, 'task ID')}"
        ),
        tag=None,
        dockerfile=DOCKERFILES / "case.Dockerfile",
        build_args={
            "BASE_IMAGE": task.base_image if environment is None else environment.image,
            "PACKAGES": " ".join(task.packages),
            "SOURCE_DIR": task.source_dir,
        },
        sources=(
            ("repo", task.path / SOURCE_FOLDER),
            ("task/hidden", task.path / HIDDEN_FOLDER),
            ("task/reference.patch", task.reference_patch),
        ),
        generated=(("task/task.json", metadata.encode()),),
        platform=platform,
        inputs=() if environment is None else (environment,),
    )


def tool_layer(task: Task, case: Layer, *, version: str) -> Layer:
    """The tool layer: the in-container runtime on top of the case image."""
    return Layer(
        kind="tool",
        repository=f"ssebench/tool/{_checked_component(task.id, 'task ID')}",
        tag=_checked_tag(version, "tool version"),
        dockerfile=DOCKERFILES / "tool.Dockerfile",
        build_args={"BASE_IMAGE": case.image, "RUNTIME_VERSION": RUNTIME_VERSION},
        sources=((RUNTIME_PACKAGE, RUNTIME_SOURCE),),
        parent=case,
        platform=case.platform,
    )


def empty_install_layer(*, platform: str | None = None) -> Layer:
    """The install image of an agent without install.Dockerfile: an empty
    /opt/ssebench/agent-install/, built once (FROM scratch, no files)."""
    return Layer(
        kind="agent-install",
        repository=EMPTY_INSTALL_REPOSITORY,
        tag=EMPTY_INSTALL_VERSION,
        dockerfile=DOCKERFILES / "agent-install-empty.Dockerfile",
        build_args={},
        sources=(),
        platform=platform,
    )


def agent_install_layer(agent: Agent, *, platform: str | None = None) -> Layer:
    """The task-independent install image of agent, from its install.Dockerfile with a
    copy of its folder (and the build CA) as the context; the empty one without it.

    Its tag names the versions, <upstream version>-<agent version> (the agent version
    alone without "upstream"); its digest label covers every file of the folder, so an
    edited folder is built again under the same tag.
    """
    dockerfile = agent.install_dockerfile
    if dockerfile is None:
        return empty_install_layer(platform=platform)
    tag = f"{agent.upstream.version}-{agent.version}" if agent.upstream else agent.version
    return Layer(
        kind="agent-install",
        repository=f"ssebench/agent-install/{_checked_component(agent.name, 'agent name')}",
        tag=_checked_tag(tag, "install image tag (upstream version-agent version)"),
        dockerfile=dockerfile,
        build_args={"BASE_IMAGE": INSTALL_BASE_IMAGE},
        sources=(("", agent.path),),
        platform=platform,
        build_ca=True,
    )


def agent_layer(
    task: Task | None,
    base: Layer,
    *,
    agent: str,
    version: str,
    agent_dir: Path,
    install: Layer | None = None,
) -> Layer:
    """The agent layer: the agent's folder (agent.json, run) and its install image's
    files (install; the empty one when None) on top of base, the tool layer of task;
    or, with task None, the agent runtime of a sidecar run."""
    place = "sidecar" if task is None else _checked_component(task.id, "task ID")
    install = install or empty_install_layer(platform=base.platform)
    return Layer(
        kind="agent",
        repository=f"ssebench/agent-{_checked_component(agent, 'agent name')}/{place}",
        tag=_checked_tag(version, "agent version"),
        dockerfile=DOCKERFILES / "agent.Dockerfile",
        build_args={
            "BASE_IMAGE": base.image,
            "INSTALL_IMAGE": install.image,
            "AGENT_NAME": agent,
            "AGENT_VERSION": version,
        },
        sources=(("", agent_dir),),
        parent=base,
        platform=base.platform,
        inputs=(install,),
    )


def agent_runtime_layer(*, version: str, platform: str | None = None) -> Layer:
    """The agent runtime: the base of a sidecar run's agent container (python3, git,
    the user model and the runtime, whose --agent-side role is its entrypoint)."""
    return Layer(
        kind="agent-runtime",
        repository="ssebench/agent-runtime",
        tag=_checked_tag(version, "tool version"),
        dockerfile=DOCKERFILES / "agent-runtime.Dockerfile",
        build_args={"RUNTIME_VERSION": RUNTIME_VERSION},
        sources=((RUNTIME_PACKAGE, RUNTIME_SOURCE),),
        platform=platform,
    )


def _environment_layers(request: ImageRequest) -> tuple[Task, Layer, Layer]:
    """The task and its case and tool layers; checks what a build needs first."""
    if request.task_dir is None:
        raise UserError(
            f"Building the images of {request.task_id} needs the task's folder; "
            "use a local dataset (--local) or --prebuilt"
        )
    if request.agent_dir is None:
        raise UserError(f"Building the agent layer of {request.agent} needs the agent's folder")
    task = load_task(request.task_dir, dataset=request.dataset)
    case = case_layer(task, platform=request.platform)
    return task, case, tool_layer(task, case, version=request.tool_version)


def _request_agent_layer(request: ImageRequest, task: Task | None, base: Layer) -> Layer:
    assert request.agent_dir is not None  # checked by _environment_layers
    install = agent_install_layer(read_agent(request.agent_dir), platform=request.platform)
    return agent_layer(
        task,
        base,
        agent=request.agent,
        version=request.agent_version,
        agent_dir=request.agent_dir,
        install=install,
    )


def sidecar_layers(request: ImageRequest) -> tuple[list[Layer], list[Layer]]:
    """A sidecar run's two stacks, bottom first: the environment container's (case,
    tool) and the agent container's (agent runtime, agent; the agent layer's install
    image is its input)."""
    _, case, tool = _environment_layers(request)
    runtime = agent_runtime_layer(version=request.tool_version, platform=request.platform)
    return [case, tool], [runtime, _request_agent_layer(request, None, runtime)]


def run_layers(request: ImageRequest) -> tuple[Layer, Layer, Layer]:
    """The case, tool and agent layers of a sandbox run, bottom first (the agent
    layer's install image is its input)."""
    task, case, tool = _environment_layers(request)
    return case, tool, _request_agent_layer(request, task, tool)


def with_inputs(layers: Sequence[Layer]) -> list[Layer]:
    """layers with each one's inputs just before it, each layer once."""
    ordered: dict[str, Layer] = {}
    for layer in layers:
        for item in layer.inputs:
            ordered.setdefault(item.image, item)
        ordered.setdefault(layer.image, layer)
    return list(ordered.values())


def image_request(task: Task, agent: Agent) -> ImageRequest:
    """The images of agent on task, with every other choice at its default
    (dataclasses.replace changes them)."""
    return ImageRequest(
        task_id=task.id,
        dataset=task.dataset,
        agent=agent.name,
        agent_version=agent.version,
        task_dir=task.path,
        agent_dir=agent.path,
    )
