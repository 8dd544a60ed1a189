"""The backend conformance suite against the Kubernetes backend on a real cluster."""

from __future__ import annotations

from typing import ClassVar

import pytest

from ssebench.extensions import Backend, Images, Mode
from ssebench.testing.conformance import ImageKind
from tests.conformance import AGENT_OF_KIND, PilotContract
from tests.conftest import PILOT_DATASET
from tests.kubernetes.cluster import Cluster

pytestmark = pytest.mark.kubernetes


class TestKubernetesBackend(PilotContract):
    known_gaps: ClassVar[frozenset[str]] = frozenset()
    run_timeout = 600.0
    task_dir = PILOT_DATASET / "py-semver-prerelease"
    prebuilt = True
    # Sidecar mode is refused on Kubernetes (spec): the suite checks that it is.
    modes: ClassVar[frozenset[Mode]] = frozenset({"sandbox"})
    kept_runs_keep_running = True
    cluster: Cluster

    @pytest.fixture(autouse=True)
    def _on_the_cluster(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def make_backend(self) -> Backend:
        from ssebench.backends.kubernetes import KubernetesBackend

        return KubernetesBackend()

    def images_for(self, backend: Backend, kind: ImageKind, mode: Mode = "sandbox") -> Images:
        return Images(run=self.cluster.images[AGENT_OF_KIND[kind]])
