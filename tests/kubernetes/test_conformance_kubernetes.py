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

    @pytest.fixture(autouse=True)
    def _pull_errors_end_sooner(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A run whose image cannot be pulled fails after 90 s of pull errors (spec),
        a figure the unit tests hold on a clock (tests/unit/kubernetes/test_waiting.py).
        What counts here is the real cluster's pull errors, which come at once: 10 s of
        them is start_error's check, the other 80 s were CI's time."""
        from ssebench.backends.kubernetes import backend

        monkeypatch.setattr(backend, "PULL_ERROR_SECONDS", 10.0)

    def make_backend(self) -> Backend:
        from ssebench.backends.kubernetes import KubernetesBackend

        return KubernetesBackend()

    def images_for(self, backend: Backend, kind: ImageKind, mode: Mode = "sandbox") -> Images:
        return Images(run=self.cluster.images[AGENT_OF_KIND[kind]])
