"""Podman's images: the layers of ssebench.image_layers built with `podman build`, and
prebuilt images checked or pulled."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import deque
from collections.abc import Mapping
from pathlib import Path

from ssebench.backends.podman.cli import PODMAN, failure_reason, podman_missing, run_podman
from ssebench.backends.podman.options import label_argv, ulimit_argv
from ssebench.extensions import ImageUnavailableError
from ssebench.image_layers import ImageLayer

BUILD_LOG_TAIL = 25


def pull_image(image: str, platform: str | None) -> None:
    if run_podman(["image", "exists", image]).returncode == 0:
        return
    argv = ["pull", "--quiet", *(["--platform", platform] if platform else []), image]
    completed = run_podman(argv)
    if completed.returncode != 0:
        raise ImageUnavailableError(
            f"The image {image} is not available: podman pull failed "
            f"({failure_reason(completed)}). Publish it under $SSEBENCH_REGISTRY, or "
            "run without --prebuilt to build it here.",
            image=image,
        )


def image_labels(image: str) -> Mapping[str, str] | None:
    completed = run_podman(["image", "inspect", "--format", "{{json .Labels}}", image])
    if completed.returncode != 0:
        return None
    try:
        labels = json.loads(completed.stdout or "null") or {}
    except json.JSONDecodeError:
        return None
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else None


def build_layer(layer: ImageLayer, context: Path) -> None:
    """podman build of one layer; its log goes to stderr as it comes."""
    argv = [PODMAN, "build", "--pull=never", "--format", "docker", *ulimit_argv()]
    if layer.platform:
        argv += ["--platform", layer.platform]
    argv += ["--file", str(layer.dockerfile), "--tag", layer.image, *label_argv(layer.labels)]
    for key, value in sorted(layer.build_args.items()):
        argv += ["--build-arg", f"{key}={value}"]
    argv.append(str(context))
    sys.stderr.write(f"ssebench: building the {layer.kind} layer {layer.image} (podman)\n")
    tail: deque[str] = deque(maxlen=BUILD_LOG_TAIL)
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
    except FileNotFoundError:
        raise podman_missing() from None
    with process:
        assert process.stdout is not None
        try:
            for line in process.stdout:
                tail.append(line.rstrip("\n"))
                sys.stderr.write(f"  {layer.kind} | {line}")
        except BaseException:
            process.terminate()
            raise
    if process.wait() != 0:
        log = "\n".join(f"  {line}" for line in tail)
        raise ImageUnavailableError(
            f"Building the {layer.kind} layer {layer.image} with podman failed. "
            f"The last lines of its build log:\n{log}",
            image=layer.image,
        )
