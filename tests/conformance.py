"""The conformance suite on a real backend with the pilot's images: a reference agent's
run that passes and a sleeper's that runs until stopped."""

from __future__ import annotations

from pathlib import Path

from ssebench.extensions import REFERENCE_PATCH_TARGET, Backend, Images, Mount
from ssebench.runner import IMAGE_REFERENCE_PATCH
from ssebench.testing.conformance import BackendContract, ImageKind

AGENT_OF_KIND = {"pass": "reference", "sleep": "sleeper"}


class PilotContract(BackendContract):
    """images_for is the backend's; the reference patch comes out of the pass image."""

    def artifacts_for(
        self, backend: Backend, kind: ImageKind, images: Images, run_dir: Path
    ) -> tuple[Mount, ...]:
        if kind != "pass":
            return ()
        patch = run_dir / "reference.patch"
        backend.copy_from_image(images.run, IMAGE_REFERENCE_PATCH, patch, None)
        return (Mount(target=REFERENCE_PATCH_TARGET, source=str(patch), read_only=True),)
