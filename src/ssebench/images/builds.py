"""Building the layers' images (layers.py), and making a run's images available.

run_build runs any builder's build command and reports its log (Docker's here, other
backends' through ssebench.image_layers); the rest is the Docker backend's: the `docker
build` command, the check that an image is current (its ssebench.layer-digest label),
ensure_layers (build what is not current, bottom first) and prepare_images, which gives
a run its images (pulls.py pulls the prebuilt ones, --prebuilt, and missing bases).

The helpers that call the docker CLI (run_docker, failure_reason, ...) are in
ssebench.host.docker_cli.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from ssebench.errors import ImageUnavailableError, UserError
from ssebench.extensions import ImageBuilder, ImageLayer, ImageRequest, Images, prebuilt_images
from ssebench.host.docker_cli import (
    DOCKER,
    docker_missing,
    failure_reason,
    raise_if_unreachable,
    run_docker,
)
from ssebench.host.scratch import scratch_folder
from ssebench.images.layers import (
    BUILD_CA_VARIABLE,
    DIGEST_LABEL,
    Layer,
    case_layer,
    run_layers,
    sidecar_layers,
    with_inputs,
)
from ssebench.images.output import BuildOutput
from ssebench.images.pulls import pull_image, pull_missing_bases
from ssebench.tasks.model import Task

__all__ = [
    "build_argv",
    "build_case_images",
    "build_layer",
    "buildx_available",
    "ensure_layers",
    "labels_from_json",
    "layer_is_current",
    "prepare_images",
    "run_build",
]

BUILD_LOG_TAIL = 25
LayerT = TypeVar("LayerT")


@functools.cache
def buildx_available() -> bool:
    """True when the buildx plugin is installed; asked once per process."""
    return run_docker(["buildx", "version"]).returncode == 0


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
    pull_missing_bases(layer, output or BuildOutput())
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
