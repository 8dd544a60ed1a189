"""Tar streams for the tests of the untrusted-tar extractor (src/ssebench/results/safe_tar.py):
well-formed ones through `tarfile`, hand-made headers and pax records for what
`tarfile` would refuse to write, and a snapshot of a tree to show that nothing outside
the destination changed."""

from __future__ import annotations

import io
import os
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path

from ssebench.results.safe_tar import BLOCK

END = bytes(2 * BLOCK)


def tar_bytes(
    *members: tuple[tarfile.TarInfo, bytes | None], fmt: int = tarfile.GNU_FORMAT
) -> bytes:
    """A whole tar stream of members (header, and data or None), as tarfile writes it."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as archive:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def tar_info(name: str, kind: bytes = tarfile.REGTYPE, **fields: object) -> tarfile.TarInfo:
    """A header of kind, mode 0644, with the other fields given."""
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = 0o644
    for key, value in fields.items():
        setattr(info, key, value)
    return info


def with_checksum(block: bytearray) -> bytes:
    """The header block with its checksum field computed."""
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block)
    return bytes(block)


def pax_record(key: bytes, value: bytes) -> bytes:
    """'<length> key=value\\n', its length counting its own digits."""
    rest = b" " + key + b"=" + value + b"\n"
    length = len(rest) + 1
    while len(str(length)) + len(rest) != length:
        length += 1
    return b"%d%s" % (length, rest)


def padded(data: bytes) -> bytes:
    """data padded with NULs to whole blocks."""
    return data + bytes(-len(data) % BLOCK)


def chunks(data: bytes, size: int = 700) -> Iterator[bytes]:
    """data in pieces of size, as a pipe delivers it."""
    for start in range(0, len(data), size):
        yield data[start : start + size]


def snapshot(root: Path, skip: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every path under root except skip's subtree: its mode and content or target."""
    found: dict[str, tuple[int, bytes | str]] = {}
    for path in sorted(root.rglob("*")):
        if path == skip or skip in path.parents:
            continue
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            found[str(path)] = (info.st_mode, os.readlink(path))
        elif stat.S_ISREG(info.st_mode):
            found[str(path)] = (info.st_mode, path.read_bytes())
        else:
            found[str(path)] = (info.st_mode, "")
    return found
