"""`ssebench dataset import swebench`: SWE-bench-format instances as ssebench tasks.

Each instance becomes an ordinary task folder, which every backend runs unchanged:

    <task>/task.yaml          the problem statement as the prompt; grader: swebench
    <task>/repo/              the repository's tree at base_commit (from a local clone)
    <task>/environment/       Dockerfile: the instance's own (5.x) or one written from
                              its install specification (classic, --specs)
    <task>/hidden/            the test files the test_patch touches, as they are after
                              it: copied over the graded tree, they reset those files
                              and apply the test_patch, as the official harness does
    <task>/reference.patch    the instance's patch
    <task>/swebench.json      FAIL_TO_PASS, PASS_TO_PASS, log parser: what grading.py needs

An instance that cannot be imported is skipped with one line saying why.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

from ssebench.errors import UserError
from ssebench.swebench.builds import SOURCE_DIR, EnvironmentOptions, build_for
from ssebench.swebench.grading import GRADING_FILE
from ssebench.swebench.instances import (
    Instance,
    InstanceSkipped,
    Skipped,
    check_records,
    foreign_path_tests,
    unused_fields,
)
from ssebench.swebench.markers import hidden_test_command
from ssebench.swebench.package import parser_registry
from ssebench.swebench.repositories import (
    DEFAULT_CLONE_FROM,
    clone_of,
    export_tree,
    git,
    last_line,
    repository_cache,
)
from ssebench.swebench.specs import Spec
from ssebench.tasks.dataset import DATASET_FILE, load_dataset, write_manifest
from ssebench.tasks.model import (
    ENVIRONMENT_FOLDER,
    HIDDEN_FOLDER,
    LANGUAGES,
    REFERENCE_PATCH,
    SOURCE_FOLDER,
    TASK_FILE,
)

DESCRIPTION_CHARS = 120
GIT_IDENTITY = ("-c", "user.name=ssebench", "-c", "user.email=ssebench@localhost")


@dataclass
class ImportReport:
    imported: list[tuple[str, str]] = field(default_factory=list)  # (instance, task ID)
    skipped: list[Skipped] = field(default_factory=list)
    # The records' fields that the import does not use, named to the user.
    unused_fields: list[str] = field(default_factory=list)
    # Lines about records imported with a defect of their own (one per instance).
    warnings: list[str] = field(default_factory=list)


def task_id_for(instance_id: str) -> str:
    """A task ID ([a-z0-9-], at most 48) for an instance ID such as owner__repo-1234."""
    text = re.sub(r"[^a-z0-9]+", "-", instance_id.lower()).strip("-")
    if len(text) > 48:
        text = text[-48:].strip("-")
    return text or "instance"


def hidden_files(tree: Path, instance: Instance, hidden: Path) -> list[str]:
    """Check that patch and test_patch apply to tree, and copy the files the test_patch
    adds or changes, as they are after it, into hidden. Returns their paths."""
    with tempfile.TemporaryDirectory(prefix="ssebench-import-") as scratch:
        work = Path(scratch) / "tree"
        shutil.copytree(tree, work, symlinks=True)
        for args in (
            ["init", "-q"],
            ["add", "-A", "-f"],
            [*GIT_IDENTITY, "commit", "-q", "--no-verify", "-m", "base"],
        ):
            completed = git(args, cwd=work)
            if completed.returncode != 0:
                raise InstanceSkipped(f"cannot stage the tree: {last_line(completed)}")
        checked = git(["apply", "--check", "-"], cwd=work, stdin=instance.patch.encode())
        if checked.returncode != 0:
            raise InstanceSkipped(f"the patch does not apply at base_commit ({last_line(checked)})")
        applied = git(["apply", "-"], cwd=work, stdin=instance.test_patch.encode())
        if applied.returncode != 0:
            raise InstanceSkipped(
                f"the test_patch does not apply at base_commit ({last_line(applied)})"
            )
        git(["add", "-A", "-f"], cwd=work)
        status = git(["diff", "--cached", "--name-status", "--no-renames", "-z"], cwd=work)
        fields = status.stdout.decode().split("\0")
        paths = []
        for kind, path in zip(fields[0::2], fields[1::2], strict=False):
            if kind == "D":
                raise InstanceSkipped(
                    f"the test_patch deletes {path}, which an overlay of hidden tests cannot do"
                )
            source = work / path
            if source.is_symlink() or not source.is_file():
                raise InstanceSkipped(f"the test_patch makes {path} something other than a file")
            target = hidden / path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            paths.append(path)
        if not paths:
            raise InstanceSkipped("the test_patch changes no file")
        return paths


def language_of(log_parser: str) -> str:
    """The task's language from the module of the package's log parser."""
    module = getattr(parser_registry()[log_parser], "__module__", "")
    language = module.rsplit(".", 1)[-1]
    return language if language in LANGUAGES else "shell"


def _description(problem_statement: str) -> str:
    for line in problem_statement.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line if len(line) <= DESCRIPTION_CHARS else line[: DESCRIPTION_CHARS - 3] + "..."
    return ""


class _BlockDumper(yaml.SafeDumper):
    """Writes multi-line strings as literal blocks, so task.yaml stays readable."""


def _represent_text(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_BlockDumper.add_representer(str, _represent_text)


def write_task(
    folder: Path,
    instance: Instance,
    clone: Path,
    specs: list[Spec],
    options: EnvironmentOptions,
) -> None:
    """Write the task folder of one instance (folder must not exist)."""
    folder.mkdir(parents=True)
    tree = folder / SOURCE_FOLDER
    export_tree(clone, instance.base_commit, tree)
    test_files = hidden_files(tree, instance, folder / HIDDEN_FOLDER)
    environment = folder / ENVIRONMENT_FOLDER
    environment.mkdir()
    build = build_for(
        instance,
        specs,
        test_files,
        clone=clone,
        tree=tree,
        environment_dir=environment,
        options=options,
    )
    if build.log_parser not in parser_registry():
        raise InstanceSkipped(f"the swebench package has no log parser {build.log_parser!r}")
    (environment / "Dockerfile").write_text(build.dockerfile, encoding="utf-8")
    for relative, text in build.context_files.items():
        (environment / relative).parent.mkdir(parents=True, exist_ok=True)
        (environment / relative).write_text(text, encoding="utf-8")
    (folder / REFERENCE_PATCH).write_text(instance.patch, encoding="utf-8")
    task: dict[str, Any] = {
        "id": folder.name,
        "project": instance.repo_name,
        "language": language_of(build.log_parser),
        "description": _description(instance.problem_statement),
        "source_dir": SOURCE_DIR,
        "grader": "swebench",
        "prompt": instance.problem_statement.rstrip() + "\n",
        # The instance's tests are all graded in the hidden step, by the package.
        "build": "true",
        "test": "true",
        "hidden_test": hidden_test_command(build.test_command, setup=build.test_setup),
    }
    (folder / TASK_FILE).write_text(
        yaml.dump(task, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=1000),
        encoding="utf-8",
    )
    grading: dict[str, Any] = {
        "instance_id": instance.instance_id,
        "repo": instance.repo,
        "version": instance.version,
        "base_commit": instance.base_commit,
        "FAIL_TO_PASS": list(instance.fail_to_pass),
        "PASS_TO_PASS": list(instance.pass_to_pass),
        "log_parser": build.log_parser,
        "eval_type": build.eval_type,
        "test_files": test_files,
    }
    if build.environment is not None:
        grading["environment"] = build.environment
    foreign = foreign_path_tests(instance.fail_to_pass + instance.pass_to_pass)
    if foreign:
        grading["record_defects"] = {"foreign_path_tests": foreign}
    (folder / GRADING_FILE).write_text(json.dumps(grading, indent=2) + "\n", encoding="utf-8")


def import_instances(
    records: list[Any],
    source_name: str,
    out: Path,
    *,
    repos: Path | None,
    specs: list[Spec],
    wanted: Sequence[str] = (),
    name: str | None = None,
    clone_from: str | None = None,
    options: EnvironmentOptions | None = None,
    progress: TextIO | None = None,
) -> ImportReport:
    """Import the records of a published file (read_records, hub_records; named by
    source_name) into the dataset folder out (made or updated: an imported task's
    folder is replaced). A repository without a clone
    under repos is cloned there from clone_from ({repo} is OWNER/NAME), if given.
    Raises UserError for a problem of the whole import; an instance's problem skips it
    (in the report)."""
    parser_registry()  # the package is needed: say so before anything is written
    if clone_from is not None and "{repo}" not in clone_from:
        raise UserError("--clone-from must contain {repo}, e.g. https://HOST/{repo}.git")
    if repos is not None and not repos.is_dir():
        raise UserError(f"--repos {repos}: no such folder; pass the folder of the clones")
    if repos is None:
        # No clones of the user's: ssebench keeps its own, fetched as needed.
        repos = repository_cache()
        clone_from = clone_from or DEFAULT_CLONE_FROM
    out.mkdir(parents=True, exist_ok=True)
    report = ImportReport(unused_fields=unused_fields(records))
    seen: dict[str, str] = {}
    found: set[str] = set()
    for entry in check_records(records):
        if wanted and entry.instance_id not in wanted:
            continue
        found.add(entry.instance_id)
        if isinstance(entry, Skipped):
            report.skipped.append(entry)
            continue
        task_id = task_id_for(entry.instance_id)
        if task_id in seen:
            report.skipped.append(
                Skipped(entry.instance_id, f"its task ID {task_id} is {seen[task_id]}'s too")
            )
            continue
        try:
            clone = clone_of(entry, repos, clone_from, progress)
            folder = out / task_id
            if folder.exists():
                shutil.rmtree(folder)
            try:
                write_task(folder, entry, clone, specs, options or EnvironmentOptions())
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
        except InstanceSkipped as reason:
            report.skipped.append(Skipped(entry.instance_id, str(reason)))
            continue
        seen[task_id] = entry.instance_id
        report.imported.append((entry.instance_id, task_id))
        foreign = foreign_path_tests(entry.fail_to_pass + entry.pass_to_pass)
        if foreign:
            report.warnings.append(
                f"warning {entry.instance_id}: {len(foreign)} of its test IDs carry absolute "
                f"paths of the machine that made the record (e.g. {foreign[0]}); no "
                "environment can pass them: the record's defect"
            )
    for missing in sorted(set(wanted) - found):
        report.skipped.append(Skipped(missing, f"not in {source_name}"))
    if report.imported:
        dataset_file = out / DATASET_FILE
        if not dataset_file.exists():
            dataset_name = name or task_id_for(out.resolve().name)
            dataset_file.write_text(
                yaml.safe_dump(
                    {
                        "name": dataset_name,
                        "version": 1,
                        "description": f"Imported from {source_name}",
                    },
                    sort_keys=False,
                ),
                encoding="utf-8",
            )
        write_manifest(load_dataset(out))
    return report
