"""The shell blocks of the user docs marked `test-docker` (docs/README.md), run with the
real Docker daemon: together one reference run of a pilot task and one task check."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.doc_blocks import Block, marked, run_block

pytestmark = pytest.mark.docker

DOCKER_BLOCKS = marked("test-docker")


@pytest.mark.parametrize("block", DOCKER_BLOCKS, ids=[block.where for block in DOCKER_BLOCKS])
def test_a_docker_block_runs(block: Block, tmp_path: Path) -> None:
    done = run_block(block, tmp_path, timeout=1200)
    assert done.returncode == 0, f"{block.where}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    # `ssebench run` exits 0 whatever the grade: a reference run the page shows must pass.
    if re.search(r"^ssebench run .*--agent reference", block.body, re.MULTILINE):
        assert re.search(r"^passed\t", done.stdout, re.MULTILINE), done.stdout[-3000:]
