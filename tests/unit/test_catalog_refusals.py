"""Commands that build from a task's files refuse a catalog (which has the tasks'
metadata, not their files) with one clear line, before reaching it."""

from __future__ import annotations

import pytest

from tests.cli import ssebench

# Nothing listens there: a command that tried to read the catalog would say so instead.
UNREACHABLE = "http://127.0.0.1:9"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ("build-case", "--tasks", "py-semver-prerelease"),
            "ssebench: error: build-case builds from the tasks' files: it needs --local, "
            "not --catalog",
        ),
        (
            ("images", "publish", "--registry", "127.0.0.1:5000/sse", "--tasks", "all"),
            "ssebench: error: images publish builds the tasks' images: it needs --local, "
            "not --catalog",
        ),
    ],
    ids=["build-case", "images publish"],
)
def test_refused_with_one_line(arguments: tuple[str, ...], message: str) -> None:
    extra = ("--agents", "reference") if arguments[0] == "images" else ()
    done = ssebench(*arguments, *extra, "--catalog", UNREACHABLE, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [message]
    assert done.stdout == ""
