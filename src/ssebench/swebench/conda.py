"""A conda environment.yml as pip requirements and Debian packages.

The official harness makes the specs with `packages: environment.yml` (matplotlib,
xarray) with `conda env create`; ssebench's environments are venvs on the image of
the spec's Python, so each dependency is translated:

    numpy                    numpy
    numpy=1.23               numpy==1.23.*      (conda's `=` matches a version prefix)
    numpy=1.23.0=py39h...    numpy==1.23.0      (the build string is conda's)
    numpy >=1.20,<2          numpy>=1.20,<2
    conda-forge::numpy       numpy              (the channel is conda's)
    matplotlib-base          matplotlib         (conda_packages.yaml: other names, ...)
    c-compiler               apt build-essential
    pip: [...]               as written (pip's own requirement lines)

A name conda_packages.yaml does not list is the same project on PyPI. What cannot be
translated is one line (CondaUntranslatable) naming the dependencies.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONDA_PACKAGES_FILE = Path(__file__).with_name("conda_packages.yaml")
# name, then the version part: "=1.2", "==1.2", ">=1,<2", " 1.2.*", "=1.2=build".
_MATCH_SPEC = re.compile(
    r"^(?:(?P<channel>[A-Za-z0-9_.\-]+)::)?(?P<name>[A-Za-z0-9_.\-]+)(?P<extras>\[[^\]]*\])?"
    r"\s*(?P<version>[^#]*?)\s*$"
)
_VERSION = r"[A-Za-z0-9_.*+!\-]+"
_CLAUSE = re.compile(rf"^(==|!=|>=|<=|>|<|~=|=)?\s*({_VERSION})$")


class CondaUntranslatable(Exception):
    """One line: what of an environment.yml a pip environment cannot have."""


@dataclass(frozen=True)
class CondaTranslation:
    """What an environment.yml asks for, as a pip environment can have it."""

    requirements: tuple[str, ...]  # pip requirement lines, in the file's order
    apt_packages: tuple[str, ...]
    left_out: tuple[str, ...]  # "name: why", recorded as deviations


@functools.cache
def conda_names() -> dict[str, dict[str, Any]]:
    import yaml

    data = yaml.safe_load(CONDA_PACKAGES_FILE.read_text(encoding="utf-8"))
    return {normalized_name(name): entry for name, entry in data.items()}


def normalized_name(name: str) -> str:
    """A project's name as pip compares names (and conda_packages.yaml is keyed)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pip_version(version: str) -> str | None:
    """conda's version part as pip's specifier ("" for none); None if it has none."""
    version = version.strip()
    if not version:
        return ""
    if "|" in version:
        return None  # an alternative of versions: pip has no "or"
    if version.startswith("=") and not version.startswith("=="):
        number, _, build = version[1:].partition("=")
        # With a build string (as `conda env export` writes them) the version is exact.
        version = ("==" if build else "=") + number
    elif " " in version and not version.startswith(("=", "!", "<", ">", "~")):
        version, _, _build = version.partition(" ")  # "1.2.* build"
    clauses = []
    for clause in version.replace(" ", "").split(","):
        match = _CLAUSE.match(clause)
        if match is None:
            return None
        operator, number = match.group(1) or "", match.group(2)
        if operator in ("", "="):
            # conda's "=1.2" and a bare "1.2*" match a prefix; "1.2" alone is exact.
            prefix = operator == "=" or number.endswith("*")
            number = number.rstrip("*").rstrip(".")
            operator, number = "==", number + (".*" if prefix else "")
        elif number.endswith("*"):
            number = number.rstrip("*").rstrip(".") + ".*"
        clauses.append(operator + number)
    return ",".join(clauses)


def translate(text: str, source: str) -> CondaTranslation:
    """The dependencies of environment.yml text; CondaUntranslatable (one line, naming
    source) for a file that is no environment or dependencies that cannot be had."""
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise CondaUntranslatable(f"{source} is not YAML: {error}".splitlines()[0]) from None
    dependencies = data.get("dependencies") if isinstance(data, dict) else None
    if not isinstance(dependencies, list):
        raise CondaUntranslatable(f"{source} has no list of dependencies")
    requirements: list[str] = []
    apt: list[str] = []
    left_out: list[str] = []
    problems: list[str] = []
    for dependency in dependencies:
        if isinstance(dependency, dict) and set(dependency) == {"pip"}:
            lines = dependency["pip"] or []
            requirements.extend(
                str(line).strip()
                for line in lines
                if str(line).strip() and not str(line).strip().startswith("-")
            )
            continue
        match = _MATCH_SPEC.match(str(dependency)) if isinstance(dependency, str) else None
        version = pip_version(match.group("version")) if match else None
        if match is None or version is None:
            problems.append(f"{dependency!r} (not a conda package spec ssebench reads)")
            continue
        name = match.group("name")
        entry = conda_names().get(normalized_name(name), {})
        if "unavailable" in entry:
            problems.append(f"{name} ({entry['unavailable']})")
        elif "left_out" in entry:
            left_out.append(f"{name}: {entry['left_out']}")
        elif "apt" in entry:
            apt.extend(entry["apt"])
        else:
            requirements.append(f"{entry.get('pypi', name)}{match.group('extras') or ''}{version}")
    if problems:
        raise CondaUntranslatable(
            f"its {source} asks for what a pip environment cannot have: {'; '.join(problems)}; "
            "give a spec with requirements in --specs"
        )
    return CondaTranslation(
        requirements=tuple(requirements),
        apt_packages=tuple(dict.fromkeys(apt)),
        left_out=tuple(left_out),
    )
