"""Image names and layer builds on the local Docker daemon (docs/image-layers.md).

A sandbox run's image is three layers, each built FROM the one before:

    case    ssebench/case/<dataset>/<task>:<content digest>   the project and the task
    tool    ssebench/tool/<task>:<tool version>               the in-container runtime
    agent   ssebench/agent-<agent>/<task>:<agent version>     the agent's program

A Layer describes one build completely (Dockerfile, build args, the files of its
context, its parent), so one content digest covers everything that goes into it. Every
image built here carries that digest as the label ssebench.layer-digest; an image whose
label matches is current and is not built again. The case image's tag is the digest
itself, so a changed task gets a new image and an unchanged one is reused.

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
and ensure_layers builds it (when not current) just before the layer that uses it.

Prebuilt images (--prebuilt) are named by extensions.prebuilt_images only and pulled.

The helpers that call the docker CLI (run_docker, failure_reason, ...) are in
docker_cli.py and re-exported here.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TextIO, TypeVar

from ssebench.agents import Agent, read_agent
from ssebench.docker_cli import (
    DOCKER,
    docker_missing,
    docker_unreachable,
    failure_reason,
    raise_if_unreachable,
    run_docker,
)
from ssebench.errors import ImageUnavailableError, UserError
from ssebench.extensions import ImageRequest, Images, prebuilt_images
from ssebench.runtime import __version__ as RUNTIME_VERSION
from ssebench.scratch import scratch_folder
from ssebench.tasks.model import HIDDEN_FOLDER, REFERENCE_PATCH, SOURCE_FOLDER, Task, load_task

if TYPE_CHECKING:  # the public view of a Layer (image_layers is built on this module)
    from ssebench.image_layers import ImageBuilder, ImageLayer

__all__ = [
    "DIGEST_LABEL",
    "DOCKER",
    "BuildOutput",
    "Layer",
    "agent_install_layer",
    "agent_layer",
    "build_argv",
    "build_case_images",
    "build_layer",
    "buildx_available",
    "case_layer",
    "docker_missing",
    "docker_unreachable",
    "ensure_layers",
    "environment_layer",
    "failure_reason",
    "labels_from_json",
    "layer_is_current",
    "prepare_images",
    "pull_image",
    "raise_if_unreachable",
    "run_build",
    "run_docker",
    "run_layers",
    "sidecar_layers",
    "tool_layer",
]

PACKAGE_DIR = Path(__file__).parent
DOCKERFILES = PACKAGE_DIR / "dockerfiles"
RUNTIME_SOURCE = PACKAGE_DIR / "runtime"
# The tool layer installs the runtime under this package name (tool.Dockerfile).
RUNTIME_PACKAGE = "ssebench_runtime"
DIGEST_LABEL = "ssebench.layer-digest"
# The case image's tag: this many hex digits of its digest are unique enough per task.
CASE_TAG_LENGTH = 12
# Bumped when the digest's recipe changes, so old images stop counting as current.
DIGEST_FORMAT = b"ssebench-layer-1"
BUILD_LOG_TAIL = 25
# What never belongs in an image: caches that tools leave beside the sources.
IGNORED_NAMES = frozenset({"__pycache__", ".git", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
IGNORED_SUFFIXES = (".pyc", ".pyo")

LayerT = TypeVar("LayerT")
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


def image_exists(image: str) -> bool:
    return run_docker(["image", "inspect", "--format", "{{.Id}}", image]).returncode == 0


@functools.cache
def buildx_available() -> bool:
    """True when the buildx plugin is installed; asked once per process."""
    return run_docker(["buildx", "version"]).returncode == 0


# --- layers -------------------------------------------------------------------------


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
            ("task/reference.patch", task.path / REFERENCE_PATCH),
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


# --- builds -------------------------------------------------------------------------


def build_argv(layer: Layer | ImageLayer, context: Path, *, buildx: bool) -> list[str]:
    """The docker command that builds layer from the context folder."""
    if buildx:
        # --load: without it buildx leaves the result in its cache, not in `docker images`.
        argv = [DOCKER, "buildx", "build", "--load", "--progress", "plain"]
    else:
        # --force-rm: the classic builder otherwise keeps the container of a failed step.
        argv = [DOCKER, "build", "--force-rm"]
    if layer.platform:
        argv += ["--platform", layer.platform]
    argv += [
        "--file",
        str(layer.dockerfile),
        "--tag",
        layer.image,
    ]
    for name, value in sorted(layer.labels.items()):
        argv += ["--label", f"{name}={value}"]
    for name, value in sorted(layer.build_args.items()):
        argv += ["--build-arg", f"{name}={value}"]
    argv.append(str(context))
    return argv


def build_environment(*, buildx: bool) -> dict[str, str]:
    environment = dict(os.environ)
    if not buildx:
        # Without the plugin, the classic builder is the one `docker build` can use.
        environment["DOCKER_BUILDKIT"] = "0"
    return environment


@dataclass
class BuildOutput:
    """Where a build's log goes: each line prefixed with the layer's kind, or, quiet,
    only the tail of the log when the build fails."""

    stream: TextIO = field(default_factory=lambda: sys.stderr)
    quiet: bool = False

    def say(self, message: str) -> None:
        self.stream.write(f"ssebench: {message}\n")
        self.stream.flush()


def build_layer(layer: Layer, output: BuildOutput | None = None) -> None:
    """Build layer now (the docker layer cache still applies), in a scratch context.

    Raises ImageUnavailableError, a UserError, naming the layer and the last lines of
    its build log when the build fails.
    """
    with scratch_folder(layer.kind) as context:
        layer.write_context(context)
        build_context(layer, context, output)


def docker_builder(output: BuildOutput | None = None) -> Callable[[ImageLayer, Path], None]:
    """The Docker backend's "build this context" callable for image_layers.build_images."""
    return lambda layer, context: build_context(layer, context, output)


def docker_or_fail(argv: Sequence[str]) -> None:
    """`docker ARGV`; raises UserError with docker's reason when it fails."""
    completed = run_docker(argv)
    if completed.returncode != 0:
        raise UserError(f"docker {argv[0]} failed: {failure_reason(completed)}")


def docker_image_builder(output: BuildOutput | None = None) -> ImageBuilder:
    """The Docker backend's ImageBuilder (Backend.image_builder)."""
    from ssebench.image_layers import ImageBuilder

    return ImageBuilder(
        build=docker_builder(output),
        image_labels=docker_image_labels,
        tag=lambda image, name: docker_or_fail(["tag", image, name]),
        push=lambda name: docker_or_fail(["push", name]),
        store="Docker",
    )


def build_context(
    layer: Layer | ImageLayer, context: Path, output: BuildOutput | None = None
) -> None:
    """Build layer with docker from the folder context, which holds its build context.

    Raises ImageUnavailableError, a UserError, naming the layer and the last lines of
    its build log when the build fails.
    """
    buildx = buildx_available()
    run_build(
        build_argv(layer, context, buildx=buildx),
        layer,
        output=output,
        env=build_environment(buildx=buildx),
        missing=docker_missing,
        check_log=lambda log: raise_if_unreachable("\n".join(log)),
    )


def run_build(
    argv: Sequence[str],
    layer: Layer | ImageLayer,
    *,
    output: BuildOutput | None = None,
    env: Mapping[str, str] | None = None,
    missing: Callable[[], Exception] | None = None,
    check_log: Callable[[Sequence[str]], None] | None = None,
) -> None:
    """Run the build command argv of layer, its log going to output as it comes (each
    line prefixed with the layer's kind; quiet: kept for a failure only).

    missing: the error for a command that is not installed. check_log: given the last
    lines of a failed build's log, may raise an error of its own (the builder is not
    reachable) before the one below. Raises ImageUnavailableError naming the layer and
    the last lines of its build log (an install image: the line that says what failed).
    """
    output = output or BuildOutput()
    output.say(f"building the {layer.kind} layer {layer.image}")
    started = time.monotonic()
    tail: deque[str] = deque(maxlen=BUILD_LOG_TAIL)
    errors: list[str] = []
    try:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            env=None if env is None else dict(env),
        )
    except FileNotFoundError:
        if missing is None:
            raise UserError(f"{argv[0]} is not installed (not on PATH)") from None
        raise missing() from None
    with process:
        assert process.stdout is not None
        try:
            for line in process.stdout:
                line = line.rstrip("\n")
                tail.append(line)
                if layer.kind == "agent-install" and len(errors) < 10 and is_install_error(line):
                    errors.append(line)  # may scroll out of the tail before the step ends
                if not output.quiet:
                    output.stream.write(f"  {layer.kind} | {line}\n")
                    output.stream.flush()
        except BaseException:
            # Interrupted (SIGINT or SIGTERM): end the build before its context goes.
            process.terminate()
            raise
    status = process.wait()
    if status != 0:
        if check_log is not None:
            check_log(list(tail))
        if layer.kind == "agent-install":
            raise ImageUnavailableError(
                f"Building the install image {layer.image} failed: "
                f"{install_error([*errors, *tail])} "
                "(check the pinned version and hashes in the agent folder, and that the "
                f"package registry is reachable, with ${BUILD_CA_VARIABLE} naming this "
                "machine's CA bundle if it needs one)",
                image=layer.image,
            )
        log = "\n".join(f"  {line}" for line in tail)
        raise ImageUnavailableError(
            f"Building the {layer.kind} layer {layer.image} failed (exit status {status}). "
            f"The last lines of its build log:\n{log}",
            image=layer.image,
        )
    output.say(f"built {layer.image} in {time.monotonic() - started:.1f} s")


# The lines of an npm, pip or apt failure that say what went wrong, and the lines of
# theirs that only point elsewhere (an error code, where the full log is).
_INSTALL_ERROR = re.compile(r"^(npm (ERR!|error)|ERROR:|E:|error:)\s*(.*)$", re.IGNORECASE)
_INSTALL_ERROR_NOISE = re.compile(r"^(code|errno|syscall|A complete log|Log files)\b", re.I)
_BUILDKIT_PREFIX = re.compile(r"^#\d+ [\d.]+ ")
# The classic builder colours a step's stderr with terminal escapes.
_TERMINAL_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# The builder's own words around a failed step, which say nothing about the failure.
_BUILDER_NOISE = ("returned a non-zero code", "Removing intermediate container", "--->")


def _plain(line: str) -> str:
    return _BUILDKIT_PREFIX.sub("", _TERMINAL_ESCAPE.sub("", line)).strip()


def is_install_error(line: str) -> bool:
    """True for a line in which npm, pip or apt says what went wrong."""
    match = _INSTALL_ERROR.match(_plain(line))
    return bool(match and match.group(3) and not _INSTALL_ERROR_NOISE.match(match.group(3)))


def install_error(log: Sequence[str]) -> str:
    """The one line of a failed install build's log that says what failed: the first
    npm/pip/apt error line, else the last line that is not the builder's own."""
    lines = [_plain(line) for line in log]
    for line in lines:
        if is_install_error(line):
            return line
    meaningful = [line for line in lines if line and not any(n in line for n in _BUILDER_NOISE)]
    return meaningful[-1] if meaningful else "the build printed nothing"


def docker_image_labels(image: str) -> dict[str, str] | None:
    """The labels of image in the local Docker image store, or None when it is not
    there (the image_labels callable of image_layers.build_images)."""
    completed = run_docker(["image", "inspect", "--format", "{{json .Config.Labels}}", image])
    return labels_from_json(completed.stdout) if completed.returncode == 0 else None


def labels_from_json(text: str) -> dict[str, str] | None:
    """An image's labels from their JSON (`{{json .Config.Labels}}` of docker image
    inspect, `{{json .Labels}}` of podman's): {} for none, None for what is not JSON."""
    try:
        labels = json.loads(text or "null") or {}
    except json.JSONDecodeError:
        return None
    return (
        {str(key): str(value) for key, value in labels.items()}
        if isinstance(labels, dict)
        else None
    )


def layer_is_current(layer: Layer) -> bool:
    """True when the image exists and was built from exactly what layer describes."""
    return (docker_image_labels(layer.image) or {}).get(DIGEST_LABEL) == layer.digest


def ensure_layers(
    layers: Sequence[Layer], *, rebuild: bool = False, output: BuildOutput | None = None
) -> None:
    """Build the layers that are not current, bottom first; rebuild builds them all.

    The top layer's digest covers every layer under it, so when it is current nothing
    else is asked: an unchanged run costs one `docker image inspect`.
    """
    build_missing(
        with_inputs(layers),
        rebuild=rebuild,
        is_current=layer_is_current,
        build=lambda layer: build_layer(layer, output),
    )


def build_missing(
    layers: Sequence[LayerT],
    *,
    rebuild: bool,
    is_current: Callable[[LayerT], bool],
    build: Callable[[LayerT], None],
) -> None:
    """Build the layers (bottom first, inputs before their users) that are not current,
    or all of them with rebuild. The top layer's digest covers every layer under it, so
    when it is current nothing else is asked."""
    if not layers or (not rebuild and is_current(layers[-1])):
        return
    for layer in layers:
        if rebuild or not is_current(layer):
            build(layer)


def with_inputs(layers: Sequence[Layer]) -> list[Layer]:
    """layers with each one's inputs just before it, each layer once."""
    ordered: dict[str, Layer] = {}
    for layer in layers:
        for item in layer.inputs:
            ordered.setdefault(item.image, item)
        ordered.setdefault(layer.image, layer)
    return list(ordered.values())


def build_case_images(
    tasks: Sequence[Task],
    *,
    platform: str | None = None,
    rebuild: bool = False,
    output: BuildOutput | None = None,
) -> list[str]:
    """Build (or reuse) the case image of every task; return their names in order."""
    images = []
    for task in tasks:
        layer = case_layer(task, platform=platform)
        ensure_layers([layer], rebuild=rebuild, output=output)
        images.append(layer.image)
    return images


# --- prebuilt -----------------------------------------------------------------------


def pull_image(image: str, *, platform: str | None, output: BuildOutput | None = None) -> None:
    """Pull image; if that fails but a copy is on this machine, warn and use it.

    Raises ImageUnavailableError naming the image and what to do.
    """
    output = output or BuildOutput()
    output.say(f"pulling {image}")
    argv = ["pull", "--quiet"]
    if platform:
        argv += ["--platform", platform]
    completed = run_docker([*argv, image])
    if completed.returncode == 0:
        return
    reason = failure_reason(completed)
    if image_exists(image):
        output.stream.write(
            f"ssebench: warning: cannot pull {image} ({reason}); "
            "using the copy already on this machine\n"
        )
        output.stream.flush()
        return
    raise ImageUnavailableError(
        f"The image {image} is not available: docker pull failed ({reason}). Publish it "
        "under $SSEBENCH_REGISTRY (docs/image-layers.md), run `docker login` if the "
        "registry needs it, or run without --prebuilt to build it here.",
        image=image,
    )


def prepare_images(request: ImageRequest, output: BuildOutput | None = None) -> Images:
    """Make a run's images available on the local daemon and return their names.

    Not prebuilt: build case -> tool -> agent as needed; the run's image is the agent
    layer. Sidecar: case -> tool (the environment) and agent runtime -> agent (the
    run's image). Prebuilt: pull the names prebuilt_images gives. Raises UserError.
    """
    if request.prebuilt:
        images = prebuilt_images(request)
        for image in (images.environment, images.run):
            if image is not None:
                pull_image(image, platform=request.platform, output=output)
        return images
    if request.mode == "sidecar":
        environment, agent = sidecar_layers(request)
        ensure_layers(environment, rebuild=request.rebuild, output=output)
        ensure_layers(agent, rebuild=request.rebuild, output=output)
        return Images(run=agent[-1].image, environment=environment[-1].image)
    layers = run_layers(request)
    ensure_layers(layers, rebuild=request.rebuild, output=output)
    return Images(run=layers[-1].image)
