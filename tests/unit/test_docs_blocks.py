"""Every shell block of the user docs is run by a test or marked illustrative with a
reason (docs/README.md); the blocks marked `test` run here, fast and without Docker."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.doc_blocks import Block, all_blocks, blocks, marked, problem, run_block

FAST = marked("test")


def test_every_shell_block_is_marked() -> None:
    problems = [found for found in map(problem, all_blocks()) if found]
    assert problems == []


def test_the_docs_have_blocks_of_every_mark() -> None:
    # So that a change to the parser cannot make the checks above pass by finding nothing.
    assert len(FAST) >= 2 and marked("test-docker") and len(marked("illustrative")) >= 10


@pytest.mark.parametrize("block", FAST, ids=[block.where for block in FAST])
def test_a_fast_block_runs(block: Block, tmp_path: Path) -> None:
    done = run_block(block, tmp_path, timeout=120)
    assert done.returncode == 0, f"{block.where}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


def _page(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "page.md"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("fence", "complaint"),
    [
        ("```sh\nssebench --help\n```\n", "needs `test`, `test-docker` or `illustrative"),
        ("```bash illustrative\nls\n```\n", "needs a reason"),
        ("```console test\n$ ls\n```\n", "can only be illustrative"),
        ("```\nssebench run --task t --agent reference\n```\n", "these are commands"),
    ],
)
def test_unmarked_blocks_are_named(tmp_path: Path, fence: str, complaint: str) -> None:
    (block,) = blocks(_page(tmp_path, "Text.\n\n" + fence))
    found = problem(_relative(block))
    assert found is not None and complaint in found and found.startswith("page.md:3: ")


@pytest.mark.parametrize(
    "fence",
    [
        "```sh test\nssebench --help\n```\n",
        "```sh illustrative: needs a cluster\nkubectl get pods\n```\n",
        "```\npassed\t/results/x\n```\n",
        "```\nssebench run ---- API ----> Job\n   | pod\n```\n",
        "```yaml\nbuild: make\n```\n",
    ],
)
def test_marked_blocks_and_text_pass(tmp_path: Path, fence: str) -> None:
    (block,) = blocks(_page(tmp_path, fence))
    assert problem(_relative(block)) is None


def test_a_failing_command_fails_its_block(tmp_path: Path) -> None:
    (block,) = blocks(_page(tmp_path, "```sh test\nfalse\necho never\n```\n"))
    (tmp_path / "run").mkdir()
    done = run_block(block, tmp_path / "run", timeout=30)
    assert done.returncode == 1 and "never" not in done.stdout


def _relative(block: Block) -> Block:
    """block as if its page were at the checkout's root (where shows ROOT-relative)."""
    return Block(ROOT / block.page.name, block.line, block.info, block.body)
