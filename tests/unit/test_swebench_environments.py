"""Environments of official-form specs: the real dev instances import with no --specs,
into Dockerfiles that carry out the official steps (built for real in
tests/docker/test_swebench_dev.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from ssebench.swebench.builds import official_image
from ssebench.swebench.environments import (
    requirement_lines,
    resolution_date,
    split_pre_install,
)
from tests.cli import ssebench
from tests.git_server import git_daemon, lay_out
from tests.swebench_dev import INSTANCES, unpack_repositories


@pytest.fixture(scope="module")
def dev_import(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dev")
    repos = unpack_repositories(root / "repos")
    out = root / "dev"
    done = ssebench(
        "dataset", "import", "swebench", str(INSTANCES), "--out", str(out),
        "--repos", str(repos), "--python-images", "debian",
        "--python-substitute", "3.8=3.9", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["skipped"] == []
    assert summary["unused_fields"] == ["hints_text", "query", "task_id"]
    return out


def _environment(dev_import: Path, task: str) -> dict[str, object]:
    grading = json.loads((dev_import / task / "swebench.json").read_text())
    return grading["environment"]  # type: ignore[no-any-return]


def test_every_dev_instance_imports_with_no_specs_from_the_official_tables(
    dev_import: Path,
) -> None:
    astroid = _environment(dev_import, "pylint-dev-astroid-1268")
    assert astroid["python"] == "3.9" and astroid["image"] == "ssebench/python:3.9"
    assert str(astroid["spec"]).startswith("official swebench 4.1.0 (pylint-dev/astroid")
    assert astroid["deviations"] == []
    dockerfile = (dev_import / "pylint-dev-astroid-1268/environment/Dockerfile").read_text()
    assert dockerfile.startswith("# Written by `ssebench dataset import swebench`")
    assert "FROM ssebench/python:3.9 AS environment" in dockerfile
    assert "python3 -m venv /opt/miniconda3/envs/testbed" in dockerfile
    assert "cd /testbed && python -m pip install -e ." in dockerfile
    assert "SETUPTOOLS_SCM_PRETEND_VERSION=2.9" in dockerfile
    # The CA stays in the install stage; the final stage copies the environment only.
    final = dockerfile.rsplit("\nFROM ", 1)[1]
    assert "build-ca" not in final and "COPY --from=install" in final
    # The repository at environment_setup_commit is the install's, the instance's its own.
    package = dev_import / "pylint-dev-astroid-1268/environment/package"
    assert (package / "setup.cfg").is_file() and not (package / ".git").exists()


def test_a_substitute_python_is_recorded_as_a_deviation(dev_import: Path) -> None:
    pydicom = _environment(dev_import, "pydicom-pydicom-1194")
    assert pydicom["python"] == "3.9"
    # ssebench's addition to the official pydicom 2.0 spec (offline_additions.yaml), then
    # the substitute.
    assert len(pydicom["deviations"]) == 2, pydicom["deviations"]
    assert pydicom["deviations"][0].startswith("ssebench added pydicom-data==1.0.0 ")
    assert pydicom["deviations"][1] == "Python 3.9 in place of the specification's 3.8"


def test_requirements_come_from_the_setup_commit_and_resolve_as_of_a_date(
    dev_import: Path,
) -> None:
    setup = dev_import / "sqlfluff-sqlfluff-2386/environment/setup"
    requirements = (setup / "requirements.txt").read_text().splitlines()
    # requirements_dev.txt at environment_setup_commit, with the yanked name rewritten.
    assert "types-setuptools" in requirements and "pytest" in requirements
    assert (setup / "pins.txt").read_text().splitlines() == ["coverage==6.2"]
    sqlfluff = _environment(dev_import, "sqlfluff-sqlfluff-2386")
    # The setup commit (2022-01-30) is later than the instance (2022-01-21).
    assert sqlfluff["resolved_as_of"] == "2022-01-30"
    assert sqlfluff["import_root"] == "src"
    task = yaml.safe_load((dev_import / "sqlfluff-sqlfluff-2386/task.yaml").read_text())
    hidden = task["hidden_test"].splitlines()
    assert hidden[0] == 'export PYTHONPATH="$PWD/src""${PYTHONPATH:+:$PYTHONPATH}"'
    assert hidden[1] == "echo '>>>>> Start Test Output'"
    assert hidden[2] == "pytest -rA test/core/rules/docstring_test.py test/rules/std_L054_test.py"


def test_the_resolution_date_is_never_before_the_python() -> None:
    assert resolution_date("2017-03-01T10:00:00Z", None, python="3.9") == "2020-10-05"
    assert resolution_date("2021-11-21T16:15:23Z", "2021-12-29T00:00:00+01:00", python="3.9") == (
        "2021-12-29"
    )
    assert resolution_date(None, None, python="3.9") is None


def test_pre_install_apt_lines_become_debian_packages() -> None:
    packages, shell = split_pre_install(
        (
            "apt-get update && apt-get install -y ffmpeg libsm6 libgl1-mesa-glx",
            "sed -i 's/pytest/pytest -rA/' tox.ini",
        )
    )
    assert packages == ("ffmpeg", "libsm6", "libgl1")
    assert shell == ("sed -i 's/pytest/pytest -rA/' tox.ini",)


def test_requirement_lines_as_the_harness_keeps_them() -> None:
    text = "# dev\n-e .\n-r other.txt\ntypes-pkg_resources==0.1\npytest>=6\n\n.[test]\n"
    assert requirement_lines(text) == ["types-setuptools", "pytest>=6"]


def test_a_python_no_debian_release_carries_is_one_line_at_import(
    dev_import: Path, tmp_path: Path
) -> None:
    record = json.loads(INSTANCES.read_text().splitlines()[1])  # astroid, Python 3.9
    specs = tmp_path / "specs.yaml"
    specs.write_text(
        "specs:\n  - {repo: pylint-dev/astroid, versions: ['2.9'], python: '3.6',"
        " install: python -m pip install -e ., test_cmd: pytest -rA}\n"
    )
    instances = tmp_path / "instances.jsonl"
    instances.write_text(json.dumps(record) + "\n")
    repos = unpack_repositories(tmp_path / "repos")
    done = ssebench(
        "dataset", "import", "swebench", str(instances), "--out", str(tmp_path / "out"),
        "--repos", str(repos), "--specs", str(specs), "--python-images", "debian",
    )  # fmt: skip
    assert done.returncode == 1
    skipped = [line for line in done.stdout.splitlines() if line.startswith("skipped")]
    assert skipped == [
        "skipped pylint-dev__astroid-1268: its specification needs Python 3.6, which no "
        "Debian release carries (--python-images debian makes 3.9, 3.11, 3.13); use "
        "--python-images official on a machine that can pull python:X.Y-slim, or give a "
        "spec with another python in --specs"
    ]


def test_the_published_forms_import_the_same_tasks_cloned_from_a_git_server(
    dev_import: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No --repos: ssebench fetches the commits the instances need into its cache, from a
    real git server on loopback; a JSON array, a parquet file and a dataset through the
    datasets library (offline) import what the JSONL import gave."""
    import pyarrow
    import pyarrow.parquet

    records = [json.loads(line) for line in INSTANCES.read_text().splitlines()]
    array = tmp_path / "instances.json"
    array.write_text(json.dumps(records))
    parquet = tmp_path / "published" / "data" / "dev-00000-of-00001.parquet"
    parquet.parent.mkdir(parents=True)
    pyarrow.parquet.write_table(pyarrow.Table.from_pylist(records), parquet)
    base = lay_out(unpack_repositories(tmp_path / "bare"), tmp_path / "served")
    cache = tmp_path / "cache"
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    sources = {
        "json": [str(array)],
        "parquet": [str(parquet)],
        "datasets": ["--dataset", str(parquet.parent.parent), "--split", "dev"],
    }
    with git_daemon(base) as template:
        for kind, source in sources.items():
            done = ssebench(
                "dataset", "import", "swebench", *source, "--out", str(tmp_path / kind),
                "--clone-from", template, "--python-images", "debian",
                "--python-substitute", "3.8=3.9", "--json",
                env={"SSEBENCH_REPOSITORY_CACHE": str(cache)},
            )  # fmt: skip
            assert done.returncode == 0, (kind, done.stderr)
            assert json.loads(done.stdout)["skipped"] == [], kind
            for task in sorted(path.name for path in dev_import.iterdir() if path.is_dir()):
                for name in ("task.yaml", "swebench.json", "environment/Dockerfile"):
                    mine = (tmp_path / kind / task / name).read_text()
                    assert mine == (dev_import / task / name).read_text(), (kind, task, name)
    # Three repositories, each with only the commits the instances need (depth 1).
    assert sorted(path.name for path in cache.iterdir()) == [
        "pydicom__pydicom.git",
        "pylint-dev__astroid.git",
        "sqlfluff__sqlfluff.git",
    ]
    count = subprocess.run(
        ["git", "-C", str(cache / "pylint-dev__astroid.git"), "rev-list", "--all", "--count"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert int(count.stdout) == 2  # base_commit and environment_setup_commit


def test_official_images_are_the_environments_with_their_names(tmp_path: Path) -> None:
    """--official-images: FROM the harness's image name (`__` as `_1776_`), nothing
    installed; a spec Python older than the runtime's is one line at import."""
    assert official_image("pylint-dev__astroid-1268", "swebench", "latest") == (
        "swebench/sweb.eval.x86_64.pylint-dev_1776_astroid-1268:latest"
    )
    assert official_image("Org__Repo-7", "localhost:5000/mirror/", "v2") == (
        "localhost:5000/mirror/sweb.eval.x86_64.org_1776_repo-7:v2"
    )
    repos = unpack_repositories(tmp_path / "repos")
    done = ssebench(
        "dataset", "import", "swebench", str(INSTANCES), "--out", str(tmp_path / "out"),
        "--repos", str(repos), "--official-images", "--official-tag", "v1", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    dockerfile = (tmp_path / "out/pylint-dev-astroid-1268/environment/Dockerfile").read_text()
    froms = [line for line in dockerfile.splitlines() if line.startswith("FROM")]
    assert froms == ["FROM swebench/sweb.eval.x86_64.pylint-dev_1776_astroid-1268:v1"]
    assert "ENV PATH=/opt/miniconda3/envs/testbed/bin:$PATH" in dockerfile
    assert "pip install" not in dockerfile
    assert not (tmp_path / "out/pylint-dev-astroid-1268/environment/package").exists()
    record = json.loads((tmp_path / "out/pylint-dev-astroid-1268/swebench.json").read_text())
    assert record["environment"]["official_image"] is True
    # pydicom 2.0's official spec names Python 3.8: refused, with the way out.
    skipped = {item["instance_id"]: item["reason"] for item in json.loads(done.stdout)["skipped"]}
    assert skipped["pydicom__pydicom-1194"].startswith(
        "its official image's testbed environment has Python 3.8, first on PATH, and "
        "ssebench's runtime needs 3.9 or later there"
    )
