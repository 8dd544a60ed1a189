"""Every relative link of the user docs (README.md, docs/*.md) names a file or folder
of the checkout, and every #anchor a heading of the page it points to (docs/README.md)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.conftest import ROOT
from tests.doc_blocks import FENCE, pages

LINK = re.compile(r"!?\[(?:[^\]`]|`[^`]*`)*\]\((?P<target><[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+\1")
HEADING = re.compile(r"^#{1,6}\s+(?P<text>.+?)\s*#*\s*$")


def prose_lines(page: Path, *, blank_code: bool = True) -> list[tuple[int, str]]:
    """The page's lines outside fenced blocks, inline code blanked out (links in code
    are examples, not links) unless blank_code is False."""
    lines, fence = [], ""
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        opening = FENCE.match(line)
        if opening and (not fence or opening["fence"].startswith(fence)):
            fence = "" if fence else opening["fence"]
            continue
        if not fence:
            if blank_code:
                line = INLINE_CODE.sub(lambda code: " " * len(code[0]), line)
            lines.append((number, line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: markup dropped, lower case, punctuation dropped,
    spaces made hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in prose_lines(page, blank_code=False):
        heading = HEADING.match(line)
        if heading is None:
            continue
        base = slug(heading["text"])
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    broken = []
    for number, line in prose_lines(page):
        for link in LINK.finditer(line):
            target = link["target"].strip("<>")
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # another site, mailto:
            path_part, _, anchor = target.partition("#")
            where = f"{page.relative_to(root)}:{number}: {target}"
            resolved = (page.parent / unquote(path_part)).resolve() if path_part else page
            if not resolved.exists():
                broken.append(f"{where}: no such file")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{where}: no heading with that anchor in {resolved.name}")
            elif path_part and root not in resolved.parents and resolved != root:
                broken.append(f"{where}: outside the repository")
    return broken


def test_every_relative_link_resolves() -> None:
    assert [problem for page in pages() for problem in broken_links(page)] == []


def test_the_check_finds_links_to_check() -> None:
    linked = [
        link["target"]
        for page in pages()
        for _, line in prose_lines(page)
        for link in LINK.finditer(line)
    ]
    assert sum("#" in target for target in linked) >= 10 and len(linked) >= 40


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("## ssebench tasks, dataset, build-case", "ssebench-tasks-dataset-build-case"),
        ("### Publishing: `ssebench images publish`", "publishing-ssebench-images-publish"),
        ("# Models: the proxy, per-run keys", "models-the-proxy-per-run-keys"),
        ("## The database layer: LiteLLM's Prisma", "the-database-layer-litellms-prisma"),
    ],
)
def test_anchors_are_made_as_github_makes_them(heading: str, anchor: str) -> None:
    match = HEADING.match(heading)
    assert match is not None and slug(match["text"]) == anchor


def test_broken_links_and_anchors_are_named(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "other.md").write_text("# Other\n\n## A `code` heading: yes\n\n## Twice\n\n## Twice\n")
    page = docs / "page.md"
    page.write_text(
        "# Page\n\n"
        "[fine](other.md#a-code-heading-yes) [again](other.md#twice-1) [self](#page)\n"
        "[gone](no-such-page.md) [bad](other.md#twice-2) `[code](x.md)` [out](../../x)\n"
        "```sh test\n[in a block](nowhere.md)\n```\n"
    )
    assert broken_links(page, tmp_path) == [
        "docs/page.md:4: no-such-page.md: no such file",
        "docs/page.md:4: other.md#twice-2: no heading with that anchor in other.md",
        "docs/page.md:4: ../../x: no such file",
    ]
