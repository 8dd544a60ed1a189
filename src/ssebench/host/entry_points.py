"""Entry points of installed distributions, read without importlib.metadata.

importlib.metadata costs every command that loads a backend about 20 ms of CPU at
import (email, zipfile, csv, inspect: docs/performance.md), more than the rest of
`ssebench runs list` does. Finding entry points is reading the `entry_points.txt` of
each `*.dist-info` (or `*.egg-info`) folder on sys.path, which this does with os and a
few lines of parsing, the same way importlib.metadata does: the first distribution of a
name on sys.path wins, the rest are shadowed. Where sys.path holds anything else (a zip
file, a path finder of a plugin), importlib.metadata is asked instead.
"""

from __future__ import annotations

import importlib
import os
import re
import sys

# typing.TYPE_CHECKING without importing typing: see cli/main.py.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?(\[.*\]\s*)?$")
_METADATA_SUFFIXES = (".dist-info", ".egg-info")


class EntryPoint:
    """One entry point: name, group, value ("module:attribute"), and load()."""

    __slots__ = ("group", "name", "value")

    def __init__(self, name: str, value: str, group: str) -> None:
        self.name = name
        self.value = value
        self.group = group

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"

    def load(self) -> Any:
        """Import the module and return the attribute the value names (ImportError,
        AttributeError, or what the module raises, as importlib.metadata's does)."""
        match = _VALUE.match(self.value)
        if match is None:
            raise ImportError(f"malformed entry point value {self.value!r}")
        loaded: Any = importlib.import_module(match.group("module"))
        for part in (match.group("attr") or "").split("."):
            if part:
                loaded = getattr(loaded, part)
        return loaded


def entry_points(group: str) -> list[EntryPoint]:
    """Every entry point of group, in sys.path order, the shadowed distributions left out."""
    if not all(_plain_folder(entry) for entry in sys.path):
        return _from_importlib_metadata(group)
    found: list[EntryPoint] = []
    seen: set[str] = set()
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:
            continue
        for folder in names:
            if not folder.endswith(_METADATA_SUFFIXES):
                continue
            distribution = _normalized(folder.rpartition(".")[0].partition("-")[0])
            if distribution in seen:
                continue
            seen.add(distribution)
            found.extend(_read(os.path.join(entry or ".", folder, "entry_points.txt"), group))
    return found


def _plain_folder(entry: str) -> bool:
    """A folder (or one that does not exist), not a zip file or anything a finder of
    sys.path_hooks other than the file finder would read."""
    return not os.path.isfile(entry or ".")


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _read(path: str, group: str) -> list[EntryPoint]:
    try:
        with open(path, encoding="utf-8") as text:
            lines = text.read().splitlines()
    except OSError:
        return []
    found: list[EntryPoint] = []
    section = None
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        if section != group:
            continue
        name, separator, value = line.partition("=")
        if separator:
            found.append(EntryPoint(name.strip(), value.strip(), group))
    return found


def _from_importlib_metadata(group: str) -> list[EntryPoint]:
    from importlib import metadata

    return [
        EntryPoint(entry.name, entry.value, group) for entry in metadata.entry_points(group=group)
    ]
