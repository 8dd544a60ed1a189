"""The conformance suite on a real backend with the pilot's images: a reference agent's
run that passes and a sleeper's that runs until stopped. The reference patch comes out
of the pass image (BackendContract.artifacts_for)."""

from __future__ import annotations

from ssebench.testing.conformance import AGENT_OF_KIND, BackendContract

__all__ = ["AGENT_OF_KIND", "PilotContract"]


class PilotContract(BackendContract):
    """images_for is the backend's."""
