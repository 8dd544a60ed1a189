"""The base commit, kept where the agent cannot reach it, and diffs against it.

The task's source tree, ``.git`` included, belongs to the agent once it runs, and
git executes what a repository's configuration tells it to (``core.fsmonitor``,
hooks, filter drivers). Root therefore never runs git in the agent's repository
after the agent started. Before it starts, the repository is copied (no hard
links, which the agent could rewrite in place) to a root-only bare repository,
and every diff and export uses that copy with the agent's tree as a mere work
tree, through a private index file.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path

from .processes import capture

BASE_FILE = "ssebench-base"
INDEX_FILE = "ssebench.index"
GIT_TIMEOUT_SECONDS = 600.0

# Configuration that makes git read nothing from outside this copy and run nothing.
_GIT_CONFIG = (
    "safe.directory=*",
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
)
GIT_OPTIONS = tuple(argument for item in _GIT_CONFIG for argument in ("-c", item))

# A release tarball's attributes must not change the pristine tree: without this,
# export-ignore would drop (for example) the tests from it.
PRIVATE_ATTRIBUTES = "* -export-ignore -export-subst\n"

# git's index is one file; the daemon's /diff and the evaluator share it.
_index_lock = threading.Lock()


class GitError(Exception):
    """A git command failed; the message names the command, not its environment."""


def git_environment(path_value: str, home: Path) -> dict[str, str]:
    return {
        "PATH": path_value,
        "HOME": str(home),
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
    }


def _git(
    args: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    stdin: bytes | None = None,
) -> bytes:
    code, stdout, stderr = capture(
        ["git", *GIT_OPTIONS, *args], cwd=cwd, env=env, timeout=GIT_TIMEOUT_SECONDS, stdin=stdin
    )
    if code != 0:
        command = next((a for a in args if not a.startswith("-") and "=" not in a), "git")
        detail = stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise GitError(f"git {command} exited {code}: {' | '.join(detail)}")
    return stdout


class BaseRepository:
    """A root-only bare copy of the task repository and the base commit in it."""

    def __init__(self, git_dir: Path, base: str, work_tree: Path, path_value: str) -> None:
        self.git_dir = git_dir
        self.base = base
        self.work_tree = work_tree
        self._env = git_environment(path_value, git_dir.parent)
        self._env["GIT_DIR"] = str(git_dir)

    @classmethod
    def snapshot(
        cls,
        *,
        source_dir: Path,
        git_dir: Path,
        base_commit: str | None,
        path_value: str,
    ) -> BaseRepository:
        """Copy the repository, unless an earlier start of this container did.

        The copy is reused on a restart because by then the source repository is
        the agent's and no longer says which commit was the base.
        """
        marker = git_dir / BASE_FILE
        if marker.is_file():
            base = marker.read_text(encoding="ascii").strip()
            return cls(git_dir, base, source_dir, path_value)
        env = git_environment(path_value, git_dir.parent)
        git_dir.parent.mkdir(parents=True, exist_ok=True)
        partial = git_dir.with_name(git_dir.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        if base_commit is None:
            head = _git(["rev-parse", "--verify", "HEAD^{commit}"], cwd=source_dir, env=env)
            base_commit = head.decode().strip()
        _git(
            [
                "clone",
                "--bare",
                "--no-hardlinks",
                "--quiet",
                "--template=",
                "--",
                str(source_dir),
                str(partial),
            ],
            cwd=git_dir.parent,
            env=env,
        )
        env["GIT_DIR"] = str(partial)
        resolved = _git(
            ["rev-parse", "--verify", f"{base_commit}^{{commit}}"], cwd=partial, env=env
        )
        base = resolved.decode().strip()
        (partial / "info").mkdir(exist_ok=True)
        (partial / "info" / "attributes").write_text(PRIVATE_ATTRIBUTES, encoding="ascii")
        (partial / BASE_FILE).write_text(base + "\n", encoding="ascii")
        os.chmod(partial, 0o700)
        partial.rename(git_dir)
        return cls(git_dir, base, source_dir, path_value)

    def diff(self) -> bytes:
        """The work tree against the base commit, new untracked files included.

        Files the repository's .gitignore excludes are left out, as ``git add -A``
        leaves them out; symlinks are recorded as links, never followed.
        """
        with _index_lock:
            env = dict(
                self._env,
                GIT_INDEX_FILE=str(self.git_dir / INDEX_FILE),
                GIT_WORK_TREE=str(self.work_tree),
            )
            if not (self.git_dir / INDEX_FILE).exists():
                _git(["read-tree", self.base], cwd=self.work_tree, env=env)
            _git(["add", "--all", "--", "."], cwd=self.work_tree, env=env)
            return _git(
                [
                    "diff",
                    "--cached",
                    "--binary",
                    "--no-renames",
                    "--no-ext-diff",
                    "--no-textconv",
                    "--no-color",
                    "--src-prefix=a/",
                    "--dst-prefix=b/",
                    self.base,
                    "--",
                ],
                cwd=self.work_tree,
                env=env,
            )

    def export(self, tar_file: Path) -> None:
        """Write the base commit's tree as a tar file (for a pristine copy)."""
        _git(
            ["archive", "--format=tar", f"--output={tar_file}", self.base],
            cwd=self.git_dir,
            env=self._env,
        )


def count_patch_files(patch: bytes) -> int:
    return sum(1 for line in patch.splitlines() if line.startswith(b"diff --git "))
