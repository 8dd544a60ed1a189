"""The backend conformance suite against the real Docker backend."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from ssebench.agents import load_agent
from ssebench.extensions import REFERENCE_PATCH_TARGET, Backend, Images, Mount
from ssebench.runner import IMAGE_REFERENCE_PATCH, image_request
from ssebench.tasks import load_dataset
from ssebench.testing.conformance import BackendContract, ImageKind
from tests.conftest import PILOT_DATASET

pytestmark = pytest.mark.docker
AGENT_OF_KIND = {"pass": "reference", "sleep": "sleeper"}


class TestDockerBackend(BackendContract):
    known_gaps: ClassVar[frozenset[str]] = frozenset()
    run_timeout = 300.0

    def make_backend(self) -> Backend:
        from ssebench.backends.docker import DockerBackend

        return DockerBackend()

    def images_for(self, backend: Backend, kind: ImageKind) -> Images:
        task = load_dataset(PILOT_DATASET).task("py-semver-prerelease")
        agent = load_agent(AGENT_OF_KIND[kind])
        return backend.prepare_images(image_request(task, agent))

    def artifacts_for(
        self, backend: Backend, kind: ImageKind, images: Images, run_dir: Path
    ) -> tuple[Mount, ...]:
        if kind != "pass":
            return ()
        patch = run_dir / "reference.patch"
        backend.copy_from_image(images.run, IMAGE_REFERENCE_PATCH, patch, None)
        return (Mount(target=REFERENCE_PATCH_TARGET, source=str(patch), read_only=True),)
