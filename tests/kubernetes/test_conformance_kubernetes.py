"""The backend conformance suite against the Kubernetes backend on a real cluster."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from ssebench.extensions import REFERENCE_PATCH_TARGET, Backend, Images, Mount
from ssebench.runner import IMAGE_REFERENCE_PATCH
from ssebench.testing.conformance import BackendContract, ImageKind
from tests.kubernetes.conftest import Cluster

pytestmark = pytest.mark.kubernetes
AGENT_OF_KIND = {"pass": "reference", "sleep": "sleeper"}


class TestKubernetesBackend(BackendContract):
    # Sidecar mode is refused on Kubernetes (spec); the suite runs sandbox runs only.
    known_gaps: ClassVar[frozenset[str]] = frozenset()
    run_timeout = 600.0
    cluster: Cluster

    @pytest.fixture(autouse=True)
    def _on_the_cluster(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def make_backend(self) -> Backend:
        from ssebench.backends.kubernetes import KubernetesBackend

        return KubernetesBackend()

    def images_for(self, backend: Backend, kind: ImageKind) -> Images:
        return Images(run=self.cluster.images[AGENT_OF_KIND[kind]])

    def artifacts_for(
        self, backend: Backend, kind: ImageKind, images: Images, run_dir: Path
    ) -> tuple[Mount, ...]:
        if kind != "pass":
            return ()
        patch = run_dir / "reference.patch"
        backend.copy_from_image(images.run, IMAGE_REFERENCE_PATCH, patch, None)
        return (Mount(target=REFERENCE_PATCH_TARGET, source=str(patch), read_only=True),)
