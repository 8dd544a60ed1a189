"""Install specifications of classic instances: the official tables, and `--specs FILE`.

Classic SWE-bench instances carry no build of their own; the official harness looks
their repository and version up in tables (`MAP_REPO_VERSION_TO_SPECS`). ssebench
ships those tables as data (official_specs.json, written by
scripts/generate-swebench-specs.py from the `swebench` 4.x package, provenance inside),
and a user's `--specs FILE` wins over them per repository and version. Both use the
official vocabulary:

    specs:
      - repo: pylint-dev/astroid        # OWNER/NAME, as the instances name it
        versions: ["2.10", "2.12"]      # the instances' `version` values it covers
        python: "3.9"                   # the Python of the environment
        packages: requirements.txt      # conda-style names, or requirements.txt / environment.yml
        pip_packages: ["pytest"]        # pip requirements
        pre_install: ["apt-get update && apt-get install -y libxml2"]
        install: python -m pip install -e .
        eval_commands: ["export LANG=C.UTF-8"]   # run before the tests
        test_cmd: pytest -rA             # run with the test_patch's test files appended
        log_parser: parse_log_pytest     # optional where the official tables name one

A spec without `python` is ssebench's earlier form: `packages` a list of Debian
packages, `pip` pinned requirements in a venv, `base_image` (docs/datasets.md).
Versions are strings whatever YAML makes of them: `versions: [2.10]` is "2.10".
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from ssebench.errors import UserError
from ssebench.swebench.instances import EVAL_TYPES
from ssebench.tasks.model import DEFAULT_BASE_IMAGE, PACKAGE_PATTERN

OFFICIAL_SPECS_FILE = Path(__file__).with_name("official_specs.json")
OFFLINE_ADDITIONS_FILE = Path(__file__).with_name("offline_additions.yaml")
# A requirement pinned to one version: NAME[extras]==VERSION.
_PINNED = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?==[A-Za-z0-9.!+_-]+$")
_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]*$")
_PYTHON = re.compile(r"^3\.[0-9]{1,2}$")
ENVIRONMENT_VENV = "/opt/ssebench-env"

# The keys of the official tables that ssebench carries out (environments.py).
OFFICIAL_KEYS = (
    "python",
    "packages",
    "pip_packages",
    "pre_install",
    "install",
    "eval_commands",
    "test_cmd",
)
# Official keys that only tune the official harness's own containers: accepted, not used.
IGNORED_OFFICIAL_KEYS = ("execute_test_as_nonroot", "no_use_env", "nano_cpus")
SSEBENCH_KEYS = (
    "repo",
    "versions",
    "log_parser",
    "requirements_paths",
    "environment_yml_paths",
    "eval_type",
    "pip",
    "base_image",
)
KNOWN_KEYS = (*SSEBENCH_KEYS, *OFFICIAL_KEYS, *IGNORED_OFFICIAL_KEYS)


@dataclass(frozen=True)
class Spec:
    """How the environment of one repository's versions is made and its tests are run."""

    repo: str
    versions: tuple[str, ...]
    test_cmd: str | None
    log_parser: str | None
    origin: str = "--specs"
    # The official form (python is set): see environments.py.
    python: str | None = None
    environment_packages: str | None = None  # the official `packages`
    pip_packages: tuple[str, ...] = ()
    pre_install: tuple[str, ...] = ()
    install: str | None = None
    eval_commands: tuple[str, ...] = ()
    requirements_paths: tuple[str, ...] = ()
    environment_yml_paths: tuple[str, ...] = ()
    # ssebench's earlier form (python is None).
    packages: tuple[str, ...] = ()
    pip: tuple[str, ...] = ()
    base_image: str = DEFAULT_BASE_IMAGE
    eval_type: str = "pass_and_fail"
    ignored_keys: tuple[str, ...] = field(default=())
    # What ssebench changed of an official spec (offline_additions.yaml), recorded.
    deviations: tuple[str, ...] = ()

    @property
    def official_form(self) -> bool:
        return self.python is not None

    def dockerfile(self) -> str:
        """The environment/Dockerfile of a task built from a spec of the earlier form.

        pip installs in a stage of its own, the only one that sees the build CA
        (build-ca/, see images/layers.py, add_build_ca); the final stage copies the venv only.
        """
        # git and ca-certificates: what the case layer installs anyway, here so that its
        # apt step finds them and downloads nothing.
        packages = sorted({"ca-certificates", "git", "python3", "python3-venv", *self.packages})
        lines = [
            "# Written by `ssebench dataset import swebench` from an install specification.",
            f"FROM {self.base_image} AS environment",
            "RUN apt-get update \\",
            " && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\",
            f"      {' '.join(packages)} \\",
            " && rm -rf /var/lib/apt/lists/*",
            "",
            "FROM environment AS install",
            "COPY build-ca/ /tmp/build-ca/",
            f"RUN python3 -m venv {ENVIRONMENT_VENV} \\",
            " && if [ -f /tmp/build-ca/ca-bundle.crt ]; then \\",
            "      export PIP_CERT=/tmp/build-ca/ca-bundle.crt; fi \\",
            f" && {ENVIRONMENT_VENV}/bin/pip install --no-cache-dir --disable-pip-version-check"
            + ("".join(f" '{requirement}'" for requirement in self.pip) or " --upgrade pip"),
            "",
            "FROM environment",
            f"COPY --from=install {ENVIRONMENT_VENV} {ENVIRONMENT_VENV}",
            f"ENV PATH={ENVIRONMENT_VENV}/bin:$PATH",
            "",
        ]
        return "\n".join(lines)


class _VersionLoader(yaml.SafeLoader):
    """A YAML loader that keeps a number's text: `2.10` stays "2.10", not 2.1."""


def _number_text(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return str(loader.construct_scalar(node))  # type: ignore[arg-type]


_VersionLoader.add_constructor("tag:yaml.org,2002:float", _number_text)


def _strings(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(
        isinstance(item, (str, int, float)) and not isinstance(item, bool) for item in value
    ):
        return tuple(str(item) for item in value)
    return None


def _optional_text(entry: dict[str, Any], key: str, where: str) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{where}: the field {key} must be a non-empty string")
    return value.strip()


def _string_list(entry: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = entry.get(key, [])
    strings = _strings(value)
    if strings is None:
        raise UserError(f"{where}: the field {key} must be a list of strings")
    return strings


def parse_spec(entry: Any, where: str, *, origin: str = "--specs") -> Spec:
    """One specification from a mapping of the official or the earlier vocabulary.
    Raises UserError naming where and the key."""
    if not isinstance(entry, dict):
        raise UserError(f"{where}: must be a mapping with repo, versions and the spec's keys")
    unknown = sorted(str(key) for key in entry if key not in KNOWN_KEYS)
    if unknown:
        raise UserError(
            f"{where}: unknown key {unknown[0]!r}; the keys are {', '.join(KNOWN_KEYS)} "
            "(docs/datasets.md)"
        )
    repo = _optional_text(entry, "repo", where)
    if repo is None:
        raise UserError(f"{where}: the field repo must be a non-empty string")
    versions = _strings(entry.get("versions"))
    if not versions:
        raise UserError(f"{where}: the field versions must be a list of versions")
    python = _optional_text(entry, "python", where)
    if python is not None and not _PYTHON.match(python):
        raise UserError(f'{where}: the field python must be a version like "3.9", not {python!r}')
    raw_packages = entry.get("packages")
    environment_packages: str | None = None
    debian_packages: tuple[str, ...] = ()
    if python is not None:
        environment_packages = _optional_text(entry, "packages", where)
    elif raw_packages is not None:
        debian_packages = _strings(raw_packages) or ()
        if not isinstance(raw_packages, list) or not all(
            PACKAGE_PATTERN.match(name) for name in debian_packages
        ):
            raise UserError(
                f"{where}: the field packages must be a list of Debian package names "
                "(or give python: for the official form)"
            )
    pip = _string_list(entry, "pip", where)
    if not all(_PINNED.match(requirement) for requirement in pip):
        raise UserError(f"{where}: the field pip must list pinned requirements, NAME==VERSION")
    base_image = entry.get("base_image", DEFAULT_BASE_IMAGE)
    if not isinstance(base_image, str) or not _IMAGE.match(base_image):
        raise UserError(f"{where}: the field base_image must be an image name")
    eval_type = entry.get("eval_type", "pass_and_fail")
    if eval_type not in EVAL_TYPES:
        raise UserError(f"{where}: the field eval_type must be one of {', '.join(EVAL_TYPES)}")
    test_cmd = _optional_text(entry, "test_cmd", where)
    log_parser = _optional_text(entry, "log_parser", where)
    if python is None and (test_cmd is None or log_parser is None):
        missing = "test_cmd" if test_cmd is None else "log_parser"
        raise UserError(f"{where}: the field {missing} must be a non-empty string")
    return Spec(
        repo=repo,
        versions=versions,
        test_cmd=test_cmd,
        log_parser=log_parser,
        origin=origin,
        python=python,
        environment_packages=environment_packages,
        pip_packages=_string_list(entry, "pip_packages", where),
        pre_install=_string_list(entry, "pre_install", where),
        install=_optional_text(entry, "install", where),
        eval_commands=_string_list(entry, "eval_commands", where),
        requirements_paths=_string_list(entry, "requirements_paths", where),
        environment_yml_paths=_string_list(entry, "environment_yml_paths", where),
        packages=debian_packages,
        pip=pip,
        base_image=base_image,
        eval_type=eval_type,
        ignored_keys=tuple(key for key in IGNORED_OFFICIAL_KEYS if key in entry),
    )


def load_specs(path: Path) -> list[Spec]:
    """The specifications of a --specs file. Raises UserError naming the file and entry."""
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_VersionLoader)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file; pass --specs FILE (docs/datasets.md)") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: cannot be read ({error})") from None
    except yaml.YAMLError:
        raise UserError(f"{path}: not valid YAML") from None
    if not isinstance(data, dict) or not isinstance(data.get("specs"), list):
        raise UserError(f"{path}: must be a mapping with a list `specs:` (docs/datasets.md)")
    return [
        parse_spec(entry, f"{path}: specs[{index}]") for index, entry in enumerate(data["specs"])
    ]


@dataclass(frozen=True)
class OfficialTables:
    """The official tables as shipped: the specs and where they came from."""

    specs: tuple[Spec, ...]
    provenance: dict[str, Any]


@functools.cache
def official_tables() -> OfficialTables:
    """The official install specifications of SWE-bench's Python repositories."""
    document = json.loads(OFFICIAL_SPECS_FILE.read_text(encoding="utf-8"))
    origin = f"official swebench {document['provenance']['version']}"
    specs = []
    for repo, entry in document["repos"].items():
        for version, values in entry["versions"].items():
            specs.append(
                parse_spec(
                    {
                        "repo": repo,
                        "versions": [version],
                        "log_parser": entry["log_parser"],
                        "requirements_paths": entry["requirements_paths"],
                        "environment_yml_paths": entry["environment_yml_paths"],
                        **values,
                    },
                    f"{OFFICIAL_SPECS_FILE.name}: {repo} {version}",
                    origin=origin,
                )
            )
    return OfficialTables(tuple(_with_offline_additions(specs)), document["provenance"])


def _with_offline_additions(specs: list[Spec]) -> list[Spec]:
    """The official specs with ssebench's additions for grading without network."""
    document = yaml.load(OFFLINE_ADDITIONS_FILE.read_text(encoding="utf-8"), Loader=_VersionLoader)
    for index, addition in enumerate(document["additions"]):
        where = f"{OFFLINE_ADDITIONS_FILE.name}: addition {index + 1}"
        versions = _string_list(addition, "versions", where)
        for position, spec in enumerate(specs):
            if spec.repo != addition["repo"] or not set(spec.versions) & set(versions):
                continue
            specs[position] = replace(
                spec,
                pip_packages=(*spec.pip_packages, *_string_list(addition, "pip_packages", where)),
                eval_commands=(
                    *spec.eval_commands,
                    *_string_list(addition, "eval_commands", where),
                ),
                deviations=(*spec.deviations, str(addition["reason"])),
            )
    return specs


def find_spec(specs: Sequence[Spec], repo: str, version: str) -> Spec | None:
    """The user's spec for repo and version, else the official one, else None.

    A user's spec of the official form that leaves out the repository's log parser or
    requirement paths takes them from the official tables."""
    official = next(
        (
            spec
            for spec in official_tables().specs
            if spec.repo == repo and version in spec.versions
        ),
        None,
    )
    for spec in specs:
        if spec.repo == repo and version in spec.versions:
            if official is None or not spec.official_form:
                return spec
            return _with_repository_fields(spec, official)
    return official


def _with_repository_fields(spec: Spec, official: Spec) -> Spec:
    return replace(
        spec,
        log_parser=spec.log_parser or official.log_parser,
        requirements_paths=spec.requirements_paths or official.requirements_paths,
        environment_yml_paths=spec.environment_yml_paths or official.environment_yml_paths,
    )
