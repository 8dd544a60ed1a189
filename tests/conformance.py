"""The conformance suite on a real backend with the pilot's images: a reference agent's
run that passes and a sleeper's that runs until stopped. The reference patch comes out
of the pass image (BackendContract.artifacts_for)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ssebench.testing.conformance import AGENT_OF_KIND, BackendContract
from tests.conftest import ROOT

__all__ = ["AGENT_OF_KIND", "PilotContract", "run_suite_module"]


def run_suite_module(module: Path, environment: dict[str, str] | None = None) -> str:
    """Run a conformance test module as its author would (pytest from the checkout's
    root, where the docs' task folder is relative to); its last line, once it passed."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(module), "-q", "-p", "no:cacheprovider", "-rA"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=environment or dict(os.environ),
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


class PilotContract(BackendContract):
    """images_for is the backend's."""
