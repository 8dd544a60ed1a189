"""The backend conformance suite against the Kubernetes backend on a real cluster."""

from __future__ import annotations

from typing import ClassVar

import pytest

from ssebench.extensions import Backend, Images
from ssebench.testing.conformance import ImageKind
from tests.conformance import AGENT_OF_KIND, PilotContract
from tests.kubernetes.cluster import Cluster

pytestmark = pytest.mark.kubernetes


class TestKubernetesBackend(PilotContract):
    # Sidecar mode is refused on Kubernetes (spec); the suite runs sandbox runs only.
    known_gaps: ClassVar[frozenset[str]] = frozenset()
    run_timeout = 600.0
    kept_runs_keep_running = True
    cluster: Cluster

    @pytest.fixture(autouse=True)
    def _on_the_cluster(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def make_backend(self) -> Backend:
        from ssebench.backends.kubernetes import KubernetesBackend

        return KubernetesBackend()

    def images_for(self, backend: Backend, kind: ImageKind) -> Images:
        return Images(run=self.cluster.images[AGENT_OF_KIND[kind]])
