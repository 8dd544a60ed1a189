"""Where the Python X.Y of an official-form spec comes from (`--python-images`).

The official harness starts every environment from a Python X.Y image. ssebench takes
the official `python:X.Y-slim` wherever Docker can pull it; on a machine that cannot
pull (no registry reachable), `ssebench/python:X.Y`, made offline from the Debian
release that carries X.Y by scripts/seed-python-image.sh. `auto` (the default) asks
Docker once per version and import: an official image already here or pulled now, else
the Debian one if it is here, else one line naming both ways out. `official` and
`debian` choose without asking.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Literal, TextIO

from ssebench.errors import UserError
from ssebench.host.docker_cli import failure_reason, run_docker
from ssebench.images.output import BuildOutput
from ssebench.images.pulls import pull_with_back_off
from ssebench.swebench.environments import EnvironmentUnavailable

PythonImages = Literal["auto", "official", "debian"]
OFFICIAL_PYTHON_IMAGE = "python:{version}-slim"
DEBIAN_PYTHON_IMAGE = "ssebench/python:{version}"
# The Debian releases that carry a Python (scripts/seed-python-image.sh makes the image).
DEBIAN_PYTHONS = {"3.9": "bullseye", "3.11": "bookworm", "3.13": "trixie"}


@dataclass
class PythonImageSource:
    """The images of one import's Python versions, chosen as `images` says; what auto
    chose is said on progress and kept for the import's other instances."""

    images: PythonImages = "auto"
    progress: TextIO = field(default_factory=lambda: sys.stderr)
    _chosen: dict[str, str | EnvironmentUnavailable] = field(default_factory=dict)

    def image(self, version: str) -> str:
        """The image of Python version; EnvironmentUnavailable (one line) when it can
        be had in none of the ways allowed."""
        if self.images == "official":
            return official_image(version)
        if self.images == "debian":
            return debian_image(version)
        if version not in self._chosen:
            try:
                self._chosen[version] = self._choose(version)
            except EnvironmentUnavailable as unavailable:
                self._chosen[version] = unavailable
        chosen = self._chosen[version]
        if isinstance(chosen, EnvironmentUnavailable):
            raise chosen
        return chosen

    def _choose(self, version: str) -> str:
        official = official_image(version)
        try:
            if _present(official):
                return official
            reason = pull_with_back_off(
                official, platform=None, output=BuildOutput(stream=self.progress)
            )
            if reason is None:
                return official
            debian = DEBIAN_PYTHON_IMAGE.format(version=version)
            if _present(debian):
                self._say(
                    f"{official} cannot be pulled here ({reason}): Python {version} "
                    f"environments start from {debian}, made from Debian "
                    f"{DEBIAN_PYTHONS.get(version, '')}".rstrip()
                )
                return debian
        except UserError as unreachable:
            # No Docker to ask: the environment's build pulls the official image then.
            self._say(f"{unreachable} Python {version} environments start from {official}.")
            return official
        if version in DEBIAN_PYTHONS:
            raise EnvironmentUnavailable(
                f"its specification needs Python {version}: {official} cannot be pulled "
                f"here ({reason}) and {debian} is not made; make it offline with "
                f"scripts/seed-python-image.sh {version}, or pull {official} on a machine "
                "that can"
            )
        raise EnvironmentUnavailable(
            f"its specification needs Python {version}: {official} cannot be pulled here "
            f"({reason}) and no Debian release carries it (ssebench/python:X.Y is made "
            f"for {', '.join(DEBIAN_PYTHONS)}); import on a machine that can pull it, or "
            "give a spec with another python in --specs (or --python-substitute)"
        )

    def _say(self, message: str) -> None:
        BuildOutput(stream=self.progress).say(message)


def official_image(version: str) -> str:
    return OFFICIAL_PYTHON_IMAGE.format(version=version)


def debian_image(version: str) -> str:
    """ssebench/python:X.Y; EnvironmentUnavailable when no Debian release carries X.Y."""
    if version not in DEBIAN_PYTHONS:
        raise EnvironmentUnavailable(
            f"its specification needs Python {version}, which no Debian release carries "
            f"(--python-images debian makes {', '.join(DEBIAN_PYTHONS)}); use "
            "--python-images official on a machine that can pull python:X.Y-slim, or give "
            "a spec with another python in --specs"
        )
    return DEBIAN_PYTHON_IMAGE.format(version=version)


def _present(image: str) -> bool:
    completed = run_docker(["image", "inspect", "--format", "{{.Id}}", image])
    if completed.returncode != 0 and "No such image" not in failure_reason(completed):
        # Any answer but "no such image" is Docker's trouble, not the image's absence.
        raise UserError(f"Docker cannot look up {image}: {failure_reason(completed)}.")
    return completed.returncode == 0
