"""The web UI's settings: the token rule, the flags, the CORS list; and the CLI's refusals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ssebench.errors import UserError
from ssebench.webui.settings import is_loopback, load_settings, normalize_origin

GOOD_TOKEN = "0123456789abcdef-good"


def settings(host: str = "127.0.0.1", **environment: str):  # type: ignore[no-untyped-def]
    return load_settings(
        host=host,
        port=3001,
        results=Path("results"),
        dataset=None,
        backend="docker",
        environment=environment,
    )


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"])
def test_loopback_names(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5", "example.com"])
def test_not_loopback(host: str) -> None:
    assert not is_loopback(host)


def test_loopback_needs_no_token() -> None:
    assert settings().token is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.4"])
def test_anything_but_loopback_needs_a_token(host: str) -> None:
    with pytest.raises(UserError, match="without a token"):
        settings(host)
    assert settings(host, SSEBENCH_WEBUI_TOKEN=GOOD_TOKEN).token == GOOD_TOKEN


def test_a_short_token_is_refused_without_repeating_it() -> None:
    with pytest.raises(UserError) as caught:
        settings("0.0.0.0", SSEBENCH_WEBUI_TOKEN="short-secret-15")
    assert "16" in str(caught.value) and "short-secret-15" not in str(caught.value)


def test_a_token_with_spaces_is_refused() -> None:
    with pytest.raises(UserError, match="spaces"):
        settings(SSEBENCH_WEBUI_TOKEN="0123456789 abcdefgh")


def test_the_token_is_not_in_repr() -> None:
    assert GOOD_TOKEN not in repr(settings(SSEBENCH_WEBUI_TOKEN=GOOD_TOKEN))


def test_flags_and_origins() -> None:
    loaded = settings(
        SSEBENCH_WEBUI_HOSTED="true",
        SSEBENCH_WEBUI_TERMINAL="0",
        SSEBENCH_WEBUI_CORS_ORIGINS="https://Board.example.com, http://localhost:8080/",
    )
    assert loaded.hosted and not loaded.terminal
    assert loaded.cors_origins == ("https://board.example.com", "http://localhost:8080")
    with pytest.raises(UserError, match="SSEBENCH_WEBUI_HOSTED"):
        settings(SSEBENCH_WEBUI_HOSTED="maybe")
    with pytest.raises(UserError, match="not an origin"):
        settings(SSEBENCH_WEBUI_CORS_ORIGINS="board.example.com")


@pytest.mark.parametrize(
    ("origin", "normalized"),
    [
        ("http://localhost:80", "http://localhost"),
        ("https://x.example:443", "https://x.example"),
        ("http://[::1]:3001", "http://[::1]:3001"),
    ],
)
def test_normalize_origin(origin: str, normalized: str) -> None:
    assert normalize_origin(origin) == normalized


def test_the_command_refuses_to_listen_openly_without_a_token() -> None:
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith("SSEBENCH_WEBUI")
    }
    done = subprocess.run(
        [sys.executable, "-m", "ssebench.cli.main", "webui", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "SSEBENCH_WEBUI_TOKEN" in lines[0], done.stderr
