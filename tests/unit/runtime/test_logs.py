from __future__ import annotations

from pathlib import Path

import pytest

from ssebench.runtime.logs import REDACTED, LogFile, RedactingStream, Redactor

from .conftest import SENTINEL


def test_redactor_replaces_every_occurrence_in_text_and_bytes() -> None:
    redactor = Redactor([SENTINEL, ""])
    assert redactor.text(f"a {SENTINEL} b {SENTINEL}") == f"a {REDACTED} b {REDACTED}"
    assert redactor.data(f"<{SENTINEL}>".encode()) == f"<{REDACTED}>".encode()


def test_an_empty_secret_redacts_nothing() -> None:
    assert Redactor([""]).text("nothing to hide") == "nothing to hide"


@pytest.mark.parametrize("split", range(1, len(SENTINEL) + 6))
def test_stream_redaction_catches_a_secret_split_across_chunks(split: int) -> None:
    data = f"key={SENTINEL}; done".encode()
    stream = Redactor([SENTINEL]).stream()
    out = stream.feed(data[:split]) + stream.feed(data[split:]) + stream.flush()
    assert out == f"key={REDACTED}; done".encode()


def test_stream_redaction_holds_back_only_a_possible_secret_start() -> None:
    stream = Redactor([SENTINEL]).stream()
    # Nothing here can start the secret, so a progress line shows at once.
    assert stream.feed(b"downloading 45%") == b"downloading 45%"
    assert stream.feed(b"key=" + SENTINEL[:5].encode()) == b"key="
    assert stream.feed(b"X") == SENTINEL[:5].encode() + b"X"


def test_redacting_stream_feeds_every_writer(tmp_path: Path) -> None:
    seen: list[bytes] = []
    other: list[bytes] = []
    stream = RedactingStream(Redactor([SENTINEL]), seen.append, other.append)
    stream(SENTINEL[:3].encode())
    stream(SENTINEL[3:].encode() + b"\n")
    stream.close()
    assert b"".join(seen) == b"".join(other) == f"{REDACTED}\n".encode()


def test_log_file_redacts_lines_and_exceptions(tmp_path: Path) -> None:
    log = LogFile(tmp_path / "x.log", Redactor([SENTINEL]))
    log.line(f"the key is {SENTINEL}")
    try:
        raise ValueError(f"bad {SENTINEL}")
    except ValueError as error:
        log.exception("failed", error)
    log.close()
    text = (tmp_path / "x.log").read_text()
    assert SENTINEL not in text
    assert text.count(REDACTED) >= 2
    assert "ValueError" in text


def test_log_file_does_not_follow_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "target").write_text("")
    (tmp_path / "x.log").symlink_to(tmp_path / "target")
    with pytest.raises(OSError):
        LogFile(tmp_path / "x.log", Redactor([]))
