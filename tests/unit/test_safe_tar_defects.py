"""The extractor's defects of issue 14, each with the stream that showed it.

Each test failed on the extractor before the fix: a pax header's cost grew with the
square of its size, a directory's data was held in memory whole, the directories made
along one member's path were neither counted nor limited in depth, group and other
write bits were kept, skipped names reached the terminal raw, and a file from before
1970 in GNU format failed the whole read-out.
"""

from __future__ import annotations

import os
import stat
import tarfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench.results.safe_tar import (
    BLOCK,
    MAX_EXTENDED_HEADER,
    Limits,
    UnsafeArchiveError,
    extract,
)
from tests.unit.tar_streams import END, padded, pax_record, tar_bytes, tar_info, with_checksum


def header(name: str, kind: bytes, size: int) -> bytes:
    """One raw header block of kind announcing size bytes, with a right checksum."""
    block = bytearray(tar_info(name).tobuf(tarfile.GNU_FORMAT)[:BLOCK])
    block[156:157] = kind
    block[124:136] = b"%011o\0" % size
    return with_checksum(block)


@pytest.fixture
def dest(tmp_path: Path) -> Path:
    target = tmp_path / "archive"
    target.mkdir()
    return target


def count_below(root: Path) -> int:
    return sum(1 for _ in root.rglob("*"))


# -- a pax header: linear, and capped ------------------------------------------------


def test_a_1_mib_pax_header_is_refused_at_once(dest: Path) -> None:
    # The reproducer: 1 MiB of NUL-padded records cost 3.5 s of CPU before.
    record = b"16 comment=abcd\n"
    body = record + bytes(1024 * 1024 - len(record))
    stream = header("pax", b"x", len(body)) + padded(body) + END
    started = time.process_time()
    with pytest.raises(UnsafeArchiveError, match="extended header that is too large"):
        extract(iter([stream]), dest)
    assert time.process_time() - started < 0.5


def test_a_pax_header_at_the_cap_parses_in_linear_time(dest: Path) -> None:
    # As many short records and as much padding as the cap allows, then a file.
    record = b"13 comment=x\n"
    records = record * (MAX_EXTENDED_HEADER // 2 // len(record))
    body = records + bytes(MAX_EXTENDED_HEADER - len(records))
    member = tar_bytes((tar_info("after"), b"data"))
    stream = header("pax", b"x", len(body)) + padded(body) + member
    started = time.process_time()
    report = extract(iter([stream]), dest)
    assert time.process_time() - started < 0.5
    assert report.files == 1 and (dest / "after").read_bytes() == b"data"


def test_pax_padding_that_is_not_all_nul_is_refused(dest: Path) -> None:
    body = b"13 comment=x\n\0\0\0junk"
    stream = header("pax", b"x", len(body)) + padded(body) + tar_bytes((tar_info("f"), b"1"))
    with pytest.raises(UnsafeArchiveError, match="malformed extended header"):
        extract(iter([stream]), dest)


@pytest.mark.parametrize("length", [b"9" * 30, b"-5", b"+13", b"1_3"])
def test_pax_record_lengths_that_are_not_plain_digits_are_refused(
    dest: Path, length: bytes
) -> None:
    body = length + b" comment=x\n"
    stream = header("pax", b"x", len(body)) + padded(body) + tar_bytes((tar_info("f"), b"1"))
    with pytest.raises(UnsafeArchiveError, match="malformed extended header"):
        extract(iter([stream]), dest)


def test_a_pax_size_of_thousands_of_digits_is_refused(dest: Path) -> None:
    body = pax_record(b"size", b"9" * 5000)
    stream = header("pax", b"x", len(body)) + padded(body) + tar_bytes((tar_info("f"), b"1"))
    with pytest.raises(UnsafeArchiveError, match="size"):
        extract(iter([stream]), dest)


def test_a_1_mib_gnu_long_name_is_refused(dest: Path) -> None:
    name = b"a/" * (512 * 1024)
    stream = header("././@LongLink", b"L", len(name)) + padded(name) + END
    with pytest.raises(UnsafeArchiveError, match="too large"):
        extract(iter([stream]), dest)
    assert count_below(dest) == 0


# -- a directory's data is skipped, never held ---------------------------------------


def test_a_directory_entry_s_data_is_never_held_in_memory(dest: Path) -> None:
    size = 64 * 1024 * 1024

    def stream() -> Iterator[bytes]:
        yield header("dir/", b"5", size)
        zeros = bytes(1024 * 1024)
        for _ in range(size // len(zeros)):
            yield zeros
        yield END

    tracemalloc.start()
    try:
        report = extract(stream(), dest)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.directories == 1 and (dest / "dir").is_dir()
    # Before: about three times the entry's size (192 MiB here).
    assert peak < 8 * 1024 * 1024, peak


# -- directories along a path: counted, and limited in depth -------------------------


def test_directories_made_along_a_path_count_as_entries(dest: Path) -> None:
    stream = tar_bytes((tar_info("a/b/c/d/e/f/g/h/file"), b"x"))
    with pytest.raises(UnsafeArchiveError, match="more than 5 entries"):
        extract(iter([stream]), dest, Limits(max_entries=5))
    # The header is one entry, so four directories at most.
    assert count_below(dest) <= 4


def test_existing_directories_are_not_counted_again(dest: Path) -> None:
    stream = tar_bytes(*((tar_info(f"a/b/file{index}"), b"x") for index in range(4)))
    # 4 headers + 2 directories made once each.
    report = extract(iter([stream]), dest, Limits(max_entries=6))
    assert report.files == 4
    with pytest.raises(UnsafeArchiveError, match="entries"):
        extract(iter([stream]), dest / "a", Limits(max_entries=5))


def test_one_entry_cannot_make_a_deep_tree(dest: Path) -> None:
    # The reproducer made 524,256 nested directories from one GNU long name; within
    # the extended header's cap, a name still holds thousands of components.
    name = "d/" * 20_000 + "file"
    stream = tar_bytes((tar_info(name), b"x"))
    started = time.monotonic()
    with pytest.raises(UnsafeArchiveError, match="deeper than 128 directories"):
        extract(iter([stream]), dest)
    assert time.monotonic() - started < 2
    assert count_below(dest) == 0


def test_the_depth_limit_is_a_setting(dest: Path) -> None:
    stream = tar_bytes((tar_info("a/b/c/file"), b"x"))
    with pytest.raises(UnsafeArchiveError, match="deeper than 3"):
        extract(iter([stream]), dest, Limits(max_depth=3))
    extract(iter([stream]), dest, Limits(max_depth=4))
    assert (dest / "a/b/c/file").read_bytes() == b"x"


# -- modes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "written"),
    [
        (0o777, 0o755),
        (0o666, 0o644),
        (0o4777, 0o755),
        (0o2775, 0o755),
        (0o1777, 0o755),
        (0o640, 0o640),
        (0o000, 0o600),
    ],
)
def test_file_modes_lose_group_and_other_write_and_special_bits(
    dest: Path, given: int, written: int
) -> None:
    extract(iter([tar_bytes((tar_info("f", mode=given), b"x"))]), dest)
    assert stat.S_IMODE((dest / "f").lstat().st_mode) == written


@pytest.mark.parametrize(("given", "written"), [(0o777, 0o755), (0o3777, 0o755), (0o000, 0o700)])
def test_directory_modes_lose_group_and_other_write_and_special_bits(
    dest: Path, given: int, written: int
) -> None:
    extract(iter([tar_bytes((tar_info("d/", tarfile.DIRTYPE, mode=given), None))]), dest)
    assert stat.S_IMODE((dest / "d").lstat().st_mode) == written


# -- names shown to the operator -----------------------------------------------------

HOSTILE_NAME = "\x1b]0;owned\x07\x1b[2J\u202eevil\x9b31m"


def test_skipped_names_are_escaped(dest: Path) -> None:
    stream = tar_bytes((tar_info(HOSTILE_NAME, tarfile.FIFOTYPE), None))
    report = extract(iter([stream]), dest)
    assert report.skipped_total == 1
    shown = report.skipped[0]
    assert shown.isprintable(), shown
    assert "\\x1b" in shown and "FIFO" in shown


def test_names_in_errors_are_escaped(dest: Path) -> None:
    stream = tar_bytes((tar_info("/" + HOSTILE_NAME), b"x"))
    with pytest.raises(UnsafeArchiveError) as raised:
        extract(iter([stream]), dest)
    assert str(raised.value).isprintable(), str(raised.value)


def test_names_that_are_not_utf_8_are_escaped(dest: Path) -> None:
    raw = b"bad\xff\x1bname"
    block = bytearray(header("x", b"6", 0))
    block[0:100] = raw + bytes(100 - len(raw))
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block)
    report = extract(iter([bytes(block) + END]), dest)
    assert report.skipped[0].isprintable() and "\\x1b" in report.skipped[0]


def test_the_report_keeps_a_bounded_number_of_skipped_names(dest: Path) -> None:
    stream = tar_bytes(
        *((tar_info(f"fifo{index}", tarfile.FIFOTYPE), None) for index in range(250))
    )
    report = extract(iter([stream]), dest)
    assert report.skipped_total == 250
    assert len(report.skipped) == 100


# -- a negative mtime ----------------------------------------------------------------


def test_a_file_from_before_1970_in_gnu_format_is_written(dest: Path) -> None:
    old = tar_info("old", mtime=-86400 * 365)
    stream = tar_bytes((old, b"from the sixties"))
    # tarfile writes a negative number in GNU's base-256 form, first byte 0xff.
    assert stream[136] == 0xFF
    report = extract(iter([stream]), dest)
    assert report.files == 1
    assert (dest / "old").read_bytes() == b"from the sixties"
    assert os.stat(dest / "old").st_mtime == 0


def test_a_negative_size_still_fails(dest: Path) -> None:
    block = bytearray(header("neg", b"0", 0))
    block[124:136] = b"\xff" * 12
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block)
    with pytest.raises(UnsafeArchiveError, match="negative size"):
        extract(iter([bytes(block) + END]), dest)
