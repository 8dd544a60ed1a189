"""The backend conformance suite, run against the fake backend: once with the run
directory shared with the container, once with results that come back by copy."""

from __future__ import annotations

from typing import ClassVar

from ssebench.extensions import Backend, Images, Mode
from ssebench.testing.conformance import BackendContract, ImageKind
from ssebench.testing.fake import CopyingFakeBackend, FakeBackend
from tests.conftest import PILOT_DATASET


class TestFakeBackend(BackendContract):
    # The fake's containers are processes: they have no address and no exec; no prune
    # labels (its runs are files of one test session); no registry (every published
    # image "exists"); and one process per run, whatever the mode.
    known_gaps: ClassVar[frozenset[str]] = frozenset(
        {"endpoint", "exec_argv", "prune_labels", "prepare_images", "sidecar"}
    )
    run_timeout = 30.0
    task_dir = PILOT_DATASET / "py-semver-prerelease"
    modes: ClassVar[frozenset[Mode]] = frozenset({"sandbox"})

    def make_backend(self) -> Backend:
        return FakeBackend()

    def images_for(self, backend: Backend, kind: ImageKind, mode: Mode = "sandbox") -> Images:
        return Images(run=f"fake/{kind}")


class TestCopyingFakeBackend(TestFakeBackend):
    def make_backend(self) -> Backend:
        return CopyingFakeBackend()
