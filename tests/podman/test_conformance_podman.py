"""The backend conformance suite against the real Podman backend, with the pilot's
images built by Podman through the public layer API."""

from __future__ import annotations

from typing import ClassVar

import pytest

from ssebench.agents import load_agent
from ssebench.backends.podman import PodmanBackend
from ssebench.extensions import Backend, Images
from ssebench.runner import image_request
from ssebench.tasks import load_dataset
from ssebench.testing.conformance import ImageKind
from tests.conformance import AGENT_OF_KIND, PilotContract
from tests.conftest import PILOT_DATASET

pytestmark = pytest.mark.podman


class TestPodmanBackend(PilotContract):
    known_gaps: ClassVar[frozenset[str]] = frozenset()
    run_timeout = 300.0

    def make_backend(self) -> Backend:
        return PodmanBackend()

    def images_for(self, backend: Backend, kind: ImageKind) -> Images:
        task = load_dataset(PILOT_DATASET).task("py-semver-prerelease")
        agent = load_agent(AGENT_OF_KIND[kind])
        return backend.prepare_images(image_request(task, agent))
