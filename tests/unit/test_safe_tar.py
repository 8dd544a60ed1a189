"""The hardened tar extractor against hostile streams: a corpus of known attacks, then
property-based fuzzing. The one property that must always hold: nothing is written
outside the target, and nothing but regular files and directories inside it."""

from __future__ import annotations

import contextlib
import stat
import tarfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ssebench.results.safe_tar import Limits, UnsafeArchiveError, extract
from tests.unit.tar_streams import chunks, snapshot, tar_bytes, tar_info


def member(name: str, kind: bytes = tarfile.REGTYPE, data: bytes | None = b"x", **extra: object):
    info = tar_info(name, kind, **extra)
    if kind != tarfile.REGTYPE:
        data = None
    return info, data


def only_files_and_directories(dest: Path) -> None:
    for path in dest.rglob("*"):
        mode = path.lstat().st_mode
        if path.name == "planted-link":
            continue  # the test's own hostile link, which extraction must not follow
        assert stat.S_ISREG(mode) or stat.S_ISDIR(mode), path
        assert not mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX), path


@pytest.fixture
def place(tmp_path: Path) -> tuple[Path, Path]:
    """(dest, outside): dest inside a tree whose other files must never change."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("do not touch")
    dest = tmp_path / "run"
    (dest / "archive").mkdir(parents=True)
    (dest / "result.json").write_text("")
    return dest, outside


def test_files_and_directories_are_unpacked(place: tuple[Path, Path]) -> None:
    dest, _ = place
    data = tar_bytes(
        member("./", tarfile.DIRTYPE),
        member("./result.json", data=b'{"status": "passed"}'),
        member("./logs/", tarfile.DIRTYPE, mode=0o700),
        member("./logs/agent.log", data=b"hello\n", mode=0o4755),
        member("deep/er/file", data=b"z" * 5000),
    )
    report = extract(chunks(data), dest)
    assert (dest / "result.json").read_bytes() == b'{"status": "passed"}'
    assert (dest / "logs" / "agent.log").read_text() == "hello\n"
    assert (dest / "deep" / "er" / "file").read_bytes() == b"z" * 5000
    assert report.files == 3 and report.skipped == []
    only_files_and_directories(dest)


def test_long_names_gnu_and_pax(place: tuple[Path, Path]) -> None:
    dest, _ = place
    long_name = "d/" + "n" * 180
    for fmt in (tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT):
        name = long_name if fmt != tarfile.USTAR_FORMAT else "p" * 120 + "/f"
        extract(chunks(tar_bytes(member(name, data=b"long"), fmt=fmt)), dest)
        assert (dest / name).read_bytes() == b"long"


@pytest.mark.parametrize(
    "name", ["/etc/evil", "../evil", "a/../../evil", "a/b/../../../evil", "./../evil"]
)
@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
def test_escaping_names_fail(place: tuple[Path, Path], name: str, fmt: int) -> None:
    dest, _ = place
    before = snapshot(dest.parent, dest)
    data = tar_bytes(member(name + "/" + "x" * (120 if fmt else 0), data=b"pwned"), fmt=fmt)
    with pytest.raises(UnsafeArchiveError):
        extract(chunks(data), dest)
    assert snapshot(dest.parent, dest) == before


def test_links_devices_and_fifos_are_skipped_never_created(place: tuple[Path, Path]) -> None:
    dest, outside = place
    data = tar_bytes(
        member("link", tarfile.SYMTYPE, linkname=str(outside)),
        member("link/secret.txt", data=b"overwritten"),
        member("hard", tarfile.LNKTYPE, linkname="/etc/passwd"),
        member("dev", tarfile.CHRTYPE, devmajor=1, devminor=3),
        member("blk", tarfile.BLKTYPE, devmajor=8, devminor=0),
        member("fifo", tarfile.FIFOTYPE),
    )
    before = snapshot(dest.parent, dest)
    report = extract(chunks(data), dest)
    assert len(report.skipped) == 5
    assert (dest / "link").is_dir() and not (dest / "link").is_symlink()
    assert (dest / "link" / "secret.txt").read_bytes() == b"overwritten"
    assert (outside / "secret.txt").read_text() == "do not touch"
    assert snapshot(dest.parent, dest) == before
    for name in ("hard", "dev", "blk", "fifo"):
        assert not (dest / name).exists()


def test_a_planted_directory_link_is_never_followed(place: tuple[Path, Path]) -> None:
    dest, outside = place
    (dest / "planted-link").symlink_to(outside)
    before = snapshot(dest.parent, dest)
    with pytest.raises(UnsafeArchiveError, match="not a directory"):
        extract(chunks(tar_bytes(member("planted-link/secret.txt", data=b"x"))), dest)
    assert snapshot(dest.parent, dest) == before


def test_a_planted_file_link_is_replaced_not_written_through(place: tuple[Path, Path]) -> None:
    dest, outside = place
    (dest / "result.json").unlink()
    (dest / "result.json").symlink_to(outside / "secret.txt")
    extract(chunks(tar_bytes(member("result.json", data=b"grade"))), dest)
    assert (outside / "secret.txt").read_text() == "do not touch"
    assert not (dest / "result.json").is_symlink()
    assert (dest / "result.json").read_bytes() == b"grade"


def test_a_file_never_replaces_a_directory_nor_the_reverse(place: tuple[Path, Path]) -> None:
    dest, _ = place
    with pytest.raises(UnsafeArchiveError, match="replace"):
        extract(chunks(tar_bytes(member("archive", data=b"not a dir"))), dest)
    assert (dest / "archive").is_dir()
    with pytest.raises(UnsafeArchiveError, match="replace"):
        extract(chunks(tar_bytes(member("result.json/", tarfile.DIRTYPE))), dest)
    assert (dest / "result.json").is_file()


def test_a_truncated_stream_fails_and_leaves_no_partial_file(place: tuple[Path, Path]) -> None:
    dest, _ = place
    data = tar_bytes(member("big", data=b"y" * 10_000))
    for cut in (100, 512, 600, 5000, 512 + 10_000, len(data) - 1024 * 10 + 1):
        if not 0 < cut < len(data):
            continue
        with pytest.raises(UnsafeArchiveError):
            extract(chunks(data[:cut]), dest)
        assert not (dest / "big").exists(), cut


def test_no_end_marker_empty_stream_and_bad_checksum_fail(place: tuple[Path, Path]) -> None:
    dest, _ = place
    data = tar_bytes(member("f", data=b"abc"))
    without_end = data[: 512 + 512]
    with pytest.raises(UnsafeArchiveError, match="end-of-archive"):
        extract(chunks(without_end), dest)
    with pytest.raises(UnsafeArchiveError):
        extract(iter([]), dest)
    corrupt = bytearray(data)
    corrupt[0] ^= 0x01
    with pytest.raises(UnsafeArchiveError, match="checksum"):
        extract(chunks(bytes(corrupt)), dest)


def test_limits_on_entries_and_bytes(place: tuple[Path, Path]) -> None:
    dest, _ = place
    many = tar_bytes(*(member(f"f{i}", data=b"1") for i in range(10)))
    with pytest.raises(UnsafeArchiveError, match="entries"):
        extract(chunks(many), dest, Limits(max_entries=5))
    big = tar_bytes(member("big", data=b"b" * 1000))
    with pytest.raises(UnsafeArchiveError, match="bytes"):
        extract(chunks(big), dest, Limits(max_bytes=999))
    assert not (dest / "big").exists()
    extract(chunks(big), dest, Limits(max_bytes=1000))


def test_declared_sizes_cannot_exhaust_memory(place: tuple[Path, Path]) -> None:
    dest, _ = place
    # A pax header that claims 8 GiB: refused from its header, before any read.
    info = tarfile.TarInfo("x")
    header = bytearray(info.tobuf(tarfile.GNU_FORMAT))
    header[156:157] = b"x"
    header[124:136] = b"%011o\0" % (8 * 1024**3)
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(header)
    with pytest.raises(UnsafeArchiveError):
        extract(iter([bytes(header)]), dest)
    # A GNU base-256 size far past the limit.
    huge = bytearray(tarfile.TarInfo("y").tobuf(tarfile.GNU_FORMAT))
    huge[124:136] = b"\x80" + (10**15).to_bytes(11, "big")
    huge[148:156] = b" " * 8
    huge[148:156] = b"%06o\0 " % sum(huge)
    with pytest.raises(UnsafeArchiveError, match="bytes"):
        extract(iter([bytes(huge)]), dest)


def test_pax_path_cannot_escape(place: tuple[Path, Path]) -> None:
    dest, _ = place
    info = tarfile.TarInfo("innocent")
    info.pax_headers = {"path": "../../escaped"}
    with pytest.raises(UnsafeArchiveError, match=r"\.\."):
        extract(chunks(tar_bytes((info, b"x"), fmt=tarfile.PAX_FORMAT)), dest)
    assert not (dest.parent / "escaped").exists()


# -- fuzzing ---------------------------------------------------------------------------

COMPONENTS = ["a", "b", "..", ".", "", "archive", "result.json", "planted-link", "é", " "]
KINDS = [
    tarfile.REGTYPE,
    tarfile.DIRTYPE,
    tarfile.SYMTYPE,
    tarfile.LNKTYPE,
    tarfile.FIFOTYPE,
    tarfile.CHRTYPE,
]
names = st.lists(st.sampled_from(COMPONENTS), min_size=1, max_size=4).map("/".join)
members = st.lists(
    st.tuples(
        st.one_of(names, names.map(lambda name: "/" + name)),
        st.sampled_from(KINDS),
        st.binary(max_size=600),
        st.one_of(st.just(""), names, names.map(lambda name: "/" + name)),
        st.integers(min_value=0, max_value=0o7777),
    ),
    max_size=8,
)


def hostile_tree(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text("do not touch")
    dest = tmp_path / "run"
    (dest / "archive").mkdir(parents=True, exist_ok=True)
    link = dest / "planted-link"
    if not link.is_symlink():
        link.symlink_to(outside)
    return dest, outside


def check_extraction(tmp_path: Path, data: bytes, chunk_size: int) -> None:
    dest, _ = hostile_tree(tmp_path)
    before = snapshot(tmp_path, dest)
    with contextlib.suppress(UnsafeArchiveError):
        extract(chunks(data, chunk_size), dest, Limits(max_bytes=20_000, max_entries=50))
    assert snapshot(tmp_path, dest) == before
    only_files_and_directories(dest)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    entries=members,
    fmt=st.sampled_from([tarfile.GNU_FORMAT, tarfile.PAX_FORMAT]),
    cut=st.one_of(st.none(), st.integers(min_value=0, max_value=20_000)),
    flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(1, 255)), max_size=3),
    chunk_size=st.integers(min_value=1, max_value=2048),
)
def test_fuzz_structured_streams_never_write_outside(
    tmp_path_factory: pytest.TempPathFactory,
    entries: list[tuple[str, bytes, bytes, str, int]],
    fmt: int,
    cut: int | None,
    flips: list[tuple[int, int]],
    chunk_size: int,
) -> None:
    built = []
    for name, kind, data, linkname, mode in entries:
        info, content = member(name, kind, data, mode=mode)
        if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
            info.linkname = linkname
        built.append((info, content))
    try:
        data = bytearray(tar_bytes(*built, fmt=fmt))
    except (ValueError, UnicodeError):
        return  # tarfile itself refuses to write this member
    for position, mask in flips:
        if data:
            data[position % len(data)] ^= mask
    if cut is not None:
        data = data[:cut]
    check_extraction(tmp_path_factory.mktemp("fuzz"), bytes(data), chunk_size)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.binary(max_size=4096), chunk_size=st.integers(min_value=1, max_value=1024))
def test_fuzz_random_bytes_never_write_outside(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, chunk_size: int
) -> None:
    check_extraction(tmp_path_factory.mktemp("bytes"), data, chunk_size)
