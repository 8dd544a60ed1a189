"""`ssebench dataset import swebench`: instances of a real local git repository become
ordinary task folders; bad instances are skipped with one line each."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from ssebench.errors import UserError
from ssebench.swebench.importer import task_id_for
from ssebench.swebench.markers import hidden_step_output, script_test_command
from ssebench.swebench.package import parser_registry
from ssebench.swebench.specs import find_spec, load_specs, official_tables
from ssebench.tasks import load_dataset
from ssebench.tasks.dataset import manifest_differences
from tests.cli import ssebench
from tests.swebench_project import (
    GEOMETRY_B,
    POINT,
    SPECS_YAML,
    TEST_GEOMETRY_FIXED,
    TEST_SCALE_FIXED,
    ShapesProject,
    make_shapes_project,
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> ShapesProject:
    return make_shapes_project(tmp_path_factory.mktemp("shapes"))


@pytest.fixture(scope="module")
def imported(project: ShapesProject, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One import of every instance, through the CLI, shared by the tests below."""
    root = tmp_path_factory.mktemp("import")
    instances = project.write_instances(root / "instances.jsonl")
    specs = root / "specs.yaml"
    specs.write_text(SPECS_YAML)
    out = root / "shapes"
    done = ssebench(
        "dataset", "import", "swebench", str(instances), "--out", str(out),
        "--repos", str(project.repos), "--specs", str(specs), "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert [item["task"] for item in summary["imported"]] == [
        "acme-shapes-1",
        "acme-shapes-1-overeager",
        "acme-shapes-2",
        "acme-shapes-3",
    ]
    assert summary["skipped"] == []
    return out


def test_every_instance_is_an_ordinary_task_with_a_current_manifest(imported: Path) -> None:
    dataset = load_dataset(imported)
    assert dataset.name == "shapes"
    assert [task.id for task in dataset.tasks] == [
        "acme-shapes-1",
        "acme-shapes-1-overeager",
        "acme-shapes-2",
        "acme-shapes-3",
    ]
    assert manifest_differences(dataset) == []
    for task in dataset.tasks:
        assert task.grader == "swebench"
        assert task.source_dir == "/testbed"
        assert task.language == "python"
        assert task.environment_dir == task.path / "environment"


def test_the_source_is_the_tree_at_base_commit_not_the_newest(imported: Path) -> None:
    repo = imported / "acme-shapes-1" / "repo"
    assert (repo / "shapes" / "geometry.py").read_text() == GEOMETRY_B
    assert not (repo / "shapes" / "scale.py").exists()  # added two commits later
    assert not (repo / ".git").exists()
    assert (imported / "acme-shapes-3" / "repo" / "shapes" / "point.py").read_text() == POINT


def test_hidden_holds_the_test_files_as_the_test_patch_leaves_them(imported: Path) -> None:
    hidden = imported / "acme-shapes-1" / "hidden"
    assert sorted(p.relative_to(hidden).as_posix() for p in hidden.rglob("*") if p.is_file()) == [
        "tests/test_geometry.py"
    ]
    assert (hidden / "tests" / "test_geometry.py").read_text() == TEST_GEOMETRY_FIXED
    assert (imported / "acme-shapes-2" / "hidden" / "tests" / "test_scale.py").read_text() == (
        TEST_SCALE_FIXED
    )


def test_task_yaml_prompt_reference_and_grading_data(
    imported: Path, project: ShapesProject
) -> None:
    folder = imported / "acme-shapes-1"
    task = yaml.safe_load((folder / "task.yaml").read_text())
    first = project.instances[0]
    assert task["prompt"] == first["problem_statement"]
    assert task["description"] == "perimeter_rect is wrong"
    assert "python -m pytest -rA -p no:cacheprovider tests/test_geometry.py" in task["hidden_test"]
    assert (folder / "reference.patch").read_text() == first["patch"]
    grading = json.loads((folder / "swebench.json").read_text())
    assert grading["FAIL_TO_PASS"] == ["tests/test_geometry.py::test_perimeter_rect"]
    assert grading["PASS_TO_PASS"] == json.loads(first["PASS_TO_PASS"])
    assert grading["log_parser"] == "parse_log_pytest"
    # The classic instance's test command is its specification's, on the test_patch's files.
    classic = yaml.safe_load((imported / "acme-shapes-2" / "task.yaml").read_text())
    assert "python -m pytest -rA -p no:cacheprovider tests/test_scale.py" in classic["hidden_test"]


def test_environments_own_dockerfile_and_from_the_specification(imported: Path) -> None:
    own = (imported / "acme-shapes-1" / "environment" / "Dockerfile").read_text()
    assert own.startswith("FROM debian:bookworm-slim AS base")
    assert own.rstrip().endswith("RUN rm -rf /testbed/.git")  # no clone history in the image
    pinned = (imported / "acme-shapes-3" / "environment" / "Dockerfile").read_text()
    assert "'pytest==8.3.3' 'attrs==23.2.0'" in pinned
    # The CA is used in the install stage only; the final stage copies the venv.
    final_stage = pinned.rsplit("\nFROM ", 1)[1]
    assert "build-ca" not in final_stage and "COPY --from=install" in final_stage


def test_bad_instances_are_skipped_with_one_line_each(
    project: ShapesProject, tmp_path: Path
) -> None:
    first = project.instances[0]
    classic = project.instances[2]
    lacking = {key: value for key, value in first.items() if key != "test_patch"}
    unknown_version = {**classic, "instance_id": "acme__shapes-9", "version": "7.0"}
    other_repo = {**first, "instance_id": "zeta__lib-1", "repo": "zeta/lib"}
    bad_commit = {**first, "instance_id": "acme__shapes-8", "base_commit": "0" * 40}
    instances = project.write_instances(
        tmp_path / "instances.jsonl",
        extra=[lacking, unknown_version, other_repo, bad_commit, [1, 2]],
    )
    with instances.open("a") as stream:
        stream.write("{not json\n")
    specs = tmp_path / "specs.yaml"
    specs.write_text(SPECS_YAML)
    done = ssebench(
        "dataset", "import", "swebench", str(instances), "--out", str(tmp_path / "out"),
        "--repos", str(project.repos), "--specs", str(specs),
        "--instances", "acme__shapes-1", "acme__shapes-9", "zeta__lib-1", "acme__shapes-8",
        "acme__shapes-404",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stdout.splitlines()
    skipped = [line for line in lines if line.startswith("skipped ")]
    assert skipped == [
        "skipped acme__shapes-1: the field test_patch is missing",
        "skipped acme__shapes-9: it has no dockerfile/eval_script of its own and there is no "
        "install specification for acme/shapes version 7.0; add one to --specs FILE",
        f"skipped zeta__lib-1: no clone of zeta/lib under {project.repos} "
        "(looked for zeta__lib, zeta/lib, lib); pass --clone-from URL to clone it",
        f"skipped acme__shapes-8: base_commit {'0' * 40} is not in the clone "
        f"{project.repos / 'acme__shapes'}",
        f"skipped acme__shapes-404: not in {instances}",
    ]
    assert lines[0].startswith("imported acme__shapes-1 as ")  # the good line of that ID
    assert lines[-1].startswith("1 imported, 5 skipped")


def test_nothing_importable_is_one_error_line_and_exit_1(
    project: ShapesProject, tmp_path: Path
) -> None:
    instances = project.write_instances(tmp_path / "instances.jsonl")
    done = ssebench(
        "dataset", "import", "swebench", str(instances), "--out", str(tmp_path / "out"),
        "--instances", "acme__shapes-2", "--clone-from", "file:///nowhere/{repo}",
        env={"SSEBENCH_REPOSITORY_CACHE": str(tmp_path / "cache")},
    )  # fmt: skip
    assert done.returncode == 1
    assert "skipped acme__shapes-2: cloning file:///nowhere/acme/shapes failed: " in done.stdout
    assert done.stderr.strip().splitlines() == [
        "fetching 1 commit(s) of acme/shapes from file:///nowhere/acme/shapes",
        "ssebench: error: no instance was imported (see the lines above)",
    ]
    assert not (tmp_path / "out" / "dataset.yaml").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("specs: {}\n", "must be a mapping with a list `specs:`"),
        (
            "specs:\n  - {repo: a/b, versions: ['1'], test_cmd: t, log_parser: p, pip: [attrs]}\n",
            "the field pip must list pinned requirements, NAME==VERSION",
        ),
        ("specs:\n  - {repo: a/b, test_cmd: t, log_parser: p}\n", "the field versions"),
        (
            "specs:\n  - {repo: a/b, versions: ['1'], python: '3.9', instal: x}\n",
            "specs[0]: unknown key 'instal'",
        ),
    ],
)
def test_a_bad_specs_file_is_one_clear_line(tmp_path: Path, text: str, message: str) -> None:
    specs = tmp_path / "specs.yaml"
    specs.write_text(text)
    (tmp_path / "instances.jsonl").write_text("")
    done = ssebench(
        "dataset", "import", "swebench", str(tmp_path / "instances.jsonl"),
        "--out", str(tmp_path / "out"), "--specs", str(specs),
    )  # fmt: skip
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1
    assert message in done.stderr and "Traceback" not in done.stderr
    with pytest.raises(UserError, match=re.escape(message.split("`")[0])):
        load_specs(specs)


def test_task_ids_from_instance_ids() -> None:
    assert task_id_for("django__django-11099") == "django-django-11099"
    assert task_id_for("Owner__Repo.JS-7") == "owner-repo-js-7"
    assert len(task_id_for("x" * 80)) == 48


def test_the_test_command_is_what_the_eval_script_runs_between_its_markers(
    project: ShapesProject,
) -> None:
    assert script_test_command(project.instances[0]["eval_script"]) == (
        "python -m pytest -rA -p no:cacheprovider tests/test_geometry.py"
    )
    assert script_test_command("#!/bin/bash\npytest\n") is None


def test_the_hidden_step_output_leaves_out_the_quoted_command() -> None:
    log = (
        "2026-01-01T00:00:00Z == hidden_test: $ echo '>>>>> Start Test Output'\n"
        "pytest\necho '>>>>> End Test Output'\n"
        ">>>>> Start Test Output\nPASSED t.py::a\n>>>>> End Test Output\n"
        ">>>>> Test Exit Code: 0\n2026-01-01T00:00:01Z hidden_test: ok (exit 0, 1.0s)\n"
    )
    output = hidden_step_output(log)
    assert output is not None and output.startswith(">>>>> Start Test Output\nPASSED t.py::a")
    assert hidden_step_output("2026 == build: $ make\n") is None


def test_git_is_used_read_only_on_the_clone(project: ShapesProject, imported: Path) -> None:
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=project.clone, capture_output=True, text=True
    )
    assert status.stdout == ""


def test_a_repository_without_a_clone_is_cloned_from_the_url_template(
    project: ShapesProject, tmp_path: Path
) -> None:
    """--clone-from: here a file:// URL standing in for the repository host."""
    instances = project.write_instances(tmp_path / "instances.jsonl")
    clones = tmp_path / "clones"
    clones.mkdir()
    template = f"file://{project.repos}/{{repo}}"
    (project.repos / "acme").mkdir(exist_ok=True)
    (project.repos / "acme" / "shapes").symlink_to(project.clone)
    try:
        done = ssebench(
            "dataset", "import", "swebench", str(instances), "--out", str(tmp_path / "out"),
            "--repos", str(clones), "--clone-from", template, "--instances", "acme__shapes-1",
        )  # fmt: skip
    finally:
        (project.repos / "acme" / "shapes").unlink()
        (project.repos / "acme").rmdir()
    assert done.returncode == 0, done.stdout + done.stderr
    assert (clones / "acme__shapes.git" / "HEAD").is_file()  # a bare mirror, kept for later
    geometry = tmp_path / "out" / "acme-shapes-1" / "repo" / "shapes" / "geometry.py"
    assert geometry.read_text() == GEOMETRY_B
    (tmp_path / "empty").mkdir()
    failed = ssebench(
        "dataset", "import", "swebench", str(instances), "--out", str(tmp_path / "out2"),
        "--repos", str(tmp_path / "empty"), "--clone-from", "file:///nowhere/{repo}",
        "--instances", "acme__shapes-1",
    )  # fmt: skip
    assert failed.returncode == 1
    (line,) = [line for line in failed.stdout.splitlines() if line.startswith("skipped")]
    assert line.startswith("skipped acme__shapes-1: cloning file:///nowhere/acme/shapes failed: ")
    assert list((tmp_path / "empty").iterdir()) == []


def test_patches_that_do_not_fit_the_tree_are_skipped(
    project: ShapesProject, tmp_path: Path
) -> None:
    first = project.instances[0]
    readme = "# shapes\n\nPlane geometry helpers. Test: python -m pytest\n"
    deleting = (
        "diff --git a/README.md b/README.md\ndeleted file mode 100644\n"
        "--- a/README.md\n+++ /dev/null\n@@ -1,3 +0,0 @@\n"
        + "".join(f"-{line}\n" for line in readme.splitlines())
    )
    stray = "diff --git a/nothing.py b/nothing.py\n--- a/nothing.py\n+++ b/nothing.py\n"
    stray += "@@ -1 +1 @@\n-a\n+b\n"
    instances = project.write_instances(
        tmp_path / "instances.jsonl",
        extra=[
            {**first, "instance_id": "acme__shapes-20", "test_patch": deleting},
            {**first, "instance_id": "acme__shapes-21", "patch": stray},
        ],
    )
    done = ssebench(
        "dataset", "import", "swebench", str(instances), "--out", str(tmp_path / "out"),
        "--repos", str(project.repos), "--instances", "acme__shapes-20", "acme__shapes-21",
    )  # fmt: skip
    assert done.returncode == 1
    skipped = [line for line in done.stdout.splitlines() if line.startswith("skipped")]
    assert skipped[0] == (
        "skipped acme__shapes-20: the test_patch deletes README.md, which an overlay of "
        "hidden tests cannot do"
    )
    assert skipped[1].startswith("skipped acme__shapes-21: the patch does not apply at base_commit")
    assert not (tmp_path / "out" / "acme-shapes-20").exists()  # no half-written task


def write_published_parquet(project: ShapesProject, path: Path) -> None:
    """The instances as the published parquet files store them: every field a column
    (absent ones null), the test lists as JSON strings."""
    import pyarrow
    import pyarrow.parquet

    rows = [
        {key: json.dumps(value) if isinstance(value, list) else value for key, value in row.items()}
        for row in project.instances
    ]
    pyarrow.parquet.write_table(pyarrow.Table.from_pylist(rows), path)


def _imported_tasks(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 0, done.stderr
    return [item["task"] for item in json.loads(done.stdout)["imported"]]


def test_a_json_array_and_a_parquet_file_import_the_same_tasks_as_jsonl(
    project: ShapesProject, imported: Path, tmp_path: Path
) -> None:
    specs = tmp_path / "specs.yaml"
    specs.write_text(SPECS_YAML)
    array = tmp_path / "instances.json"
    array.write_text(json.dumps(project.instances, indent=2))
    parquet = tmp_path / "instances.parquet"
    write_published_parquet(project, parquet)
    for source in (array, parquet):
        out = tmp_path / source.suffix.lstrip(".")
        done = ssebench(
            "dataset", "import", "swebench", str(source), "--out", str(out),
            "--repos", str(project.repos), "--specs", str(specs), "--json",
        )  # fmt: skip
        assert _imported_tasks(done) == [task.id for task in load_dataset(imported).tasks]
        for task in load_dataset(out).tasks:
            reference = imported / task.id
            for name in ("task.yaml", "swebench.json", "environment/Dockerfile"):
                assert (task.path / name).read_text() == (reference / name).read_text(), name


def test_fields_the_import_does_not_use_are_named_in_one_line(
    project: ShapesProject, tmp_path: Path
) -> None:
    extra = {**project.instances[0], "hints_text": "look at rect", "difficulty": "<15 min"}
    instances = tmp_path / "instances.jsonl"
    instances.write_text(json.dumps(extra) + "\n")
    done = ssebench(
        "dataset", "import", "swebench", str(instances), "--out", str(tmp_path / "out"),
        "--repos", str(project.repos),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "fields not used by the import: difficulty, hints_text" in done.stdout.splitlines()


def test_a_broken_json_array_is_one_clear_line(tmp_path: Path) -> None:
    broken = tmp_path / "instances.json"
    broken.write_text('[{"instance_id": "a__b-1",\n')
    done = ssebench("dataset", "import", "swebench", str(broken), "--out", str(tmp_path / "o"))
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1
    assert "starts like a JSON array but is not valid JSON" in done.stderr


def test_versions_stay_strings_whatever_yaml_makes_of_them(tmp_path: Path) -> None:
    specs = tmp_path / "specs.yaml"
    specs.write_text(
        "specs:\n"
        "  - {repo: a/b, versions: [2.10, 3.0, 1], python: 3.10, install: pip install .,"
        " test_cmd: pytest, log_parser: parse_log_pytest}\n"
    )
    (spec,) = load_specs(specs)
    assert spec.versions == ("2.10", "3.0", "1")
    assert spec.python == "3.10"
    assert spec.official_form


def test_the_official_tables_ship_every_python_repository_with_provenance() -> None:
    tables = official_tables()
    assert tables.provenance["package"] == "swebench"
    assert tables.provenance["version"].startswith("4.")
    assert len(tables.specs) == 300
    assert len({spec.repo for spec in tables.specs}) == 20
    astroid = find_spec([], "pylint-dev/astroid", "2.10")
    assert astroid is not None and astroid.python == "3.9"
    assert astroid.install == "python -m pip install -e ."
    assert astroid.log_parser == "parse_log_pytest"
    sqlfluff = find_spec([], "sqlfluff/sqlfluff", "0.8")
    assert sqlfluff is not None and sqlfluff.environment_packages == "requirements.txt"
    assert sqlfluff.requirements_paths == ("requirements_dev.txt",)
    pydicom = find_spec([], "pydicom/pydicom", "2.0")
    assert pydicom is not None and pydicom.python == "3.8"
    # ssebench's additions for grading without network (offline_additions.yaml), after
    # the official values and recorded; none on the versions the file does not name.
    assert pydicom.pip_packages == ("pytest", "pydicom-data==1.0.0")
    assert pydicom.eval_commands[-1].startswith("export HTTP_PROXY=http://127.0.0.1:9 ")
    assert len(pydicom.deviations) == 1 and "pydicom-data" in pydicom.deviations[0]
    older = find_spec([], "pydicom/pydicom", "1.4")
    assert older is not None and older.pip_packages == ("pytest",) and not older.deviations
    assert sum(1 for spec in tables.specs if spec.deviations) == 6
    # Every log parser the tables name is in the installed package's registry.
    registry = parser_registry()
    assert {spec.log_parser for spec in tables.specs} - {None} <= set(registry)


def test_a_users_spec_wins_over_the_official_one_for_its_versions_only(tmp_path: Path) -> None:
    specs = tmp_path / "specs.yaml"
    specs.write_text(
        "specs:\n"
        "  - repo: pylint-dev/astroid\n"
        "    versions: ['2.10']\n"
        "    python: '3.11'\n"
        "    install: python -m pip install .\n"
        "    test_cmd: pytest -rA\n"
    )
    users = load_specs(specs)
    mine = find_spec(users, "pylint-dev/astroid", "2.10")
    assert mine is not None and mine.python == "3.11" and mine.origin == "--specs"
    # What the user left out of the repository's fields comes from the official tables.
    assert mine.log_parser == "parse_log_pytest"
    other = find_spec(users, "pylint-dev/astroid", "2.12")
    assert other is not None and other.python == "3.9" and other.origin.startswith("official")


def test_a_users_spec_takes_none_of_ssebenchs_additions(tmp_path: Path) -> None:
    specs = tmp_path / "specs.yaml"
    specs.write_text(
        "specs:\n"
        "  - repo: pydicom/pydicom\n"
        "    versions: [2.2]\n"
        "    python: 3.9\n"
        "    pip_packages: [pytest]\n"
        "    test_cmd: pytest -rA\n"
    )
    mine = find_spec(load_specs(specs), "pydicom/pydicom", "2.2")
    assert mine is not None and mine.origin == "--specs"
    assert mine.pip_packages == ("pytest",) and mine.eval_commands == () and not mine.deviations


def test_a_dataset_through_the_datasets_library_imports_offline(
    project: ShapesProject, imported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--dataset NAME --split SPLIT: the library's own loading of a dataset laid out as the
    published ones are (data/<split>-00000-of-00001.parquet), with the network off."""
    published = tmp_path / "SWE-bench_Shapes"
    (published / "data").mkdir(parents=True)
    write_published_parquet(project, published / "data" / "test-00000-of-00001.parquet")
    specs = tmp_path / "specs.yaml"
    specs.write_text(SPECS_YAML)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    done = ssebench(
        "dataset", "import", "swebench", "--dataset", str(published), "--split", "test",
        "--out", str(tmp_path / "out"), "--repos", str(project.repos), "--specs", str(specs),
        "--json",
    )  # fmt: skip
    assert _imported_tasks(done) == [task.id for task in load_dataset(imported).tasks]
    missing = ssebench(
        "dataset", "import", "swebench", "--dataset", str(published), "--split", "train",
        "--out", str(tmp_path / "out2"),
    )  # fmt: skip
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1
    assert f"--dataset {published} --split train: cannot be loaded" in missing.stderr
