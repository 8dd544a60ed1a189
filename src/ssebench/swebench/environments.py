"""The environment of a classic instance whose specification has the official form.

The official harness builds three images: an environment per repository and version
(a conda env `testbed` with the spec's Python, packages and pip_packages), an instance
image on it (the repository at /testbed, `pre_install`, `install`), and runs an eval
script (`eval_commands`, the test command on the test_patch's test files). ssebench
does the same steps with pip in place of conda, in the task's environment/Dockerfile:

    FROM <the spec's Python image>   python:X.Y-slim, or ssebench/python:X.Y made offline
    apt packages of pre_install      Ubuntu names that Debian lacks mapped (APT_RENAMES)
    a venv at the official env's place, /opt/miniconda3/envs/testbed, first on PATH
    requirements.txt of the repository at environment_setup_commit (the harness's own
    rewrite of yanked names), or its environment.yml as pip requirements and Debian
    packages (conda.py), the conda-style `packages`, `pip_packages`
    the repository at environment_setup_commit at /testbed, pre_install, `install`

The steps up to `install` are the same text for every instance of a repository and
version, so Docker's build cache makes them one environment image that all of them
share; the instance's tree then replaces /testbed in the case layer.

Unpinned requirements resolve as of a date (pip's --uploaded-prior-to): the latest of
the instance's created_at, the date of the environment_setup_commit (whose requirements
are installed: they may name releases made after the instance) and the release of the
Python in use, so that a 2019 instance gets the pytest of 2019 but never a package older
than its Python or its requirements. Exact `==` pins are
installed as named first, whatever their date. Grading runs the tests with the graded
tree's import root first on PYTHONPATH, so that the patched copy is what is imported
(the editable install points at /testbed, the agent's tree).
"""

from __future__ import annotations

import datetime
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from ssebench.swebench.conda import CondaUntranslatable, normalized_name, translate
from ssebench.swebench.instances import Instance
from ssebench.swebench.specs import Spec

# The first release of each Python: requirements never resolve to a date before it.
PYTHON_RELEASES = {
    "3.5": "2015-09-13",
    "3.6": "2016-12-23",
    "3.7": "2018-06-27",
    "3.8": "2019-10-14",
    "3.9": "2020-10-05",
    "3.10": "2021-10-04",
    "3.11": "2022-10-24",
    "3.12": "2023-10-02",
    "3.13": "2024-10-07",
}
ENVIRONMENT = "/opt/miniconda3/envs/testbed"
# The oldest Python the runtime (the tool layer's python3, first on PATH) runs on.
MIN_RUNTIME_PYTHON = (3, 9)
TESTBED = "/testbed"
# The context folder of what the install stage reads: the repository at
# environment_setup_commit and the requirements written from it.
SETUP_FOLDER = "setup"
PACKAGE_FOLDER = "package"
# Ubuntu package names of the official pre_install lines that Debian names otherwise.
APT_RENAMES = {"libgl1-mesa-glx": "libgl1", "libgl1-mesa-dev": "libgl1-mesa-dev"}
# The harness's rewrite of requirement names yanked from PyPI (REPLACE_REQ_PACKAGES).
REQUIREMENT_RENAMES = {"types-pkg_resources": "types-setuptools"}
# The build tools every install may use: the editable installs of today's pip need a
# setuptools with PEP 660, which an old date would not give.
BUILD_TOOLS = ("setuptools>=64,<81", "wheel", "setuptools-scm<9")
_APT_INSTALL = re.compile(
    r"^\s*(?:apt-get update\s*&&\s*)?(?:apt-get|apt)\s+install\s+(?P<args>[^;&|]*)$"
)
_NAME_END = r"[<>=!~;\[\s]"
_PIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?==[^\s;]+(\s*;.*)?$")


class EnvironmentUnavailable(Exception):
    """The spec's environment cannot be made here; the message is the one-line reason."""


@dataclass(frozen=True)
class EnvironmentPlan:
    """What the environment of one instance is made of, recorded in swebench.json."""

    python: str
    image: str
    resolved_as_of: str | None
    apt_packages: tuple[str, ...]
    shell_pre_install: tuple[str, ...]
    pins: tuple[str, ...]
    requirements: tuple[str, ...]
    install: str | None
    import_root: str
    spec_origin: str
    deviations: tuple[str, ...]

    def record(self) -> dict[str, object]:
        return {
            "python": self.python,
            "image": self.image,
            "resolved_as_of": self.resolved_as_of,
            "spec": self.spec_origin,
            "import_root": self.import_root,
            "deviations": list(self.deviations),
        }


def resolution_date(*dates: str | None, python: str) -> str | None:
    """The day requirements resolve as of (YYYY-MM-DD): the latest of dates (the
    instance's created_at, the environment_setup_commit's date) and its Python's release;
    None when no date is known."""
    known = [date[:10] for date in dates if date and re.match(r"^\d{4}-\d{2}-\d{2}", date)]
    if not known:
        return None
    return max(*known, PYTHON_RELEASES.get(python, "1970-01-01"))


def split_pre_install(lines: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(Debian packages, the other shell lines) of a spec's pre_install."""
    packages: list[str] = []
    shell: list[str] = []
    for line in lines:
        match = _APT_INSTALL.match(line)
        if match is None:
            shell.append(line)
            continue
        for word in shlex.split(match.group("args")):
            if not word.startswith("-"):
                packages.append(APT_RENAMES.get(word, word))
    return tuple(dict.fromkeys(packages)), tuple(shell)


def requirement_name(line: str) -> str:
    """The project a requirement line names, normalized as pip compares names."""
    return normalized_name(re.split(_NAME_END, line.strip(), maxsplit=1)[0])


def requirement_lines(text: str) -> list[str]:
    """The requirements of a requirements file as the harness keeps them: comments, `-e
    .` and `.[test...]` lines left out, yanked names rewritten."""
    kept = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "-e .", ".[test", "-r", "--")):
            continue
        name = re.split(_NAME_END, line, maxsplit=1)[0]
        if name in REQUIREMENT_RENAMES:
            line = REQUIREMENT_RENAMES[name]
        kept.append(line)
    return kept


def included_files(text: str) -> list[str]:
    """The files a requirements file includes with `-r FILE`."""
    return [line.strip()[2:].strip() for line in text.splitlines() if line.strip().startswith("-r")]


def import_root(tree: Path) -> str:
    """Where the project's packages are in its tree: "src" for a src layout, else "."."""
    source = tree / "src"
    if source.is_dir() and any(source.glob("*/__init__.py")):
        return "src"
    return "."


def plan_environment(
    spec: Spec,
    instance: Instance,
    *,
    image: str,
    resolve_by_date: bool,
    requirements_text: str | None,
    tree: Path,
    setup_commit_date: str | None = None,
    environment_yml_text: str | None = None,
) -> EnvironmentPlan:
    """The environment of instance from its official-form spec, starting from image
    (its Python's, python_images.PythonImageSource). EnvironmentUnavailable (one line)
    when a part of it cannot be made."""
    assert spec.python is not None
    packages = spec.environment_packages or ""
    requirements: list[str] = []
    deviations = list(spec.deviations)
    conda_apt: tuple[str, ...] = ()
    if packages == "requirements.txt":
        if requirements_text is None:
            raise EnvironmentUnavailable(
                f"its specification reads requirements.txt, but none of "
                f"{', '.join(spec.requirements_paths) or '(no paths)'} is in the repository "
                "at environment_setup_commit"
            )
        requirements.extend(requirement_lines(requirements_text))
    elif packages == "environment.yml":
        if environment_yml_text is None:
            raise EnvironmentUnavailable(
                f"its specification reads environment.yml, but none of "
                f"{', '.join(spec.environment_yml_paths) or '(no paths)'} is in the repository "
                "at environment_setup_commit"
            )
        try:
            conda = translate(environment_yml_text, "environment.yml")
        except CondaUntranslatable as reason:
            raise EnvironmentUnavailable(str(reason)) from None
        # The spec's own pins win over the file's looser words for the same project, as
        # the harness's `pip install` of pip_packages after the conda environment does.
        pinned = {requirement_name(line) for line in spec.pip_packages if _PIN.match(line)}
        requirements.extend(
            line for line in conda.requirements if requirement_name(line) not in pinned
        )
        conda_apt = conda.apt_packages
        deviations.append("environment.yml made with pip in place of conda (swebench/conda.py)")
        deviations.extend(f"left out of environment.yml: {item}" for item in conda.left_out)
    elif packages:
        requirements.extend(shlex.split(packages))
    requirements.extend(spec.pip_packages)
    pins = tuple(line for line in requirements if _PIN.match(line))
    unpinned = tuple(line for line in requirements if not _PIN.match(line))
    apt_packages, shell = split_pre_install(spec.pre_install)
    apt_packages = tuple(dict.fromkeys((*apt_packages, *conda_apt)))
    if shell:
        deviations.append(
            "pre_install's shell lines ran on the repository at environment_setup_commit "
            "before install, not on the instance's tree"
        )
    return EnvironmentPlan(
        python=spec.python,
        image=image,
        resolved_as_of=resolution_date(instance.created_at, setup_commit_date, python=spec.python)
        if resolve_by_date
        else None,
        apt_packages=apt_packages,
        shell_pre_install=shell,
        pins=pins,
        requirements=unpinned,
        install=spec.install,
        import_root=import_root(tree),
        spec_origin=f"{spec.origin} ({spec.repo} {', '.join(spec.versions)})",
        deviations=tuple(deviations),
    )


def dockerfile(plan: EnvironmentPlan, *, package_version: str) -> str:
    """The environment/Dockerfile of the plan. Its context holds setup/ (pins.txt,
    requirements.txt) and package/ (the repository at environment_setup_commit)."""
    apt = sorted({"git", "ca-certificates", *plan.apt_packages})
    pip = f"{ENVIRONMENT}/bin/python -m pip install --disable-pip-version-check --no-cache-dir"
    # Uploaded by the end of the day resolved_as_of: prior to the next day.
    prior_to = _next_day(plan.resolved_as_of) if plan.resolved_as_of else None
    dated = f" --uploaded-prior-to {prior_to}" if prior_to else ""
    steps = [
        f"python3 -m venv {ENVIRONMENT}",
        f"{pip} --upgrade pip {' '.join(shlex.quote(tool) for tool in BUILD_TOOLS)}",
    ]
    if plan.pins:
        steps.append(f"{pip} -r /tmp/ssebench-setup/pins.txt")
    if plan.requirements:
        steps.append(
            f"{pip}{dated} -c /tmp/ssebench-setup/pins.txt -r /tmp/ssebench-setup/requirements.txt"
        )
    install_lines = [f"cd {TESTBED}", *plan.shell_pre_install]
    if plan.install:
        install_lines.append(plan.install)
    # The install's own dependencies resolve as of the same date; its build uses the
    # build tools above (no isolated build environment of that date's setuptools).
    install_environment = [
        f"PATH={ENVIRONMENT}/bin:$PATH",
        "PIP_NO_BUILD_ISOLATION=0",
        f"SETUPTOOLS_SCM_PRETEND_VERSION={shlex.quote(package_version)}",
    ]
    if prior_to:
        install_environment.append(f"PIP_UPLOADED_PRIOR_TO={prior_to}")
    install_script = " && ".join(install_lines)
    lines = [
        "# Written by `ssebench dataset import swebench` from the install specification",
        f"# {plan.spec_origin}: the official harness's steps, with pip in place of conda.",
        f"FROM {plan.image} AS environment",
        "RUN apt-get update \\",
        " && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\",
        f"      {' '.join(apt)} \\",
        " && rm -rf /var/lib/apt/lists/*",
        "",
        "FROM environment AS install",
        "COPY build-ca/ /tmp/build-ca/",
        f"COPY {SETUP_FOLDER}/ /tmp/ssebench-setup/",
        "RUN set -e; \\",
        "    if [ -f /tmp/build-ca/ca-bundle.crt ]; then \\",
        "      export PIP_CERT=/tmp/build-ca/ca-bundle.crt; fi; \\",
        "    " + "; \\\n    ".join(steps),
        f"COPY {PACKAGE_FOLDER}/ {TESTBED}/",
        "RUN set -e; \\",
        "    if [ -f /tmp/build-ca/ca-bundle.crt ]; then \\",
        "      export PIP_CERT=/tmp/build-ca/ca-bundle.crt; fi; \\",
        f"    export {' '.join(install_environment)}; \\",
        f"    {install_script}",
        "",
        "FROM environment",
        f"COPY --from=install {ENVIRONMENT} {ENVIRONMENT}",
        f"ENV PATH={ENVIRONMENT}/bin:$PATH",
        "",
    ]
    return "\n".join(lines)


def _next_day(day: str) -> str:
    return (datetime.date.fromisoformat(day) + datetime.timedelta(days=1)).isoformat()


def setup_files(plan: EnvironmentPlan) -> dict[str, str]:
    """The files of the context's setup/ folder."""
    return {
        "pins.txt": "".join(f"{line}\n" for line in plan.pins),
        "requirements.txt": "".join(f"{line}\n" for line in plan.requirements),
    }


def test_setup(plan: EnvironmentPlan, eval_commands: tuple[str, ...]) -> str:
    """What the hidden step runs before the tests' start marker: the graded tree's
    import root first on PYTHONPATH, then the spec's eval_commands."""
    return test_setup_for(plan.import_root, eval_commands)


def test_setup_for(import_root: str, eval_commands: tuple[str, ...]) -> str:
    """test_setup of an environment whose package imports from import_root (a path
    relative to the repository, "." for its root)."""
    root = '"$PWD"' if import_root == "." else f'"$PWD/{import_root}"'
    return "\n".join([f'export PYTHONPATH={root}"${{PYTHONPATH:+:$PYTHONPATH}}"', *eval_commands])
