"""What the web UI is started with: the command line plus SSEBENCH_WEBUI_* variables,
and SSEBENCH_CATALOG, a task catalog service for the launcher (the Helm chart sets it).

The token is read from the environment only, never from the command line, because a
process listing shows argv. It is required, with at least 16 characters, whenever the
server listens on anything but loopback.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ssebench.errors import UserError

TOKEN_VARIABLE = "SSEBENCH_WEBUI_TOKEN"
HOSTED_VARIABLE = "SSEBENCH_WEBUI_HOSTED"
TERMINAL_VARIABLE = "SSEBENCH_WEBUI_TERMINAL"
CORS_VARIABLE = "SSEBENCH_WEBUI_CORS_ORIGINS"
CATALOG_VARIABLE = "SSEBENCH_CATALOG"
MINIMUM_TOKEN_LENGTH = 16
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 3001
LOOPBACK_NAMES = ("localhost", "localhost.")
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("", "0", "false", "no", "off")


@dataclass(frozen=True)
class WebSettings:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    results: Path = Path("results")
    dataset: str | None = None
    # A catalog service's URL: the launcher's tasks come from it, and its runs use the
    # prebuilt images. None: the dataset folder.
    catalog: str | None = None
    backend: str = "docker"
    token: str | None = field(default=None, repr=False)
    hosted: bool = False
    terminal: bool = False
    cors_origins: tuple[str, ...] = ()
    # The user's agent folders (--agents-dir) the launcher offers besides the built-in
    # ones and $SSEBENCH_AGENTS_PATH's; each launched run gets them too.
    agents_dirs: tuple[Path, ...] = ()

    @property
    def loopback_only(self) -> bool:
        return is_loopback(self.host)


def is_loopback(host: str) -> bool:
    """True for a name or address that only this machine reaches."""
    name = host.strip("[]").lower()
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _flag(environment: Mapping[str, str], name: str) -> bool:
    value = environment.get(name, "").strip().lower()
    if value in TRUE_WORDS:
        return True
    if value in FALSE_WORDS:
        return False
    raise UserError(f"${name} must be 1/true/yes/on or 0/false/no/off, not {value!r}")


def normalize_origin(origin: str) -> str:
    """scheme://host[:port] in lower case, without a default port, for comparing."""
    parts = urlsplit(origin.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(origin)
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise ValueError(origin)
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    default = {"http": 80, "https": 443}[parts.scheme]
    port = parts.port if parts.port not in (None, default) else None
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


def _cors_origins(environment: Mapping[str, str]) -> tuple[str, ...]:
    origins = []
    for word in environment.get(CORS_VARIABLE, "").replace(",", " ").split():
        try:
            origins.append(normalize_origin(word))
        except ValueError:
            raise UserError(
                f"${CORS_VARIABLE}: {word!r} is not an origin like https://host[:port]"
            ) from None
    return tuple(origins)


def _catalog(environment: Mapping[str, str], dataset: str | None) -> str | None:
    """$SSEBENCH_CATALOG, unless a dataset folder was named on the command line."""
    url = environment.get(CATALOG_VARIABLE, "").strip()
    if not url or dataset is not None:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"${CATALOG_VARIABLE} must be an http:// or https:// URL")
    return url


def _token(environment: Mapping[str, str]) -> str | None:
    token = environment.get(TOKEN_VARIABLE, "")
    if not token:
        return None
    # The message never repeats the value: it is a secret even when it is a bad one.
    if len(token) < MINIMUM_TOKEN_LENGTH:
        raise UserError(f"${TOKEN_VARIABLE} must have at least {MINIMUM_TOKEN_LENGTH} characters")
    if any(character.isspace() or not character.isprintable() for character in token):
        raise UserError(f"${TOKEN_VARIABLE} must not contain spaces or control characters")
    return token


def load_settings(
    *,
    host: str,
    port: int,
    results: Path,
    dataset: str | None,
    backend: str,
    environment: Mapping[str, str] | None = None,
    agents_dirs: tuple[Path, ...] = (),
) -> WebSettings:
    """The settings, checked. Raises UserError with one line saying what to change."""
    environment = os.environ if environment is None else environment
    if not 0 < port < 65536:
        raise UserError(f"--port must be between 1 and 65535, not {port}")
    if not host:
        raise UserError("--host must not be empty")
    token = _token(environment)
    if token is None and not is_loopback(host):
        raise UserError(
            f"Refusing to listen on {host} without a token: set ${TOKEN_VARIABLE} "
            f"({MINIMUM_TOKEN_LENGTH} or more characters), or listen on 127.0.0.1"
        )
    return WebSettings(
        host=host,
        port=port,
        results=results,
        dataset=dataset,
        catalog=_catalog(environment, dataset),
        backend=backend,
        token=token,
        hosted=_flag(environment, HOSTED_VARIABLE),
        terminal=_flag(environment, TERMINAL_VARIABLE),
        cors_origins=_cors_origins(environment),
        # Absolute, because a launched run may start in another folder.
        agents_dirs=tuple(folder.resolve() for folder in agents_dirs),
    )
