"""Install specifications for classic instances (`--specs FILE`, docs/datasets.md).

Classic SWE-bench instances carry no build of their own; the harness used to look
their repository and version up in tables of its own. ssebench takes that from a
YAML file the user writes instead:

    specs:
      - repo: example/calc              # OWNER/NAME, as the instances name it
        versions: ["1.0", "1.1"]        # the instances' `version` values it covers
        packages: [python3, python3-venv]   # Debian packages (optional)
        pip: ["pytest==8.3.3"]          # pinned requirements, in a venv on PATH (optional)
        test_cmd: python -m pytest -rA  # run with the test_patch's files appended
        log_parser: parse_log_pytest    # a name in swebench's log parser registry
        base_image: debian:bookworm-slim    # optional
        eval_type: pass_and_fail        # optional

From a specification the import writes the task's environment/Dockerfile.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ssebench.errors import UserError
from ssebench.swebench.instances import EVAL_TYPES
from ssebench.tasks.model import DEFAULT_BASE_IMAGE, PACKAGE_PATTERN

# A requirement pinned to one version: NAME[extras]==VERSION.
_PINNED = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?==[A-Za-z0-9.!+_-]+$")
_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]*$")
ENVIRONMENT_VENV = "/opt/ssebench-env"


@dataclass(frozen=True)
class Spec:
    repo: str
    versions: tuple[str, ...]
    test_cmd: str
    log_parser: str
    packages: tuple[str, ...] = ()
    pip: tuple[str, ...] = ()
    base_image: str = DEFAULT_BASE_IMAGE
    eval_type: str = "pass_and_fail"

    def dockerfile(self) -> str:
        """The environment/Dockerfile of a task built from this specification.

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


def _strings(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(item, (str, int, float)) for item in value):
        return tuple(str(item) for item in value)
    return None


def _spec(entry: Any, where: str) -> Spec:
    if not isinstance(entry, dict):
        raise UserError(f"{where}: must be a mapping with repo, versions, test_cmd, log_parser")
    for key in ("repo", "test_cmd", "log_parser"):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            raise UserError(f"{where}: the field {key} must be a non-empty string")
    versions = _strings(entry.get("versions"))
    if not versions:
        raise UserError(f"{where}: the field versions must be a list of versions")
    packages = _strings(entry.get("packages", [])) or ()
    if not all(PACKAGE_PATTERN.match(name) for name in packages) or not isinstance(
        entry.get("packages", []), list
    ):
        raise UserError(f"{where}: the field packages must be a list of Debian package names")
    pip = _strings(entry.get("pip", []))
    if pip is None or not all(_PINNED.match(requirement) for requirement in pip):
        raise UserError(f"{where}: the field pip must list pinned requirements, NAME==VERSION")
    base_image = entry.get("base_image", DEFAULT_BASE_IMAGE)
    if not isinstance(base_image, str) or not _IMAGE.match(base_image):
        raise UserError(f"{where}: the field base_image must be an image name")
    eval_type = entry.get("eval_type", "pass_and_fail")
    if eval_type not in EVAL_TYPES:
        raise UserError(f"{where}: the field eval_type must be one of {', '.join(EVAL_TYPES)}")
    return Spec(
        repo=entry["repo"],
        versions=versions,
        test_cmd=entry["test_cmd"].strip(),
        log_parser=entry["log_parser"],
        packages=packages,
        pip=pip,
        base_image=base_image,
        eval_type=eval_type,
    )


def load_specs(path: Path) -> list[Spec]:
    """The specifications of a --specs file. Raises UserError naming the file and entry."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: no such file; pass --specs FILE (docs/datasets.md)") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: cannot be read ({error})") from None
    except yaml.YAMLError:
        raise UserError(f"{path}: not valid YAML") from None
    if not isinstance(data, dict) or not isinstance(data.get("specs"), list):
        raise UserError(f"{path}: must be a mapping with a list `specs:` (docs/datasets.md)")
    return [_spec(entry, f"{path}: specs[{index}]") for index, entry in enumerate(data["specs"])]


def find_spec(specs: list[Spec], repo: str, version: str) -> Spec | None:
    for spec in specs:
        if spec.repo == repo and version in spec.versions:
            return spec
    return None
