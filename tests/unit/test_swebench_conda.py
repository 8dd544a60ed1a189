"""environment.yml specs (matplotlib, xarray): the conda environment as pip requirements
and Debian packages, read from real files (tests/fixtures/conda/README.md), and an
import of an xarray instance whose repository has one."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ssebench.swebench.conda import CondaUntranslatable, pip_version, translate
from ssebench.swebench.environments import requirement_name
from tests.cli import ssebench

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "conda"


def test_conda_versions_become_pip_specifiers() -> None:
    assert pip_version("") == ""
    assert pip_version("=1.23") == "==1.23.*"  # conda's "=" is a prefix
    assert pip_version("=1.23.0=py39h6c91a56_0") == "==1.23.0"  # exact with a build
    assert pip_version("1.23.0") == "==1.23.0"
    assert pip_version("1.2.* py39_0") == "==1.2.*"
    assert pip_version(">=1.20, <2") == ">=1.20,<2"
    assert pip_version("!=6.1.2,>=3.0.0") == "!=6.1.2,>=3.0.0"
    assert pip_version("1.2|1.3") is None


def test_xarrays_environment_yml() -> None:
    text = (FIXTURES / "xarray-environment.yml").read_text()
    conda = translate(text, "ci/requirements/environment.yml")
    requirements = list(conda.requirements)
    # conda-forge's own names become the PyPI projects they package.
    assert "dask" in requirements and "dask-core" not in requirements
    assert "matplotlib" in requirements and "scitools-iris" in requirements
    assert "pydap[server]" in requirements
    # Versions as written, comments gone, pip's own section as it is, last.
    assert "mypy==1.18.1" in requirements and "numpy>=2.2" in requirements
    assert "pandas-stubs<=2.2.3.241126" in requirements
    assert requirements[-3:] == ["jax", "types-defusedxml", "types-pexpect"]
    # A library is Debian's; pip itself is the venv's.
    assert conda.apt_packages == ("libhdf5-dev",)
    assert conda.left_out == ("pip: the venv's own pip",)
    assert len(requirements) == 59  # 58 conda names, less hdf5 and pip, and 3 of pip


def test_matplotlibs_environment_yml() -> None:
    text = (FIXTURES / "matplotlib-environment.yml").read_text()
    conda = translate(text, "environment.yml")
    assert conda.apt_packages == ("build-essential", "pkg-config", "graphviz")
    assert [item.split(":")[0] for item in conda.left_out] == [
        "pygobject",
        "python",
        "wxpython",
        "pip",
        "gtk4",
    ]
    assert "PyQt5" in conda.requirements
    assert "pydata-sphinx-theme==0.18.0.*" in conda.requirements
    assert "nbconvert[execute]!=6.0.0,!=6.0.1,!=7.3.0,!=7.3.1" in conda.requirements
    assert "mpl-sphinx-theme~=3.11.0" in conda.requirements


@pytest.mark.parametrize(
    ("dependency", "named"),
    [
        ("cdms2", "cdms2 (cdms2 is published on conda only)"),
        ("numpy 1.2|1.3", "'numpy 1.2|1.3' (not a conda package spec ssebench reads)"),
    ],
)
def test_what_pip_cannot_have_is_one_line_naming_it(dependency: str, named: str) -> None:
    text = f"name: x\ndependencies:\n  - scipy\n  - {dependency}\n"
    with pytest.raises(CondaUntranslatable) as caught:
        translate(text, "environment.yml")
    assert str(caught.value) == (
        f"its environment.yml asks for what a pip environment cannot have: {named}; "
        "give a spec with requirements in --specs"
    )


def test_a_file_without_dependencies_is_one_line() -> None:
    with pytest.raises(CondaUntranslatable, match=r"^environment.yml has no list"):
        translate("name: x\n", "environment.yml")


def git(*arguments: str, cwd: Path) -> str:
    done = subprocess.run(["git", *arguments], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_an_xarray_instance_imports_with_its_environment_yml(tmp_path: Path) -> None:
    """No --specs: the official xarray 2024.05 spec reads ci/requirements/environment.yml
    at environment_setup_commit; its pins win over the file's words for the same names."""
    work = tmp_path / "work"
    (work / "ci/requirements").mkdir(parents=True)
    (work / "xarray").mkdir()
    (work / "ci/requirements/environment.yml").write_text(
        (FIXTURES / "xarray-environment.yml").read_text()
    )
    (work / "setup.py").write_text("from setuptools import setup\nsetup(name='xarray')\n")
    (work / "xarray/__init__.py").write_text("")
    git("init", "-q", "-b", "main", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@t", "add", ".", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "setup", cwd=work)
    commit = git("rev-parse", "HEAD", cwd=work)
    repos = tmp_path / "repos"
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(work), str(repos / "pydata__xarray.git")], check=True
    )
    test_patch = (
        "diff --git a/xarray/tests/test_x.py b/xarray/tests/test_x.py\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/xarray/tests/test_x.py\n@@ -0,0 +1 @@\n+def test_x(): pass\n"
    )
    record = {
        "repo": "pydata/xarray",
        "instance_id": "pydata__xarray-9999",
        "base_commit": commit,
        "environment_setup_commit": commit,
        "patch": test_patch.replace("tests/test_x.py", "x.py"),
        "test_patch": test_patch,
        "problem_statement": "p",
        "version": "2024.05",
        "created_at": "2024-06-01T00:00:00Z",
        "FAIL_TO_PASS": json.dumps(["xarray/tests/test_x.py::test_x"]),
        "PASS_TO_PASS": "[]",
    }
    instances = tmp_path / "instances.jsonl"
    instances.write_text(json.dumps(record) + "\n")
    out = tmp_path / "out"
    done = ssebench(
        "dataset", "import", "swebench", str(instances), "--out", str(out),
        "--repos", str(repos), "--python-images", "official", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["skipped"] == []
    task = out / "pydata-xarray-9999"
    setup = task / "environment/setup"
    requirements = (setup / "requirements.txt").read_text().splitlines()
    pins = (setup / "pins.txt").read_text().splitlines()
    assert {"numpy==1.23.0", "pandas==1.5.3", "dask==2022.8.1"} <= set(pins)
    # The spec pins numpy, pandas and dask: the file's numpy>=2.2, pandas and dask-core
    # give way; the rest of the file is there.
    names = {requirement_name(line) for line in requirements}
    assert not names & {"numpy", "pandas", "dask"}
    assert {"pandas-stubs", "numbagg"} <= names
    assert "pandas-stubs<=2.2.3.241126" in requirements and "scitools-iris" in requirements
    dockerfile = (task / "environment/Dockerfile").read_text()
    assert "FROM python:3.10-slim AS environment" in dockerfile
    assert "libhdf5-dev" in dockerfile.split("FROM environment AS install")[0]
    environment = json.loads((task / "swebench.json").read_text())["environment"]
    assert environment["deviations"] == [
        "environment.yml made with pip in place of conda (swebench/conda.py)",
        "left out of environment.yml: pip: the venv's own pip",
    ]
