"""The fenced blocks of the user docs (README.md, docs/*.md), as docs/README.md
describes them: which shell blocks the tests run, and how they are run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT

SHELL_LANGUAGES = ("sh", "bash", "shell", "console")
MARKS = ("test", "test-docker", "illustrative")
# The first words of a line that is a command, for a block without a language.
COMMAND_WORDS = re.compile(
    r"^(ssebench|docker|kubectl|kind|helm|make|pip|python3|apt-get|export|git|cd)( |$)"
)
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    info: str
    body: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def language(self) -> str:
        return self.info.split(maxsplit=1)[0] if self.info else ""

    @property
    def mark(self) -> str:
        words = self.info.split(maxsplit=1)
        return words[1].split(":", 1)[0].strip() if len(words) > 1 else ""

    @property
    def reason(self) -> str:
        return self.info.split(":", 1)[1].strip() if ":" in self.info else ""


def pages() -> list[Path]:
    """README.md and the pages of docs/ (not the READMEs of the example projects)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(page: Path) -> list[Block]:
    found = []
    lines = page.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence = opening["fence"]
        end = index + 1
        while end < len(lines) and not re.match(rf"^\s*{re.escape(fence)}\s*$", lines[end]):
            end += 1
        body = "\n".join(line.removeprefix(opening["indent"]) for line in lines[index + 1 : end])
        found.append(Block(page, index + 1, opening["info"].strip(), body + "\n"))
        index = end + 1
    return found


def all_blocks() -> list[Block]:
    return [block for page in pages() for block in blocks(page)]


def problem(block: Block) -> str | None:
    """What is wrong with how block is marked, or None."""
    if block.language in SHELL_LANGUAGES:
        if block.mark not in MARKS:
            marks = "`test`, `test-docker` or `illustrative: <why>`"
            return f"{block.where}: a shell block needs {marks}"
        if block.mark == "illustrative" and not block.reason:
            return f"{block.where}: `illustrative` needs a reason: `illustrative: <why>`"
        if block.mark != "illustrative" and block.language == "console":
            return f"{block.where}: a console block (prompts and output) can only be illustrative"
        return None
    if not block.language:
        commands = [line for line in block.body.splitlines() if line.strip()]
        if commands and all(COMMAND_WORDS.match(line) for line in commands):
            return f"{block.where}: these are commands: fence them with sh and a mark"
    return None


def marked(mark: str) -> list[Block]:
    return [b for b in all_blocks() if b.language in SHELL_LANGUAGES and b.mark == mark]


def run_block(block: Block, scratch: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run block as docs/README.md says: bash -e -o pipefail, from a scratch folder with
    datasets/ and docs/, this checkout's ssebench first on PATH."""
    for folder in ("datasets", "docs"):
        (scratch / folder).symlink_to(ROOT / folder)
    (scratch / "home").mkdir()
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(scratch / "home"),
        "XDG_STATE_HOME": str(scratch / "home" / "state"),
    }
    for variable in ("SSEBENCH_DATASET", "SSEBENCH_REGISTRY", "SSEBENCH_BACKEND"):
        env.pop(variable, None)
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.body],
        cwd=scratch,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
