"""Scratch copies of the task's tree, in which task commands run as the runner user.

A copy is always the base commit's tree with a patch applied, never a copy of the
agent's files, so what the daemon's tools build is exactly what grading will build,
and nothing the agent left outside its patch (files, links, fifos) is ever read.
Files reach the runner only through file descriptors that root opened: the runner
cannot read the root-only places they come from.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import BinaryIO

from .accounts import Account, make_directory
from .processes import Child, Completed, capture, sweep_user
from .repository import BaseRepository, git_environment


class Workspace:
    def __init__(
        self,
        root: Path,
        *,
        runner: Account,
        repository: BaseRepository,
        private_dir: Path,
        environment: Mapping[str, str],
        step_timeout: float,
    ) -> None:
        self.root = root
        self.tree = root / "tree"
        self.temp = root / "tmp"
        self.runner = runner
        self.repository = repository
        self.private_dir = private_dir
        # The case image's environment (toolchain variables) plus PATH.
        self._environment = dict(environment)
        self.step_timeout = step_timeout
        self._lock = threading.Lock()
        self._current: Child | None = None
        self._closed = False

    def command_environment(self) -> dict[str, str]:
        """The clean environment of a task command: the given environment (the
        image's, which holds no SSE_* variable) and the runner's identity."""
        env = dict(self._environment)
        env.update(
            HOME=str(self.runner.home),
            USER=self.runner.name,
            LOGNAME=self.runner.name,
            LANG="C.UTF-8",
            TMPDIR=str(self.temp),
        )
        env.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        return env

    def reset(self) -> None:
        """An empty tree and temp directory owned by the runner, nothing of earlier runs."""
        _remove(self.root)
        make_directory(self.root, None, 0o711)
        make_directory(self.tree, self.runner, 0o700)
        make_directory(self.temp, self.runner, 0o700)

    def extract_base(self, sink: Callable[[bytes], None] | None = None) -> Completed:
        tar_file = self.private_dir / f"{self.root.name}-base.tar"
        try:
            self.repository.export(tar_file)
            return self._extract(tar_file, sink)
        finally:
            tar_file.unlink(missing_ok=True)

    def overlay(self, directory: Path, sink: Callable[[bytes], None] | None = None) -> Completed:
        """Copy a root-only directory (the hidden tests) over the tree, as the runner.

        Extracting as the runner means a link the agent's build planted in the tree
        can at most lead the copy to where the runner may write anyway.
        """
        tar_file = self.private_dir / f"{self.root.name}-overlay.tar"
        try:
            code, _, stderr = capture(
                ["tar", "-c", "-f", str(tar_file), "-C", str(directory), "."],
                cwd=self.private_dir,
                env={"PATH": self.command_environment()["PATH"], "LC_ALL": "C"},
                timeout=self.step_timeout,
            )
            if code != 0:
                raise OSError(f"tar -c of the overlay exited {code}: {stderr[-500:]!r}")
            return self._extract(tar_file, sink)
        finally:
            tar_file.unlink(missing_ok=True)

    def _extract(self, tar_file: Path, sink: Callable[[bytes], None] | None) -> Completed:
        with open(tar_file, "rb") as archive:
            return self._run(
                ["tar", "-x", "-f", "-", "-C", str(self.tree)], stdin=archive, sink=sink
            )

    def apply(self, patch: bytes, sink: Callable[[bytes], None] | None = None) -> Completed:
        """Apply a git patch to the tree, as the runner. An empty patch applies trivially."""
        if not patch.strip():
            return Completed(exit_code=0, timed_out=False, seconds=0.0, output=b"")
        env = self.command_environment()
        env.update(git_environment(env["PATH"], self.runner.home))
        # The tree is no repository; never let git find one above it.
        env["GIT_CEILING_DIRECTORIES"] = str(self.root)
        return self._run(
            ["git", "apply", "--whitespace=nowarn", "--verbose", "-"],
            stdin=patch,
            sink=sink,
            env=env,
        )

    def run_command(self, command: str, sink: Callable[[bytes], None] | None = None) -> Completed:
        return self._run(["/bin/sh", "-c", command], sink=sink)

    def _run(
        self,
        argv: list[str],
        *,
        stdin: bytes | BinaryIO | None = None,
        sink: Callable[[bytes], None] | None,
        env: Mapping[str, str] | None = None,
    ) -> Completed:
        with self._lock:
            if self._closed:
                return Completed(exit_code=137, timed_out=False, seconds=0.0, output=b"closed\n")
            child = Child(
                argv,
                account=self.runner,
                cwd=self.tree,
                env=env if env is not None else self.command_environment(),
                stdin=stdin,
                sink=sink,
            )
            self._current = child
        try:
            return child.run_to_end(self.step_timeout)
        finally:
            with self._lock:
                self._current = None
            # Whatever the command started outside its process group goes too.
            sweep_user(self.runner)

    def close(self) -> None:
        """Kill the running command, if any, and refuse every further one.

        For good: a tool call that is between two commands when the agent exits must
        not start the next one while grading runs as the same user.
        """
        with self._lock:
            self._closed = True
            child = self._current
        if child is not None:
            child.terminate(grace=1.0)
        sweep_user(self.runner)


def snapshot_home(runner: Account, template: Path) -> None:
    """Keep a root-only copy of the runner's home as the image left it.

    Task commands run as the runner and can write to its home, so a command the
    agent started through the daemon could plant start-up files there (a Python
    usercustomize, a shell rc) that would run during grading. Grading restores this
    copy first. Does nothing when the runner is the current user (tests).
    """
    if runner.is_current or template.exists():
        return
    template.parent.mkdir(parents=True, exist_ok=True)
    if runner.home.is_dir():
        _copy_preserving(runner.home, template)
    else:
        template.mkdir(mode=0o700)
        os.chown(template, runner.uid, runner.gid)


def restore_home(runner: Account, template: Path) -> None:
    if runner.is_current or not template.is_dir() or runner.home == Path("/"):
        return
    sweep_user(runner)
    _remove(runner.home)
    _copy_preserving(template, runner.home)


def _remove(path: Path) -> None:
    """Remove a tree, or fail: a half-removed tree would leak into the next copy."""
    if path.is_symlink():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def _copy_preserving(source: Path, destination: Path) -> None:
    code, _, stderr = capture(
        ["cp", "-a", "--no-target-directory", str(source), str(destination)],
        cwd=Path("/"),
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
        timeout=600,
    )
    if code != 0:
        raise OSError(f"cp -a exited {code}: {stderr[-500:]!r}")
