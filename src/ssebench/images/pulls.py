"""Pulling images: the bases an environment layer starts FROM, and a run's prebuilt
images (--prebuilt), with back-off while a registry refuses for its rate limit (429).

The image commands go through a container CLI's runner (run_docker, or Podman's: a
CliRun and its CliReason), so the Podman backend pulls its bases the same way.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence

from ssebench.errors import ImageUnavailableError
from ssebench.extensions import ImageLayer
from ssebench.host.docker_cli import failure_reason, run_docker
from ssebench.images.layers import Layer
from ssebench.images.output import BuildOutput

# What a registry's refusal for its rate limit looks like in `docker pull`'s output.
RATE_LIMITED = ("toomanyrequests", "429 too many requests")
# A pull refused for a registry's rate limit is tried this often in all, after pauses
# of PULL_FIRST_DELAY seconds, doubling.
PULL_ATTEMPTS = 4
PULL_FIRST_DELAY = 5.0


def rate_limited(reason: str) -> bool:
    return any(marker in reason.lower() for marker in RATE_LIMITED)


# A container CLI's command runner (run_docker, or Podman's) and the reason it gives for a
# failed command: the image commands of both stores go through a pair of these.
CliRun = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]
CliReason = Callable[["subprocess.CompletedProcess[str]"], str]


def pull_with_back_off(
    image: str,
    *,
    platform: str | None,
    output: BuildOutput,
    attempts: int = PULL_ATTEMPTS,
    first_delay: float = PULL_FIRST_DELAY,
    run: CliRun | None = None,
    reason_of: CliReason | None = None,
) -> str | None:
    """`docker pull image` (or run's CLI's), tried again after a pause while the
    registry refuses it for its rate limit (429); None once pulled, else the last
    failure's reason."""
    run, reason_of = run or run_docker, reason_of or failure_reason
    argv = ["pull", "--quiet", *(["--platform", platform] if platform else []), image]
    delay = first_delay
    for attempt in range(1, attempts + 1):
        started = time.monotonic()
        completed = run(argv)
        if completed.returncode == 0:
            output.say(f"pulled {image} in {time.monotonic() - started:.0f}s")
            return None
        reason = reason_of(completed)
        if not rate_limited(reason) or attempt == attempts:
            return reason
        output.say(
            f"{image}: the registry refused the pull for its rate limit (429); "
            f"trying again in {delay:.0f}s ({attempt} of {attempts} tries made)"
        )
        time.sleep(delay)
        delay *= 2
    return None  # not reached: the last attempt returns


def pull_image(image: str, *, platform: str | None, output: BuildOutput | None = None) -> None:
    """Pull image; if that fails but a copy is on this machine, warn and use it.

    Raises ImageUnavailableError naming the image and what to do.
    """
    output = output or BuildOutput()
    output.say(f"pulling {image}")
    reason = pull_with_back_off(image, platform=platform, output=output)
    if reason is None:
        return
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


def image_exists(image: str) -> bool:
    return run_docker(["image", "inspect", "--format", "{{.Id}}", image]).returncode == 0


def base_images(dockerfile: str) -> list[str]:
    """The images a Dockerfile's stages start FROM, without the names of its own
    stages and `scratch` (a FROM with a build argument is left to the build)."""
    stages: set[str] = set()
    images = []
    for line in dockerfile.splitlines():
        words = line.split()
        if len(words) < 2 or words[0].upper() != "FROM":
            continue
        names = [word for word in words[1:] if not word.startswith("--")]
        if not names:
            continue
        image = names[0]
        if image not in stages and image != "scratch" and "$" not in image:
            images.append(image)
        if len(names) >= 3 and names[1].upper() == "AS":
            stages.add(names[2])
    return list(dict.fromkeys(images))


def pull_missing_bases(
    layer: Layer | ImageLayer,
    output: BuildOutput,
    *,
    run: CliRun | None = None,
    reason_of: CliReason | None = None,
) -> None:
    """Pull the images an environment layer starts FROM that the store (Docker's, or
    run's CLI's) lacks (an official prebuilt image, say), with back-off while the
    registry rate-limits: a build would pull them once, without. A pull refused for
    another reason is left to the build, which says why in its log.
    ImageUnavailableError when the rate limit outlasts the tries."""
    if layer.kind != "environment":
        return
    run = run or run_docker
    for image in base_images(layer.dockerfile.read_text(encoding="utf-8", errors="replace")):
        if run(["image", "inspect", image]).returncode == 0:
            continue
        output.say(f"pulling {image}, the {layer.kind} layer's base")
        reason = pull_with_back_off(
            image, platform=layer.platform, output=output, run=run, reason_of=reason_of
        )
        if reason is not None and rate_limited(reason):
            raise ImageUnavailableError(
                f"The image {image} is not available: its registry still refuses the pull "
                f"for its rate limit after {PULL_ATTEMPTS} tries ({reason}). Pull the "
                "dataset's images ahead (ssebench images pull), or log in (docker login).",
                image=image,
            )
