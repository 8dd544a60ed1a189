"""ssebench.results.files: reading a run directory that a hostile agent wrote, on the host."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from ssebench.errors import UserError
from ssebench.results import files as run_files
from ssebench.results.files import ReadLimits, UnsafeFileError


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    made = tmp_path / "run"
    (made / "archive").mkdir(parents=True)
    return made


def test_a_regular_file_is_read_whole_or_cut_at_the_cap(run_dir: Path) -> None:
    (run_dir / "agent.log").write_bytes(b"0123456789")
    whole = run_files.read_file(run_dir, "agent.log", 100)
    assert (whole.data, whole.truncated, whole.size) == (b"0123456789", False, 10)
    start = run_files.read_file(run_dir, "agent.log", 4)
    assert (start.data, start.truncated) == (b"0123", True)
    end = run_files.read_file(run_dir, "agent.log", 4, tail=True)
    assert (end.data, end.truncated) == (b"6789", True)
    assert run_files.read_text(run_dir, "agent.log", limit=3, tail=True) == ("789", True, None)


@pytest.mark.parametrize("target", ["/dev/zero", "/etc/passwd", "/proc/self/environ"])
def test_a_link_is_never_followed(run_dir: Path, target: str) -> None:
    (run_dir / "final.patch").symlink_to(target)
    (run_dir / "archive" / "dialog.jsonl").symlink_to(target)
    for name in ("final.patch", "archive/dialog.jsonl"):
        with pytest.raises(UnsafeFileError, match="is a link"):
            run_files.read_file(run_dir, name, 1024)
        assert run_files.read_text(run_dir, name)[:2] == ("", False)
        assert not run_files.is_regular_file(run_dir, name)


def test_a_link_on_the_way_is_never_followed(run_dir: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "dialog.jsonl").write_text("secret\n")
    (run_dir / "archive").rmdir()
    (run_dir / "archive").symlink_to(elsewhere)
    with pytest.raises(UnsafeFileError):
        run_files.read_file(run_dir, "archive/dialog.jsonl", 1024)
    with pytest.raises(UnsafeFileError):
        run_files.list_directory(run_dir, "archive")
    assert not run_files.is_regular_file(run_dir, "archive/dialog.jsonl")


def test_the_run_directory_itself_may_not_be_a_link(tmp_path: Path, run_dir: Path) -> None:
    (run_dir / "summary.json").write_text("{}")
    (tmp_path / "latest").symlink_to(run_dir)
    with pytest.raises(UnsafeFileError):
        run_files.read_file(tmp_path / "latest", "summary.json", 1024)


def test_a_fifo_never_blocks(run_dir: Path) -> None:
    os.mkfifo(run_dir / "archive" / "dialog.jsonl")
    started = time.monotonic()
    with pytest.raises(UnsafeFileError, match="fifo"):
        run_files.read_file(run_dir, "archive/dialog.jsonl", 1024)
    assert run_files.read_json_object(run_dir, "archive/dialog.jsonl") is None
    assert time.monotonic() - started < 1


def test_devices_and_sockets_are_not_opened(run_dir: Path) -> None:
    with pytest.raises(UnsafeFileError, match="device"):
        run_files.read_file(Path("/dev"), "zero", 1024)
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(run_dir / "daemon.log"))
        with pytest.raises(UnsafeFileError, match="socket"):
            run_files.read_file(run_dir, "daemon.log", 1024)


def test_names_outside_the_run_directory_are_refused(run_dir: Path) -> None:
    for name in ("../x", "archive/../../x", "/etc/passwd", ""):
        with pytest.raises(UnsafeFileError):
            run_files.read_file(run_dir, name, 1024)


def test_a_huge_sparse_file_costs_only_the_cap(run_dir: Path) -> None:
    with (run_dir / "agent.log").open("wb") as handle:
        handle.truncate(3 * 1024**3)
    started = time.monotonic()
    content = run_files.read_file(run_dir, "agent.log", 1024 * 1024, tail=True)
    assert len(content.data) == 1024 * 1024 and content.truncated
    assert content.size == 3 * 1024**3
    assert time.monotonic() - started < 2


def test_json_objects_only_whole_and_within_the_cap(run_dir: Path) -> None:
    (run_dir / "summary.json").write_text('{"status": "passed"}')
    assert run_files.read_json_object(run_dir, "summary.json") == {"status": "passed"}
    assert run_files.read_json_object(run_dir, "summary.json", limit=5) is None
    (run_dir / "result.json").write_text("[1]")
    assert run_files.read_json_object(run_dir, "result.json") is None
    (run_dir / "result.json").write_bytes(b"\xff{")
    assert run_files.read_json_object(run_dir, "result.json") is None
    assert run_files.read_json_object(run_dir, "missing.json") is None


def test_a_listing_is_capped_and_describes_without_following(run_dir: Path) -> None:
    archive = run_dir / "archive"
    for number in range(50):
        (archive / f"f{number}").write_text("x")
    (archive / "zero").symlink_to("/dev/zero")
    os.mkfifo(archive / "pipe")
    setuid = archive / "setuid"
    setuid.write_text("#!/bin/sh\n")
    setuid.chmod(0o4755)
    whole = run_files.list_directory(run_dir, "archive", limit=1000)
    kinds = {entry.name: entry for entry in whole.entries}
    assert not whole.truncated and len(kinds) == 53
    assert kinds["zero"].kind == "link" and kinds["pipe"].kind == "fifo"
    assert kinds["setuid"].setuid and kinds["f1"].size == 1 and not kinds["f1"].setuid
    capped = run_files.list_directory(run_dir, "archive", limit=10)
    assert capped.truncated and len(capped.entries) == 10


def test_the_caps_are_settings_with_defaults() -> None:
    assert ReadLimits.from_environment({}) == ReadLimits()
    assert ReadLimits().file_bytes == 2 * 1024 * 1024
    changed = ReadLimits.from_environment(
        {"SSEBENCH_READ_FILE_BYTES": "10", "SSEBENCH_READ_LIST_ENTRIES": " 5 "}
    )
    assert (changed.file_bytes, changed.list_entries) == (10, 5)
    for bad in ("0", "-1", "ten", "1.5"):
        with pytest.raises(UserError, match="SSEBENCH_READ_JSON_BYTES"):
            ReadLimits.from_environment({"SSEBENCH_READ_JSON_BYTES": bad})


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (b"\xff\xfe", "\\xff\\xfe"),
        (b"new\nline\ttab\r", "new\\nline\\ttab\\r"),
        (b"esc\x1b[31m\x07", "esc\\x1b[31m\\x07"),
        (b"back\\slash", "back\\\\slash"),
        ("caf\u00e9 \u6f22".encode(), "caf\u00e9 \u6f22"),
        (b"n" * 255, "n" * 255),
    ],
)
def test_a_name_the_agent_chose_is_shown_escaped_and_whole(raw: bytes, shown: str) -> None:
    assert run_files.shown_name(os.fsdecode(raw)) == shown


def test_a_name_too_long_to_show_is_cut_saying_so() -> None:
    shown = run_files.shown_name("\x01" * 200)
    assert shown == "\\x01" * 75 + "... (500 more characters)"
