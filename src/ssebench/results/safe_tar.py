"""A tar extractor for streams that are not trusted (spec, "Results").

The agent writes the archive volume, so its tar stream may be hostile. This reads the
stream itself, header by header, instead of handing it to tarfile, so that every byte
it buffers and every path it touches is bounded and checked:

- only regular files and directories are written; links, devices and FIFOs are
  skipped (and counted), never created;
- a name that is absolute or has a `..` component fails the extraction, as does a
  file where a directory is (or the reverse) and a path through a symbolic link: every
  directory is opened with O_NOFOLLOW relative to its parent's descriptor;
- no more than max_entries entries (headers, and the directories made along a member's
  path), max_bytes of member data (extended headers included, each of which is also
  capped at MAX_EXTENDED_HEADER and parsed in one pass), and max_depth components in a
  member's path;
- a file's or directory's mode keeps its read and execute bits and the owner's write
  bit: never group or other write, setuid, setgid or sticky;
- a directory's data is skipped, never held in memory; a negative mtime (a file from
  before 1970) is taken as 0;
- names it reports (skipped entries, errors) are escaped, so no control character of
  the agent's reaches the operator's terminal;
- a stream that ends early, or a header whose checksum is wrong, fails the extraction,
  and the file being written is removed.

It reads any iterable of bytes. The Kubernetes read-out
and the Docker backend's archive copy both unpack through it, with the same Limits
(settings: SSEBENCH_ARCHIVE_MAX_BYTES, SSEBENCH_ARCHIVE_MAX_FILES and
SSEBENCH_ARCHIVE_MAX_DEPTH; docs/security.md).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ssebench.errors import UserError

BLOCK = 512
MAX_BYTES = 2 * 1024**3
MAX_ENTRIES = 200_000
MAX_DEPTH = 128
# A path is at most 4096 bytes on Linux; this leaves room for pax's other records.
MAX_EXTENDED_HEADER = 64 * 1024
# Digits of a pax record's length, or of a pax size: enough for any real value.
_MAX_DIGITS = 20
# ExtractReport keeps this many skipped names (and counts them all).
MAX_SKIPPED_NAMES = 100
# Modes written: read and execute for all, write for the owner only.
_MODE_BITS = 0o755
_REGULAR = (b"0", b"\0", b"7")
_DIRECTORY = b"5"
_GNU_LONG_NAME = b"L"
_GNU_LONG_LINK = b"K"
_PAX = b"x"
_PAX_GLOBAL = b"g"
_SKIPPED_TYPES = {
    b"1": "hard link",
    b"2": "symbolic link",
    b"3": "character device",
    b"4": "block device",
    b"6": "FIFO",
}
_COPY_CHUNK = 1024 * 1024
_LOW_BYTES = bytes(range(128))


MAX_BYTES_VARIABLE = "SSEBENCH_ARCHIVE_MAX_BYTES"
MAX_FILES_VARIABLE = "SSEBENCH_ARCHIVE_MAX_FILES"
MAX_DEPTH_VARIABLE = "SSEBENCH_ARCHIVE_MAX_DEPTH"


@dataclass(frozen=True)
class Limits:
    """What one extraction may make: bytes of data, entries (files, directories and
    the stream's other headers), and directories in a path."""

    max_bytes: int = MAX_BYTES
    max_entries: int = MAX_ENTRIES
    max_depth: int = MAX_DEPTH

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Limits:
        """The defaults, each changed by its variable when set. Raises UserError."""
        environ = os.environ if environ is None else environ

        def setting(variable: str, default: int, what: str) -> int:
            text = environ.get(variable, "").strip()
            if not text:
                return default
            if not text.isdigit() or int(text) < 1:
                raise UserError(f"{variable} must be a positive whole number of {what}")
            return int(text)

        return cls(
            max_bytes=setting(MAX_BYTES_VARIABLE, MAX_BYTES, "bytes"),
            max_entries=setting(MAX_FILES_VARIABLE, MAX_ENTRIES, "files"),
            max_depth=setting(MAX_DEPTH_VARIABLE, MAX_DEPTH, "directories"),
        )


class UnsafeArchiveError(Exception):
    """The stream broke a rule: the extraction stopped, and what it wrote stays in dest."""


@dataclass
class ExtractReport:
    files: int = 0
    directories: int = 0
    bytes: int = 0
    # The first MAX_SKIPPED_NAMES of the skipped entries, escaped: 'name' (what it is).
    skipped: list[str] = field(default_factory=list)
    skipped_total: int = 0

    def skip(self, description: str) -> None:
        self.skipped_total += 1
        if len(self.skipped) < MAX_SKIPPED_NAMES:
            self.skipped.append(description)


def shown(name: str) -> str:
    """name quoted, with every control or non-printable character escaped (repr's
    rules), cut to 200 characters: safe to print to a terminal."""
    return repr(name[:200])


class _Reader:
    """Exact reads over an iterable of chunks."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks: Iterator[bytes] = iter(chunks)
        self._buffer = bytearray()

    def read(self, size: int) -> bytes:
        """Up to size bytes; fewer only at the end of the stream."""
        while len(self._buffer) < size:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            self._buffer += chunk
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    def read_exact(self, size: int, what: str) -> bytes:
        data = self.read(size)
        if len(data) != size:
            raise UnsafeArchiveError(f"the stream ends inside {what}")
        return data


def _number(field_bytes: bytes, what: str, *, negative_as_zero: bool = False) -> int:
    """An octal header field, or GNU's base-256 form (first byte 0x80 or 0xff, the
    latter negative: two's complement over the whole field)."""
    if field_bytes and field_bytes[0] in (0x80, 0xFF):
        if field_bytes[0] == 0xFF:
            if negative_as_zero:
                return 0
            raise UnsafeArchiveError(f"a negative {what} in a header")
        return int.from_bytes(field_bytes[1:], "big")
    text = field_bytes.split(b"\0", 1)[0].strip(b" ")
    if not text:
        return 0
    try:
        return int(text, 8)
    except ValueError:
        raise UnsafeArchiveError(f"a header with a malformed {what}") from None


def _checksum_ok(header: bytes) -> bool:
    stored = _number(header[148:156], "checksum")
    blanked = header[:148] + b" " * 8 + header[156:]
    unsigned = sum(blanked)
    # Each byte over 127 counts 256 less as a signed char; counted in C, not per byte.
    signed = unsigned - 256 * len(blanked.translate(None, _LOW_BYTES))
    return stored in (unsigned, signed)


def _parse_pax(data: bytes) -> dict[str, bytes]:
    """'<length> <key>=<value>\n' records, in one pass over data (each record's bytes
    are looked at a bounded number of times)."""
    records: dict[str, bytes] = {}
    position = 0
    while position < len(data):
        if data[position] == 0:
            # Padding: NULs to the end, looked at once.
            if data.count(0, position) != len(data) - position:
                raise UnsafeArchiveError("a malformed extended header")
            break
        space = data.find(b" ", position, position + _MAX_DIGITS + 1)
        digits = data[position:space]
        if space < 0 or not digits.isdigit():
            raise UnsafeArchiveError("a malformed extended header")
        length = int(digits)
        end = position + length
        if length <= 0 or end > len(data) or data[end - 1 : end] != b"\n":
            raise UnsafeArchiveError("a malformed extended header")
        key, equals, value = data[space + 1 : end - 1].partition(b"=")
        if not equals:
            raise UnsafeArchiveError("a malformed extended header")
        records[key.decode("utf-8", "replace")] = value
        position = end
    return records


def _parts(raw_name: bytes, max_depth: int) -> list[str]:
    """The path components of a member name, or UnsafeArchiveError."""
    if b"\0" in raw_name:
        raise UnsafeArchiveError("a member name with a NUL byte")
    name = raw_name.decode("utf-8", "surrogateescape")
    if name.startswith("/"):
        raise UnsafeArchiveError(f"an absolute member name: {shown(name)}")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchiveError(f"a member name with '..': {shown(name)}")
    if len(parts) > max_depth:
        raise UnsafeArchiveError(f"a member name deeper than {max_depth} directories")
    return parts


def _pax_size(value: bytes) -> int:
    if len(value) > _MAX_DIGITS or not value.isdigit():
        raise UnsafeArchiveError("a malformed size in an extended header")
    return int(value)


class _Target:
    """dest, opened once; every path below it is walked with O_NOFOLLOW.

    It counts entries, the stream's headers and the directories it makes along a
    member's path alike, against max_entries."""

    def __init__(self, dest: Path, max_entries: int) -> None:
        self.root = os.open(dest, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self.max_entries = max_entries
        self.entries = 0
        self._last: tuple[tuple[str, ...], int] | None = None

    def count_entry(self) -> None:
        self.entries += 1
        if self.entries > self.max_entries:
            raise UnsafeArchiveError(f"more than {self.max_entries} entries")

    def close(self) -> None:
        if self._last is not None:
            os.close(self._last[1])
        os.close(self.root)

    def _make(self, name: str, parent: int) -> None:
        """A directory on a member's path, counted as an entry when it is new."""
        try:
            os.mkdir(name, 0o755, dir_fd=parent)
        except FileExistsError:
            return
        try:
            self.count_entry()
        except UnsafeArchiveError:
            os.rmdir(name, dir_fd=parent)
            raise

    @contextlib.contextmanager
    def directory(self, parts: list[str], *, create: bool) -> Iterator[int]:
        """A descriptor of the directory parts, made when missing (if create).

        The last one walked to is kept open: members come in tree order, so most are
        in the directory of the one before. That is safe because nothing else writes
        into dest, and the extraction never removes or renames a directory."""
        key = tuple(parts)
        if self._last is not None and self._last[0] == key:
            yield self._last[1]
            return
        descriptor = os.dup(self.root)
        try:
            for part in parts:
                if create:
                    self._make(part, descriptor)
                try:
                    child = os.open(
                        part,
                        os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                        dir_fd=descriptor,
                    )
                except OSError as error:
                    if error.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise UnsafeArchiveError(
                            f"{shown('/'.join(parts))} goes through something that is not a "
                            "directory (a file or a link)"
                        ) from None
                    raise
                os.close(descriptor)
                descriptor = child
        except BaseException:
            os.close(descriptor)
            raise
        if self._last is not None:
            os.close(self._last[1])
        self._last = (key, descriptor)
        yield descriptor


def _existing(name: str, directory: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return None


def extract(
    chunks: Iterable[bytes],
    dest: Path,
    limits: Limits = Limits(),
) -> ExtractReport:
    """Unpack the tar stream chunks into dest (an existing directory).

    Raises UnsafeArchiveError when the stream breaks a rule; what it wrote before stays.
    """
    max_bytes, max_depth = limits.max_bytes, limits.max_depth
    reader = _Reader(chunks)
    target = _Target(dest, limits.max_entries)
    report = ExtractReport()
    data_bytes = 0
    long_name: bytes | None = None
    pax: dict[str, bytes] = {}

    def count_data(size: int) -> None:
        nonlocal data_bytes
        data_bytes += size
        if data_bytes > max_bytes:
            raise UnsafeArchiveError(f"more than {max_bytes} bytes of data")

    try:
        while True:
            header = reader.read(BLOCK)
            if not header:
                raise UnsafeArchiveError("the stream ends without the end-of-archive marker")
            if len(header) < BLOCK:
                raise UnsafeArchiveError("the stream ends inside a header")
            if header == bytes(BLOCK):
                # One zero block is the end for GNU tar too; what follows is padding.
                return report
            target.count_entry()
            if not _checksum_ok(header):
                raise UnsafeArchiveError("a header with a wrong checksum")
            kind = header[156:157]
            size = _number(header[124:136], "size")
            if "size" in pax and kind not in (_PAX, _PAX_GLOBAL):
                size = _pax_size(pax["size"])
            if size < 0:
                raise UnsafeArchiveError("a negative size")
            padded = -(-size // BLOCK) * BLOCK
            count_data(size)

            if kind in (_GNU_LONG_NAME, _GNU_LONG_LINK, _PAX, _PAX_GLOBAL):
                if size > MAX_EXTENDED_HEADER:
                    raise UnsafeArchiveError("an extended header that is too large")
                data = reader.read_exact(padded, "an extended header")[:size]
                if kind == _GNU_LONG_NAME:
                    long_name = data.split(b"\0", 1)[0]
                elif kind == _PAX:
                    pax = _parse_pax(data)
                continue

            name = header[0:100].split(b"\0", 1)[0]
            if header[257:265] == b"ustar\x0000" and header[345:500].strip(b"\0"):
                name = header[345:500].split(b"\0", 1)[0] + b"/" + name
            if long_name is not None:
                name = long_name
            if "path" in pax:
                name = pax["path"]
            long_name, pax = None, {}
            mode = _number(header[100:108], "mode")
            mtime = _number(header[136:148], "mtime", negative_as_zero=True)
            parts = _parts(name, max_depth)

            if kind in _REGULAR:
                if not parts:
                    raise UnsafeArchiveError("a file without a name")
                with _os_errors(parts):
                    _write_file(target, parts, reader, size, padded, mode, mtime)
                report.files += 1
                report.bytes += size
            elif kind == _DIRECTORY:
                with _os_errors(parts):
                    _make_directory(target, parts, mode)
                _skip(reader, padded)  # a directory has no data: never held
                report.directories += 1
            else:
                what = _SKIPPED_TYPES.get(kind, f"entry of type {kind!r}")
                report.skip(f"{shown('/'.join(parts))} ({what})")
                _skip(reader, padded)
    finally:
        target.close()


@contextlib.contextmanager
def _os_errors(parts: list[str]) -> Iterator[None]:
    """A member the file system refuses (a name too long, a full disk) ends the
    extraction with UnsafeArchiveError, like any other member that cannot be written."""
    try:
        yield
    except OSError as error:
        raise UnsafeArchiveError(
            f"cannot write {shown('/'.join(parts))}: {error.strerror}"
        ) from None


def _skip(reader: _Reader, padded: int) -> None:
    while padded:
        step = min(padded, _COPY_CHUNK)
        reader.read_exact(step, "a member's data")
        padded -= step


def _make_directory(target: _Target, parts: list[str], mode: int) -> None:
    if not parts:
        return  # the archive's root: dest itself
    with target.directory(parts[:-1], create=True) as parent:
        found = _existing(parts[-1], parent)
        if found is not None and not stat.S_ISDIR(found.st_mode):
            raise UnsafeArchiveError(f"a directory would replace {shown('/'.join(parts))}")
        if found is None:
            os.mkdir(parts[-1], 0o700, dir_fd=parent)
    with target.directory(parts, create=False) as descriptor:
        # Always usable by the runner: owner rwx; never group or other write, setuid,
        # setgid or sticky.
        os.fchmod(descriptor, (mode & _MODE_BITS) | 0o700)


def _write_file(
    target: _Target,
    parts: list[str],
    reader: _Reader,
    size: int,
    padded: int,
    mode: int,
    mtime: int,
) -> None:
    with target.directory(parts[:-1], create=True) as parent:
        name = parts[-1]
        found = _existing(name, parent)
        if found is not None:
            if stat.S_ISDIR(found.st_mode):
                raise UnsafeArchiveError(
                    f"a file would replace the directory {shown('/'.join(parts))}"
                )
            # A file (the runner's skeleton, an earlier member) or a link: replaced, never
            # written through.
            os.unlink(name, dir_fd=parent)
        descriptor = os.open(
            name,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
            dir_fd=parent,
        )
        complete = False
        try:
            remaining = size
            while remaining:
                chunk = reader.read_exact(min(remaining, _COPY_CHUNK), "a file's data")
                view = memoryview(chunk)
                while view:
                    view = view[os.write(descriptor, view) :]
                remaining -= len(chunk)
            reader.read_exact(padded - size, "a file's padding")
            os.fchmod(descriptor, (mode & _MODE_BITS) | 0o600)
            with contextlib.suppress(OSError, OverflowError):
                os.utime(descriptor, (mtime, mtime))
            complete = True
        finally:
            os.close(descriptor)
            if not complete:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=parent)
