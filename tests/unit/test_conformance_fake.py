"""The backend conformance suite, run against the fake backend."""

from __future__ import annotations

from typing import ClassVar

from ssebench.extensions import Backend, Images
from ssebench.testing.conformance import BackendContract, ImageKind
from ssebench.testing.fake import FakeBackend


class TestFakeBackend(BackendContract):
    # The fake's containers are processes: they have no address and no exec; and no
    # prune labels (its runs are files of one test session).
    known_gaps: ClassVar[frozenset[str]] = frozenset({"endpoint", "exec_argv", "prune_labels"})
    run_timeout = 30.0

    def make_backend(self) -> Backend:
        return FakeBackend()

    def images_for(self, backend: Backend, kind: ImageKind) -> Images:
        return Images(run=f"fake/{kind}")
