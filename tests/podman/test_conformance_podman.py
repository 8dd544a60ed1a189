"""The backend conformance suite against the real Podman backend, run exactly as
docs/writing-a-backend.md shows it: the test module is the page's code block, written
to a folder of its own and run by pytest from the checkout's root (the block names the
pilot's task folder relative to it). The pilot's images are built by Podman once."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.podman
DOC = ROOT / "docs" / "writing-a-backend.md"
BLOCK = re.compile(r"```python\n(# tests/test_conformance\.py.*?)```", re.DOTALL)


def test_the_documented_conformance_suite_passes_on_podman(tmp_path: Path) -> None:
    (block,) = BLOCK.findall(DOC.read_text())
    module = tmp_path / "test_conformance.py"
    module.write_text(block)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(module), "-q", "-p", "no:cacheprovider", "-rA"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=1800,
    )
    summary = done.stdout.strip().splitlines()[-1]
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    # Every contract ran and held: none skipped, none an expected failure.
    assert re.fullmatch(r"=* ?13 passed in .*", summary), summary
