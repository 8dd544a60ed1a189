"""The backend conformance suite against the real Podman backend, run exactly as
docs/writing-a-backend.md shows it: the test module is the page's code block, written
to a folder of its own and run by pytest from the checkout's root (the block names the
pilot's task folder relative to it). The pilot's images are built by Podman once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conformance import run_suite_module
from tests.conftest import ROOT

pytestmark = pytest.mark.podman
DOC = ROOT / "docs" / "writing-a-backend.md"
BLOCK = re.compile(r"```python\n(# tests/test_conformance\.py.*?)```", re.DOTALL)


def test_the_documented_conformance_suite_passes_on_podman(tmp_path: Path) -> None:
    # The page's first such block is section 3's snippet (section 4's is another backend's).
    block = BLOCK.findall(DOC.read_text())[0]
    module = tmp_path / "test_conformance.py"
    module.write_text(block)
    summary = run_suite_module(module)
    # Every contract ran and held: none skipped, none an expected failure.
    assert re.fullmatch(r"=* ?17 passed in .*", summary), summary
