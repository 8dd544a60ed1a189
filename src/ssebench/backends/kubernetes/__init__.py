"""The Kubernetes backend: one Job per run (spec: kubernetes.txt).

Not implemented yet; see the Kubernetes issue. Registered so that selecting it gives a
clear message instead of "Unknown backend". This module must not import the kubernetes
client at import time: `ssebench --help` never loads it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NoReturn

from ssebench.errors import BackendError
from ssebench.extensions import Backend, ImageRequest, Images, RunHandle, RunInfo, RunSpec


class KubernetesBackend(Backend):
    name = "kubernetes"
    builds_images = False

    def _missing(self) -> NoReturn:
        raise BackendError(
            "The kubernetes backend is not implemented yet in this version of ssebench; "
            "use --backend docker",
            backend=self.name,
        )

    def prepare_images(self, request: ImageRequest) -> Images:
        self._missing()

    def copy_from_image(self, image: str, path: str, dest: Path, platform: str | None) -> None:
        self._missing()

    def start(self, spec: RunSpec) -> RunHandle:
        self._missing()

    def wait(self, handle: RunHandle, timeout: float | None) -> int:
        self._missing()

    def logs(self, handle: RunHandle, follow: bool = False) -> Iterator[str]:
        self._missing()

    def collect_results(self, handle: RunHandle, dest: Path) -> None:
        self._missing()

    def stop(self, handle: RunHandle, grace: float) -> None:
        self._missing()

    def cleanup(self, handle: RunHandle) -> None:
        self._missing()

    def list_runs(self, labels: Mapping[str, str]) -> list[RunInfo]:
        self._missing()
