"""The backend conformance suite against the real Docker backend, in both modes, with
the pilot's images built by the backend's own prepare_images."""

from __future__ import annotations

from typing import ClassVar

import pytest

from ssebench.extensions import Backend
from tests.conformance import PilotContract
from tests.conftest import PILOT_DATASET

pytestmark = pytest.mark.docker


class TestDockerBackend(PilotContract):
    known_gaps: ClassVar[frozenset[str]] = frozenset()
    run_timeout = 300.0
    task_dir = PILOT_DATASET / "py-semver-prerelease"

    def make_backend(self) -> Backend:
        from ssebench.backends.docker import DockerBackend

        return DockerBackend()
