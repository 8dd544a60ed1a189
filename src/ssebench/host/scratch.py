"""Scratch folders on this host (image build contexts), and removing abandoned ones.

A scratch folder is removed by the `with` block that made it, also on SIGINT and
SIGTERM (the CLI turns both into KeyboardInterrupt). Only a SIGKILL (or a crash of the
machine) can skip that, so each folder's name carries the ID of the process that made
it, ssebench-<kind>-pid<N>-<random>, and `ssebench runs prune` removes the folders of
this user whose process is gone. A recycled process ID only keeps a folder longer.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ssebench.host.processes import process_exists

_NAME = re.compile(r"^ssebench-[a-z0-9-]+-pid(\d+)-[A-Za-z0-9_]+$")


def _root(root: Path | None) -> Path:
    return root if root is not None else Path(tempfile.gettempdir())


@contextmanager
def scratch_folder(kind: str, root: Path | None = None) -> Iterator[Path]:
    """A new folder ssebench-<kind>-pid<this process>-<random>, removed on leaving."""
    with tempfile.TemporaryDirectory(
        prefix=f"ssebench-{kind}-pid{os.getpid()}-", dir=_root(root)
    ) as folder:
        yield Path(folder)


def abandoned_folders(root: Path | None = None) -> list[Path]:
    """This user's scratch folders whose process no longer exists on this machine."""
    found = []
    for path in sorted(_root(root).glob("ssebench-*-pid*-*")):
        match = _NAME.match(path.name)
        if match is None:
            continue
        try:
            status = path.lstat()
        except OSError:
            continue
        if not path.is_dir() or path.is_symlink() or status.st_uid != os.geteuid():
            continue
        if not process_exists(int(match.group(1))):
            found.append(path)
    return found


def remove_abandoned_folders(root: Path | None = None) -> list[Path]:
    """Remove abandoned_folders(); return those that are gone now."""
    removed = []
    for path in abandoned_folders(root):
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(path)
    return removed
