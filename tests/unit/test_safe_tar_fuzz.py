"""Fuzzing the extractor with hostile tar streams (hypothesis, bounded to ~15 s).

Streams are built header by header, so they hold what tarfile would never write:
links, devices and FIFOs, names with `..` or a leading `/`, deep paths, sizes far past
the caps or larger than the data that follows, negative mtimes, pax records (path,
size, linkpath, junk) and GNU long names, then mutated by flipped bytes and cuts, and
fed in chunks of any size. Whatever the stream, the extraction:

- changes nothing outside the target directory, and never writes through a link;
- leaves only regular files and directories in it, none setuid, setgid, sticky, or
  writable by group or other;
- stays within its caps: entries made, bytes written, and path depth;
- fails, when it fails, with UnsafeArchiveError only.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ssebench.results.safe_tar import BLOCK, Limits, UnsafeArchiveError, extract
from tests.unit.tar_streams import chunks, padded, pax_record, snapshot, with_checksum

MAX_BYTES = 20_000
MAX_ENTRIES = 30
MAX_DEPTH = 6
LIMITS = Limits(max_bytes=MAX_BYTES, max_entries=MAX_ENTRIES, max_depth=MAX_DEPTH)
FUZZ_SETTINGS = settings(
    deadline=5000,  # per example; an extraction takes milliseconds
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

COMPONENTS = ["a", "b", "..", ".", "", "archive", "planted-link", "é", "\x1b[2J", "c" * 120]
# Regular (three spellings), directory, and everything that must never be created.
KINDS = [b"0", b"\0", b"7", b"5", b"1", b"2", b"3", b"4", b"6", b"Z", b"S"]


def number(value: int, width: int) -> bytes:
    """value as tar writes it: octal when it fits, else GNU base-256 (two's complement
    when negative)."""
    if 0 <= value < 8 ** (width - 1):
        return b"%0*o\0" % (width - 1, value)
    if value >= 0:
        return b"\x80" + min(value, 256 ** (width - 1) - 1).to_bytes(width - 1, "big")
    return (256**width + value).to_bytes(width, "big")


def raw_header(
    name: bytes, kind: bytes, size: int, mode: int, mtime: int, linkname: bytes = b""
) -> bytes:
    block = bytearray(BLOCK)
    block[0:100] = name[:100].ljust(100, b"\0")
    block[100:108] = number(mode, 8)
    block[108:116] = number(1000, 8)
    block[116:124] = number(1000, 8)
    block[124:136] = number(size, 12)
    block[136:148] = number(mtime, 12)
    block[156:157] = kind
    block[157:257] = linkname[:100].ljust(100, b"\0")
    block[257:265] = b"ustar  \0"
    return with_checksum(block)


names = st.lists(st.sampled_from(COMPONENTS), min_size=1, max_size=10).map("/".join)
hostile_names = st.one_of(
    names,
    names.map(lambda name: "/" + name),
    st.integers(1, 40).map(lambda depth: "d/" * depth + "f"),
).map(lambda name: name.encode("utf-8"))
sizes = st.one_of(
    st.integers(0, 600),
    st.integers(0, 3 * MAX_BYTES),
    st.sampled_from([8**11 - 1, 2**40, 3 * 1024**3, -1]),
)
pax_records = st.lists(
    st.one_of(
        st.tuples(st.just(b"path"), hostile_names),
        st.tuples(st.just(b"linkpath"), hostile_names),
        st.tuples(st.just(b"size"), st.one_of(st.integers(0, 10**6).map(str), st.text())).map(
            lambda pair: (pair[0], pair[1].encode("utf-8", "replace"))
        ),
        st.tuples(st.binary(max_size=8), st.binary(max_size=40)),
    ),
    max_size=4,
)


# Built once: a strategy made inside a draw is validated again at every draw.
kinds = st.sampled_from(KINDS)
modes = st.one_of(st.integers(0, 0o7777), st.just(0o4755))
mtimes = st.one_of(st.integers(0, 2**33), st.integers(-(2**40), -1))
extended_headers = st.sampled_from(["none", "pax", "gnu"])
data_lengths = st.one_of(st.none(), st.integers(0, 2000))
pax_padding = st.integers(0, 30)
linknames = st.one_of(st.just(b""), hostile_names)
flips = st.lists(st.tuples(st.integers(0), st.integers(1, 255)), max_size=3)


@st.composite
def entry(draw: st.DrawFn) -> bytes:
    """One member: optional pax or GNU long-name header, its header, then its data,
    which may be shorter or longer than declared."""
    kind, name, size = draw(kinds), draw(hostile_names), draw(sizes)
    data_length = draw(data_lengths)
    data_length = min(max(size, 0) if data_length is None else data_length, 4 * MAX_BYTES)
    prefix = b""
    extended = draw(extended_headers)
    if extended == "pax":
        body = b"".join(pax_record(key, value) for key, value in draw(pax_records))
        body += bytes(draw(pax_padding))
        prefix = raw_header(b"PaxHeader", b"x", len(body), 0o644, 0) + padded(body)
    elif extended == "gnu":
        long_name = draw(hostile_names) + b"\0"
        prefix = raw_header(b"././@LongLink", b"L", len(long_name), 0o644, 0) + padded(long_name)
    member = raw_header(name, kind, size, draw(modes), draw(mtimes), draw(linknames))
    return prefix + member + padded(bytes(data_length))


entries = st.lists(entry(), max_size=8)


@st.composite
def stream(draw: st.DrawFn) -> bytes:
    data = bytearray(b"".join(draw(entries)))
    if draw(st.booleans()):
        data += bytes(2 * BLOCK)
    for position, mask in draw(flips):
        if data:
            data[position % len(data)] ^= mask
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    return bytes(data)


def place(root: Path) -> tuple[Path, set[Path]]:
    """A target holding a planted link to a directory outside, and a file outside."""
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("do not touch")
    dest = root / "run"
    (dest / "archive").mkdir(parents=True)
    (dest / "planted-link").symlink_to(outside)
    return dest, set(dest.rglob("*"))


def check(root: Path, data: bytes, chunk_size: int) -> None:
    dest, planted = place(root)
    outside_before = snapshot(root, dest)
    # UnsafeArchiveError is the one error it may raise; anything else fails the test.
    with contextlib.suppress(UnsafeArchiveError):
        extract(chunks(data, chunk_size), dest, LIMITS)
    assert snapshot(root, dest) == outside_before
    # An entry of the same name may replace the planted link (the extractor removes
    # what stands in its way, never writing through it); a link that stays is the
    # planted one, unchanged: the extractor makes no link of its own.
    planted_link = dest / "planted-link"
    if planted_link.is_symlink():
        assert os.readlink(planted_link) == str(root / "outside")
    made = [path for path in dest.rglob("*") if path not in planted]
    assert len(made) <= MAX_ENTRIES
    written = 0
    for path in made:
        mode = path.lstat().st_mode
        assert stat.S_ISREG(mode) or stat.S_ISDIR(mode), path
        assert not mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | 0o022), oct(mode)
        assert len(path.relative_to(dest).parts) <= MAX_DEPTH, path
        if stat.S_ISREG(mode):
            written += path.lstat().st_size
    assert written <= MAX_BYTES


@settings(FUZZ_SETTINGS, max_examples=200)
@given(data=stream(), chunk_size=st.integers(1, 4096))
def test_hostile_streams_stay_inside_and_within_the_caps(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, chunk_size: int
) -> None:
    check(tmp_path_factory.mktemp("fuzz"), data, chunk_size)


@settings(FUZZ_SETTINGS, max_examples=150)
@given(data=st.binary(max_size=4096), chunk_size=st.integers(1, 1024))
def test_random_bytes_stay_inside_and_within_the_caps(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, chunk_size: int
) -> None:
    check(tmp_path_factory.mktemp("bytes"), data, chunk_size)
