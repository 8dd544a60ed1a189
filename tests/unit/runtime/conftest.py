"""Fixtures for the in-container runtime's tests: a tiny Python project in a git
repository, its task files, and a layout of temporary directories standing in for
the container's fixed paths. Everything runs as the current user: the accounts are
injected, so no test needs root or Docker."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ssebench.runtime.accounts import Accounts
from ssebench.runtime.config import Layout, Task

ROOT = Path(__file__).resolve().parents[3]
AGENTS = ROOT / "src" / "ssebench" / "agents"
# A stand-in for the model key: no file the runtime writes may contain it.
SENTINEL = "sk-sentinel-7c41e09a5b"

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
VISIBLE_TEST = (
    "import unittest\n\nimport calc\n\n\nclass Visible(unittest.TestCase):\n"
    "    def test_zero(self):\n        self.assertEqual(calc.add(0, 0), 0)\n"
)
HIDDEN_TEST = (
    "import unittest\n\nimport calc\n\n\nclass Hidden(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n"
)
UNITTEST = "python3 -m unittest discover -s tests -t ."


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
            *args,
        ],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


@dataclass
class Project:
    layout: Layout
    source: Path
    task: Task
    reference_patch: Path

    def environ(self, **extra: str) -> dict[str, str]:
        return {
            "PATH": os.environ["PATH"],
            "SSE_API_KEY": SENTINEL,
            "SSE_BASE_URL": "http://proxy.invalid:4000",
            "SSE_MODEL_NAME": "test-model",
            "SSE_RESULTS": str(self.layout.results),
            "SSE_ARCHIVE": str(self.layout.archive),
            "TIMEOUT": "60",
            **extra,
        }

    def result(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.layout.results / "result.json").read_text())
        return data

    def dialog(self) -> list[dict[str, Any]]:
        lines = self.layout.dialog_file.read_text().splitlines()
        return [json.loads(line) for line in lines]


@pytest.fixture
def accounts() -> Accounts:
    return Accounts.current_user()


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory with a short path: a unix socket path has at most 107 bytes."""
    path = Path(tempfile.mkdtemp(prefix="sse-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def make_project(tmp_path: Path, socket_dir: Path, task_fields: dict[str, str]) -> Project:
    source = tmp_path / "src" / "demo"
    (source / "tests").mkdir(parents=True)
    (source / "calc.py").write_text(BUGGY)
    (source / "tests" / "__init__.py").write_text("")
    (source / "tests" / "test_calc.py").write_text(VISIBLE_TEST)
    (source / "README.md").write_text("# demo\n")
    git(source, "init", "-q")
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", "base")

    layout = Layout(
        task_dir=tmp_path / "task",
        results=tmp_path / "private" / "results",
        private_root=tmp_path / "private",
        archive=tmp_path / "archive",
        socket_dir=socket_dir,
        grade_root=tmp_path / "grade",
        image_env_file=tmp_path / "image.env",
    )
    (layout.hidden_dir / "tests").mkdir(parents=True)
    (layout.hidden_dir / "tests" / "test_hidden.py").write_text(HIDDEN_TEST)
    fields = {
        "id": "py-demo-add",
        "project": "demo",
        "language": "python",
        "source_dir": str(source),
        "prompt": "add() subtracts; make it add.",
        "build": "python3 -m compileall -q .",
        "test": UNITTEST,
        "hidden_test": UNITTEST,
        "dataset": "test",
        **task_fields,
    }
    layout.task_file.write_text(json.dumps(fields))
    reference = tmp_path / "reference.patch"
    (source / "calc.py").write_text(FIXED)
    reference.write_text(git(source, "diff"))
    (source / "calc.py").write_text(BUGGY)
    return Project(layout, source, Task.load(layout.task_file), reference)


@pytest.fixture
def project(tmp_path: Path, short_dir: Path) -> Project:
    return make_project(tmp_path, short_dir, {})
