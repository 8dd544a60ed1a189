"""The backend registry: every backend, built-in or not, is an entry point of the group
`ssebench.backends`, so there is one code path. Only the backend asked for is loaded."""

from __future__ import annotations

import os

from ssebench.errors import UserError
from ssebench.host.entry_points import EntryPoint, entry_points

# typing.TYPE_CHECKING without importing typing: see cli/main.py.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ssebench.extensions import Backend

GROUP = "ssebench.backends"
DEFAULT_BACKEND = "docker"
BACKEND_VARIABLE = "SSEBENCH_BACKEND"
BUILT_IN_DOCKER = "ssebench.backends.docker:DockerBackend"


def _entry_points() -> dict[str, EntryPoint]:
    # ssebench.host.entry_points, not importlib.metadata, whose import (email, zipfile, ...)
    # costs more than the rest of `ssebench runs list`.
    found: dict[str, EntryPoint] = {}
    for entry_point in entry_points(group=GROUP):
        found.setdefault(entry_point.name, entry_point)
    return found


def installed_backends() -> list[str]:
    return sorted(_entry_points())


def is_built_in_docker(name: str) -> bool:
    """Whether name is registered as ssebench's own Docker backend (whose runs `runs
    list` lists without loading it: backends/docker/listing.py)."""
    entry_point = _entry_points().get(name)
    return entry_point is not None and entry_point.value == BUILT_IN_DOCKER


def selected_backend_name(option: str | None) -> str:
    """--backend, else SSEBENCH_BACKEND, else docker."""
    return option or os.environ.get(BACKEND_VARIABLE) or DEFAULT_BACKEND


def load_backend(name: str) -> Backend:
    """Create the backend registered as name. Raises UserError naming what went wrong."""
    from ssebench.extensions import Backend  # not for `runs list` on Docker (see there)

    entry_point = _entry_points().get(name)
    if entry_point is None:
        installed = ", ".join(installed_backends()) or "none"
        raise UserError(f"Unknown backend {name!r}; installed backends: {installed}")
    try:
        backend_class = entry_point.load()
    except ImportError as error:
        raise UserError(
            f"Backend {name!r} ({entry_point.value}) failed to import: {error}"
        ) from None
    except Exception as error:  # a broken plugin must not take the CLI down with it
        raise UserError(
            f"Backend {name!r} ({entry_point.value}) failed to load: "
            f"{type(error).__name__}: {error}"
        ) from None
    if not (isinstance(backend_class, type) and issubclass(backend_class, Backend)):
        raise UserError(
            f"Backend {name!r} ({entry_point.value}) is not a subclass of "
            "ssebench.extensions.Backend"
        )
    backend = backend_class()
    if not backend.name:
        backend.name = name
    return backend
