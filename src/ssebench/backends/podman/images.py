"""Podman's images: the layers of ssebench.image_layers built with `podman build`, and
prebuilt images checked or pulled."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ssebench.backends.podman.cli import (
    PODMAN,
    failure_reason,
    podman_missing,
    raise_if_rootless_unusable,
    run_podman,
)
from ssebench.backends.podman.options import label_argv, ulimit_argv
from ssebench.extensions import ImageUnavailableError, UserError
from ssebench.image_layers import (
    BuildOutput,
    ImageBuilder,
    ImageLayer,
    labels_from_json,
    pull_missing_bases,
    pull_with_back_off,
    run_build,
)


def pull_image(image: str, platform: str | None) -> None:
    """Pull a prebuilt image this store lacks, with back-off while the registry
    rate-limits."""
    if run_podman(["image", "exists", image]).returncode == 0:
        return
    reason = pull_with_back_off(
        image, platform=platform, output=BuildOutput(), run=run_podman, reason_of=failure_reason
    )
    if reason is not None:
        raise ImageUnavailableError(
            f"The image {image} is not available: podman pull failed ({reason}). Publish "
            "it under $SSEBENCH_REGISTRY, or run without --prebuilt to build it here.",
            image=image,
        )


def image_labels(image: str) -> Mapping[str, str] | None:
    completed = run_podman(["image", "inspect", "--format", "{{json .Labels}}", image])
    return labels_from_json(completed.stdout) if completed.returncode == 0 else None


def build_layer(layer: ImageLayer, context: Path) -> None:
    """podman build of one layer; its log goes to stderr as it comes. The build pulls
    nothing (--pull=never): an environment's base it lacks (an official SWE-bench
    image, say) is pulled first, with back-off while the registry rate-limits."""
    pull_missing_bases(layer, BuildOutput(), run=run_podman, reason_of=failure_reason)
    argv = [PODMAN, "build", "--pull=never", "--format", "docker", *ulimit_argv()]
    if layer.platform:
        argv += ["--platform", layer.platform]
    argv += ["--file", str(layer.dockerfile), "--tag", layer.image, *label_argv(layer.labels)]
    for key, value in sorted(layer.build_args.items()):
        argv += ["--build-arg", f"{key}={value}"]
    argv.append(str(context))
    run_build(argv, layer, missing=podman_missing, check_log=raise_if_rootless_unusable)


def podman_or_fail(argv: list[str]) -> None:
    completed = run_podman(argv)
    if completed.returncode != 0:
        raise UserError(f"podman {argv[0]} failed: {failure_reason(completed)}")


def image_builder() -> ImageBuilder:
    """Podman's ImageBuilder: `images publish` and `build-case` with --backend podman."""
    return ImageBuilder(
        build=build_layer,
        image_labels=image_labels,
        tag=lambda image, name: podman_or_fail(["tag", image, name]),
        push=lambda name: podman_or_fail(["push", name]),
        store="Podman",
    )
