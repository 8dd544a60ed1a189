"""Reading a run directory's files on the host, which the agent may have written.

On Docker the agent owns archive/ on the host (it is mounted at /tmp/sse-archive), and
on every backend what it leaves there is copied out. So any name under a run directory
may be a symbolic link (to /dev/zero, /etc/passwd, /proc/self/environ), a FIFO that
blocks its reader forever, a device, a socket, or a huge or sparse file. Every host
reader of a run directory (the web UI, `ssebench runs`, `ssebench eval`, the runner's
read of result.json) goes through this module, which:

- walks from the run directory one component at a time (openat), with O_NOFOLLOW on
  each, so no link is ever followed, not even in a directory on the way;
- looks at a name (fstatat, not following) before it opens it, and opens only regular
  files and directories, with O_NONBLOCK so that a name swapped for a FIFO in between
  cannot block, and checks again on the open descriptor (fstat);
- reads at most a cap of bytes, and says when it cut;
- lists at most a cap of entries of a directory.

The caps are settings (ReadLimits.from_environment, docs/security.md).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ssebench.errors import UserError

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
_CHUNK = 1 << 20

# name -> (environment variable, default, what it limits)
LIMIT_SETTINGS: dict[str, tuple[str, int, str]] = {
    "file_bytes": (
        "SSEBENCH_READ_FILE_BYTES",
        2 * 1024 * 1024,
        "the most of a log or patch that is shown (its end, for a log)",
    ),
    "json_bytes": (
        "SSEBENCH_READ_JSON_BYTES",
        1024 * 1024,
        "the largest summary.json or result.json that is read",
    ),
    "dialog_bytes": (
        "SSEBENCH_READ_DIALOG_BYTES",
        16 * 1024 * 1024,
        "the most of archive/dialog.jsonl that is read",
    ),
    "line_bytes": (
        "SSEBENCH_READ_LINE_BYTES",
        512 * 1024,
        "the longest dialog line that is parsed; a longer one is shown as malformed",
    ),
    "list_entries": (
        "SSEBENCH_READ_LIST_ENTRIES",
        1000,
        "the most entries of a directory that are listed",
    ),
}


class UnsafeFileError(OSError):
    """A name that is not a regular file or directory, or a link on the way; never read."""


@dataclass(frozen=True)
class ReadLimits:
    file_bytes: int = LIMIT_SETTINGS["file_bytes"][1]
    json_bytes: int = LIMIT_SETTINGS["json_bytes"][1]
    dialog_bytes: int = LIMIT_SETTINGS["dialog_bytes"][1]
    line_bytes: int = LIMIT_SETTINGS["line_bytes"][1]
    list_entries: int = LIMIT_SETTINGS["list_entries"][1]

    @classmethod
    def from_environment(cls, environment: Mapping[str, str]) -> ReadLimits:
        """The caps, each from its variable when set. Raises UserError on a bad value."""
        values: dict[str, int] = {}
        for name, (variable, default, _) in LIMIT_SETTINGS.items():
            raw = environment.get(variable, "").strip()
            if not raw:
                values[name] = default
                continue
            try:
                values[name] = int(raw)
            except ValueError:
                values[name] = 0
            if values[name] < 1:
                raise UserError(
                    f"{variable}={raw!r} is not a positive whole number; "
                    f"unset it for the default {default}"
                )
        return cls(**values)


@functools.cache
def limits() -> ReadLimits:
    """The caps of this process, read once from its environment."""
    return ReadLimits.from_environment(os.environ)


@dataclass(frozen=True)
class FileContent:
    data: bytes
    size: int  # the file's size; more than len(data) when it was cut
    truncated: bool


@dataclass(frozen=True)
class Entry:
    name: str
    kind: str  # file, directory, link, fifo, socket, device, other
    size: int | None  # regular files only
    setuid: bool


@dataclass(frozen=True)
class Listing:
    entries: list[Entry]
    truncated: bool  # the directory has more than were listed


# A name longer than this is shown cut, with how many characters were left out.
SHOWN_NAME_CHARS = 300


def shown_name(name: str) -> str:
    """A name the agent chose (an archive entry), as text any page or terminal shows
    whole: bytes that are not UTF-8 (os.scandir's surrogate escapes) as \\xNN, control
    characters as \\n, \\t or \\xNN, a backslash doubled so that the escapes are
    unambiguous, and a very long name cut."""
    shown = []
    for char in name:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8
            shown.append(f"\\x{code - 0xDC00:02x}")
        elif char == "\\":
            shown.append("\\\\")
        elif char in "\n\t\r":
            shown.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[char])
        elif code < 0x20 or code == 0x7F or 0x80 <= code < 0xA0 or 0xD800 <= code <= 0xDFFF:
            shown.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            shown.append(char)
    text = "".join(shown)
    if len(text) > SHOWN_NAME_CHARS:
        left_out = len(text) - SHOWN_NAME_CHARS
        text = f"{text[:SHOWN_NAME_CHARS]}... ({left_out} more characters)"
    return text


def _parts(relative: str | PurePosixPath) -> list[str]:
    parts = [part for part in PurePosixPath(relative).parts if part not in ("", ".")]
    if not parts or any(part in ("..", "/") for part in parts):
        raise UnsafeFileError(f"not a name inside the run directory: {str(relative)!r}")
    return parts


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "other"


def _open_checked(name: str, dir_fd: int | None, *, directory: bool) -> int:
    """Open one component without following it, only if it is what we expect."""
    expected = stat.S_ISDIR if directory else stat.S_ISREG
    before = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if not expected(before.st_mode):
        raise UnsafeFileError(f"{name!r} is a {_kind(before.st_mode)}, not read")
    fd = os.open(name, _DIRECTORY_FLAGS if directory else _FILE_FLAGS, dir_fd=dir_fd)
    after = os.fstat(fd)
    if not expected(after.st_mode) or (after.st_dev, after.st_ino) != (
        before.st_dev,
        before.st_ino,
    ):
        os.close(fd)
        raise UnsafeFileError(f"{name!r} changed while it was opened, not read")
    return fd


def open_run_directory(run_dir: Path) -> int:
    """A descriptor of the run directory itself; its last component is never a link."""
    parent = os.open(run_dir.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return _open_checked(run_dir.name, parent, directory=True)
    finally:
        os.close(parent)


@contextlib.contextmanager
def _directory(run_dir: Path, parts: list[str]) -> Iterator[int]:
    """The directory run_dir/parts..., reached without following any link."""
    current = open_run_directory(run_dir)
    try:
        for part in parts:
            inner = _open_checked(part, current, directory=True)
            os.close(current)
            current = inner
        yield current
    finally:
        os.close(current)


@contextlib.contextmanager
def _opened(run_dir: Path, relative: str | PurePosixPath, *, directory: bool) -> Iterator[int]:
    parts = _parts(relative)
    with _directory(run_dir, parts[:-1]) as parent:
        fd = _open_checked(parts[-1], parent, directory=directory)
    try:
        yield fd
    finally:
        os.close(fd)


def read_file(
    run_dir: Path, relative: str | PurePosixPath, limit: int, *, tail: bool = False
) -> FileContent:
    """At most limit bytes of a regular file under run_dir: its start, or with tail its end.

    Raises FileNotFoundError, UnsafeFileError (a link, FIFO, device, ...) or OSError.
    """
    with _opened(run_dir, relative, directory=False) as fd:
        size = os.fstat(fd).st_size
        start = max(0, size - limit) if tail else 0
        chunks: list[bytes] = []
        wanted = limit
        while wanted > 0:
            chunk = os.pread(fd, min(wanted, _CHUNK), start)
            if not chunk:
                break
            chunks.append(chunk)
            start += len(chunk)
            wanted -= len(chunk)
        data = b"".join(chunks)
        # A file that grows while it is read is cut too, though its size said otherwise.
        truncated = size > limit or (wanted == 0 and os.pread(fd, 1, start) != b"")
        return FileContent(data, max(size, len(data)), truncated)


def read_text(
    run_dir: Path, relative: str | PurePosixPath, *, limit: int | None = None, tail: bool = False
) -> tuple[str, bool, str | None]:
    """(text, cut, problem): the file as text; problem says why nothing could be read."""
    try:
        content = read_file(run_dir, relative, limit or limits().file_bytes, tail=tail)
    except FileNotFoundError:
        return "", False, None
    except UnsafeFileError as error:
        return "", False, str(error)
    except OSError as error:
        return "", False, f"not readable: {error.strerror or type(error).__name__}"
    return content.data.decode("utf-8", errors="replace"), content.truncated, None


def read_json_object(
    run_dir: Path, relative: str | PurePosixPath, *, limit: int | None = None
) -> dict[str, Any] | None:
    """A JSON object file under run_dir, or None: missing, unsafe, too large or not one."""
    cap = limit or limits().json_bytes
    try:
        content = read_file(run_dir, relative, cap)
    except OSError:
        return None
    if content.truncated:
        return None
    try:
        data = json.loads(content.data.decode("utf-8"))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def is_regular_file(run_dir: Path, relative: str | PurePosixPath) -> bool:
    """Whether the name is a regular file reached without a link (nothing is opened)."""
    try:
        parts = _parts(relative)
        with _directory(run_dir, parts[:-1]) as parent:
            found = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(found.st_mode)


def list_directory(
    run_dir: Path, relative: str | PurePosixPath, *, limit: int | None = None
) -> Listing:
    """At most limit entries of a directory under run_dir, in the order the system gives,
    each described without being followed or opened. Raises OSError."""
    cap = limit or limits().list_entries
    with _opened(run_dir, relative, directory=True) as fd:
        entries: list[Entry] = []
        truncated = False
        with os.scandir(fd) as found:
            for item in found:
                if len(entries) >= cap:
                    truncated = True
                    break
                try:
                    details = item.stat(follow_symlinks=False)
                except OSError:
                    continue  # removed while listed
                mode = details.st_mode
                entries.append(
                    Entry(
                        name=item.name,
                        kind=_kind(mode),
                        size=details.st_size if stat.S_ISREG(mode) else None,
                        setuid=bool(mode & (stat.S_ISUID | stat.S_ISGID)),
                    )
                )
        return Listing(entries, truncated)
