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
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

import yaml

from ssebench.errors import UserError
from ssebench.swebench.environments import (
    ENVIRONMENT,
    MIN_RUNTIME_PYTHON,
    PACKAGE_FOLDER,
    SETUP_FOLDER,
    EnvironmentUnavailable,
    dockerfile,
    import_root,
    included_files,
    plan_environment,
    setup_files,
    test_setup,
    test_setup_for,
)
from ssebench.swebench.grading import GRADING_FILE
from ssebench.swebench.instances import (
    Instance,
    Skipped,
    check_records,
    foreign_path_tests,
    unused_fields,
)
from ssebench.swebench.markers import hidden_test_command, script_test_command
from ssebench.swebench.package import parser_registry
from ssebench.swebench.python_images import PythonImageSource
from ssebench.swebench.specs import Spec, find_spec
from ssebench.tasks.dataset import DATASET_FILE, load_dataset, write_manifest
from ssebench.tasks.model import (
    ENVIRONMENT_FOLDER,
    HIDDEN_FOLDER,
    LANGUAGES,
    REFERENCE_PATCH,
    SOURCE_FOLDER,
    TASK_FILE,
)

# Where the project lives in the container: where the official images keep it.
SOURCE_DIR = "/testbed"
DESCRIPTION_CHARS = 120
# Appended to a 5.x instance's own Dockerfile: the case layer is built on it as root
# and makes the source folder's single base commit itself, so a clone's history (which
# holds the fix) must not stay in the image.
OWN_DOCKERFILE_FOOTER = f"""
# Added by `ssebench dataset import swebench`: the case layer, built on this image as
# root, makes {SOURCE_DIR} one base commit; the history of a clone must not stay.
USER root
RUN rm -rf {SOURCE_DIR}/.git
"""
GIT_IDENTITY = ("-c", "user.name=ssebench", "-c", "user.email=ssebench@localhost")
# Where repositories are cloned from when the user gives no --repos and no --clone-from.
DEFAULT_CLONE_FROM = "https://github.com/{repo}.git"
REPOSITORY_CACHE_VARIABLE = "SSEBENCH_REPOSITORY_CACHE"


class InstanceSkipped(Exception):
    """An instance that cannot be imported; its message is the one-line reason."""


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


def find_clone(repos: Path, repo: str) -> Path | None:
    """The local clone (or bare mirror) of OWNER/NAME under repos, by the usual layouts:
    OWNER__NAME, OWNER/NAME or NAME, each with or without .git."""
    owner, name = repo.split("/", 1)
    for base in (f"{owner}__{name}", f"{owner}/{name}", name):
        for candidate in (repos / base, repos / f"{base}.git"):
            if candidate.is_dir():
                return candidate
    return None


def _git(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    environment = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=environment,
            input=stdin,
            capture_output=True,
            check=False,
        )
    except FileNotFoundError:
        raise UserError("git is not installed (not on PATH); the import needs it") from None


def _last_line(completed: subprocess.CompletedProcess[bytes]) -> str:
    lines = completed.stderr.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else f"exit status {completed.returncode}"


def export_tree(clone: Path, commit: str, dest: Path) -> None:
    """Write the tree of commit into dest (no .git), with a private index so the clone
    is not touched and export-ignore attributes do not apply."""
    found = _git(["-C", str(clone), "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"])
    if found.returncode != 0:
        raise InstanceSkipped(f"base_commit {commit} is not in the clone {clone}")
    git_dir = _git(["-C", str(clone), "rev-parse", "--absolute-git-dir"]).stdout.decode().strip()
    dest.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="ssebench-index-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        base = ["--git-dir", git_dir, "--work-tree", str(dest)]
        for step in (["read-tree", commit], ["checkout-index", "--all", "--force"]):
            completed = _git([*base, *step], env=env)
            if completed.returncode != 0:
                raise InstanceSkipped(f"git {step[0]} of {commit} failed: {_last_line(completed)}")


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
            completed = _git(args, cwd=work)
            if completed.returncode != 0:
                raise InstanceSkipped(f"cannot stage the tree: {_last_line(completed)}")
        checked = _git(["apply", "--check", "-"], cwd=work, stdin=instance.patch.encode())
        if checked.returncode != 0:
            raise InstanceSkipped(
                f"the patch does not apply at base_commit ({_last_line(checked)})"
            )
        applied = _git(["apply", "-"], cwd=work, stdin=instance.test_patch.encode())
        if applied.returncode != 0:
            raise InstanceSkipped(
                f"the test_patch does not apply at base_commit ({_last_line(applied)})"
            )
        _git(["add", "-A", "-f"], cwd=work)
        status = _git(["diff", "--cached", "--name-status", "--no-renames", "-z"], cwd=work)
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


@dataclass(frozen=True)
class Build:
    """How an instance's environment is built and its tests are run."""

    dockerfile: str
    test_command: str
    log_parser: str
    eval_type: str
    # Run before the tests' start marker (the official eval_commands, PYTHONPATH).
    test_setup: str = ""
    # Further files of the environment's build context, by relative path.
    context_files: dict[str, str] = field(default_factory=dict)
    # What the environment was made of, for swebench.json (official-form specs).
    environment: dict[str, object] | None = None


@dataclass(frozen=True)
class EnvironmentOptions:
    """How the environments of official-form specs are made (docs/datasets.md)."""

    # Where each spec's Python X.Y image comes from (--python-images; asked once a version).
    python_images: PythonImageSource = field(default_factory=PythonImageSource)
    resolve_by_date: bool = True
    # Python versions the user lets another stand in for: {"3.8": "3.9"}.
    python_substitutes: dict[str, str] = field(default_factory=dict)
    # REGISTRY/NAMESPACE of the official prebuilt images, which then are the
    # environments (official_image_dockerfile); None builds them here.
    official_images: str | None = None
    official_tag: str = "latest"


def build_for(
    instance: Instance,
    specs: list[Spec],
    test_files: list[str],
    *,
    clone: Path,
    tree: Path,
    environment_dir: Path,
    options: EnvironmentOptions,
) -> Build:
    """The instance's own build (5.x) or its specification's; InstanceSkipped if neither."""
    if instance.has_own_build:
        assert instance.eval_script is not None
        if instance.log_parser is None:
            raise InstanceSkipped("it has an eval_script but no log_parser")
        command = script_test_command(instance.eval_script)
        if command is None:
            raise InstanceSkipped(
                "its eval_script has no test command between the "
                "': '>>>>> Start Test Output'' and ': '>>>>> End Test Output'' markers"
            )
        if instance.dockerfile is not None:
            own = instance.dockerfile.rstrip("\n")
        else:
            # A row that names its environment's image and no dockerfile: that image as
            # written, pulled by the build like any FROM.
            own = f"# The instance's image (its row has no dockerfile).\nFROM {instance.image}"
        return Build(
            own + "\n" + OWN_DOCKERFILE_FOOTER,
            command,
            instance.log_parser,
            instance.eval_type,
        )
    spec = find_spec(specs, instance.repo, instance.version)
    if spec is None:
        hint = "add one to --specs FILE" if specs else "pass --specs FILE with one"
        raise InstanceSkipped(
            f"it has no dockerfile/eval_script of its own and there is no install "
            f"specification for {instance.repo} version {instance.version}; {hint}"
        )
    if spec.official_form:
        return official_build(
            instance,
            spec,
            test_files,
            clone=clone,
            tree=tree,
            environment_dir=environment_dir,
            options=options,
        )
    assert spec.test_cmd is not None and spec.log_parser is not None
    command = f"{spec.test_cmd} {' '.join(shlex.quote(path) for path in test_files)}"
    return Build(spec.dockerfile(), command, instance.log_parser or spec.log_parser, spec.eval_type)


# The official harness leaves files of these kinds out of the test command
# (NON_TEST_EXTS of swebench.harness.constants).
NON_TEST_SUFFIXES = (
    ".json",
    ".png",
    "csv",
    ".txt",
    ".md",
    ".jpg",
    ".jpeg",
    ".pkl",
    ".yml",
    ".yaml",
    ".toml",
)


def official_build(
    instance: Instance,
    spec: Spec,
    test_files: list[str],
    *,
    clone: Path,
    tree: Path,
    environment_dir: Path,
    options: EnvironmentOptions,
) -> Build:
    """The build of an official-form spec (environments.py): the repository at
    environment_setup_commit goes into the environment's context."""
    if spec.test_cmd is None:
        raise InstanceSkipped(f"its specification ({spec.origin}) has no test_cmd")
    if spec.log_parser is None and instance.log_parser is None:
        raise InstanceSkipped(f"its specification ({spec.origin}) names no log_parser")
    assert spec.python is not None
    if options.official_images is not None:
        return official_image_build(instance, spec, test_files, tree=tree, options=options)
    specified_python = spec.python
    substitute = options.python_substitutes.get(specified_python)
    if substitute is not None:
        spec = replace(spec, python=substitute)
    setup_commit = instance.environment_setup_commit or instance.base_commit
    requirements = read_requirements(clone, setup_commit, spec.requirements_paths)
    try:
        plan = plan_environment(
            spec,
            instance,
            image=options.python_images.image(substitute or specified_python),
            resolve_by_date=options.resolve_by_date,
            requirements_text=requirements,
            tree=tree,
            setup_commit_date=_commit_date(clone, setup_commit),
        )
    except EnvironmentUnavailable as reason:
        raise InstanceSkipped(str(reason)) from None
    if substitute is not None:
        plan = replace(
            plan,
            deviations=(
                *plan.deviations,
                f"Python {substitute} in place of the specification's {specified_python}",
            ),
        )
    export_tree(clone, setup_commit, environment_dir / PACKAGE_FOLDER)
    directives = [path for path in test_files if not path.endswith(NON_TEST_SUFFIXES)]
    if instance.repo == "django/django":
        directives = [django_directive(path) for path in directives]
    command = f"{spec.test_cmd} {' '.join(shlex.quote(path) for path in directives)}"
    context = {f"{SETUP_FOLDER}/{name}": text for name, text in setup_files(plan).items()}
    return Build(
        dockerfile(plan, package_version=instance.version),
        command,
        instance.log_parser or spec.log_parser or "",
        spec.eval_type,
        test_setup=test_setup(plan, spec.eval_commands),
        context_files=context,
        environment={**plan.record(), "environment_setup_commit": setup_commit},
    )


def official_image(instance_id: str, namespace: str, tag: str) -> str:
    """The official harness's name of an instance's prebuilt image: `__` in the ID is
    written `_1776_`, and the name is lower case."""
    name = instance_id.replace("__", "_1776_").lower()
    return f"{namespace.rstrip('/')}/sweb.eval.x86_64.{name}:{tag}"


def official_image_build(
    instance: Instance,
    spec: Spec,
    test_files: list[str],
    *,
    tree: Path,
    options: EnvironmentOptions,
) -> Build:
    """The build of an official-form spec on the instance's official prebuilt image:
    the repository at /testbed and its environment `testbed`, as the published results
    used them. Only the test command is the spec's; nothing is installed."""
    assert spec.python is not None and options.official_images is not None
    if tuple(int(part) for part in spec.python.split(".")[:2]) < MIN_RUNTIME_PYTHON:
        raise InstanceSkipped(
            f"its official image's testbed environment has Python {spec.python}, first on "
            "PATH, and ssebench's runtime needs 3.9 or later there; build the environment "
            "here instead (without --official-images), with --python-substitute"
        )
    image = official_image(instance.instance_id, options.official_images, options.official_tag)
    directives = [path for path in test_files if not path.endswith(NON_TEST_SUFFIXES)]
    if instance.repo == "django/django":
        directives = [django_directive(path) for path in directives]
    command = f"{spec.test_cmd} {' '.join(shlex.quote(path) for path in directives)}"
    root = import_root(tree)
    plan_record = {
        "python": spec.python,
        "image": image,
        "official_image": True,
        "resolved_as_of": None,
        "spec": f"{spec.origin} ({spec.repo} {', '.join(spec.versions)})",
        "import_root": root,
        "deviations": [],
    }
    return Build(
        official_image_dockerfile(image),
        command,
        instance.log_parser or spec.log_parser or "",
        spec.eval_type,
        test_setup=test_setup_for(root, spec.eval_commands),
        environment=plan_record,
    )


def official_image_dockerfile(image: str) -> str:
    return (
        "# Written by `ssebench dataset import swebench --official-images`: the instance's\n"
        "# official prebuilt image, its environment `testbed` first on PATH (what the\n"
        "# harness's `conda activate testbed` does for the tests).\n"
        f"FROM {image}\n"
        f"ENV PATH={ENVIRONMENT}/bin:$PATH\n"
    )


def django_directive(path: str) -> str:
    """A Django test file as its runner names it: tests/a/b.py -> a.b."""
    path = path.removesuffix(".py")
    path = path.removeprefix("tests/")
    return path.replace("/", ".")


def read_requirements(clone: Path, commit: str, paths: Sequence[str]) -> str | None:
    """The first of paths in the clone at commit, with the files it includes (`-r`)
    first, as the harness reads them; None when none of paths is there."""
    for path in paths:
        text = _show(clone, commit, path)
        if text is None:
            continue
        folder = path.rsplit("/", 1)[0] if "/" in path else ""
        included = []
        for name in included_files(text):
            extra = _show(clone, commit, f"{folder}/{name}" if folder else name)
            if extra is not None:
                included.append(extra)
        return "\n".join([*included, text])
    return None


def _commit_date(clone: Path, commit: str) -> str | None:
    shown = _git(["-C", str(clone), "show", "-s", "--format=%cI", commit])
    return shown.stdout.decode().strip() or None if shown.returncode == 0 else None


def _show(clone: Path, commit: str, path: str) -> str | None:
    shown = _git(["-C", str(clone), "show", f"{commit}:{path}"])
    return shown.stdout.decode(errors="replace") if shown.returncode == 0 else None


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
            clone = _clone_of(entry, repos, clone_from, progress)
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


def repository_cache() -> Path:
    """Where the import keeps the repositories it clones when --repos is not given:
    $SSEBENCH_REPOSITORY_CACHE, else $XDG_CACHE_HOME/ssebench/repositories (~/.cache)."""
    configured = os.environ.get(REPOSITORY_CACHE_VARIABLE)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ssebench" / "repositories"


def _needed_commits(instance: Instance) -> list[str]:
    commits = [instance.base_commit]
    if instance.environment_setup_commit and instance.environment_setup_commit not in commits:
        commits.append(instance.environment_setup_commit)
    return commits


def _has_commit(clone: Path, commit: str) -> bool:
    found = _git(["-C", str(clone), "cat-file", "-e", f"{commit}^{{commit}}"])
    return found.returncode == 0


def _clone_of(
    instance: Instance, repos: Path, clone_from: str | None, progress: TextIO | None
) -> Path:
    """The clone holding the instance's commits: found under repos, or fetched there from
    clone_from ({repo} is OWNER/NAME): only the commits the instance needs when the
    server gives single commits, else the whole repository."""
    clone = find_clone(repos, instance.repo)
    missing = [
        commit
        for commit in _needed_commits(instance)
        if clone is None or not _has_commit(clone, commit)
    ]
    if not missing:
        assert clone is not None
        return clone
    if clone_from is None:
        if clone is None:
            raise InstanceSkipped(
                f"no clone of {instance.repo} under {repos} "
                f"(looked for {instance.repo.replace('/', '__')}, {instance.repo}, "
                f"{instance.repo_name}); pass --clone-from URL to clone it"
            )
        return clone  # export_tree names the commit that is missing
    return fetch_commits(repos, clone, instance.repo, clone_from, missing, progress)


def fetch_commits(
    repos: Path,
    clone: Path | None,
    repo: str,
    clone_from: str,
    commits: list[str],
    progress: TextIO | None,
) -> Path:
    """Fetch commits of OWNER/NAME from the clone_from template into clone, or into a new
    bare repository repos/OWNER__NAME.git that later imports find. InstanceSkipped when
    the fetch fails."""
    url = clone_from.replace("{repo}", repo)
    made = clone is None
    target = clone if clone is not None else repos / f"{repo.replace('/', '__')}.git"
    if progress is not None:
        progress.write(f"fetching {len(commits)} commit(s) of {repo} from {url}\n")
        progress.flush()
    if made:
        repos.mkdir(parents=True, exist_ok=True)
        initialized = _git(["init", "--quiet", "--bare", str(target)])
        if initialized.returncode != 0:
            raise InstanceSkipped(f"cannot make {target}: {_last_line(initialized)}")
    # Each commit under a ref of its own, so that no gc of the cache drops it.
    refspecs = [f"{commit}:refs/ssebench/{commit}" for commit in commits]
    single = _git(["-C", str(target), "fetch", "--quiet", "--depth", "1", "--", url, *refspecs])
    if single.returncode != 0:
        # A server that does not give single commits: the whole repository instead.
        branches = "+refs/heads/*:refs/heads/*"
        whole = _git(["-C", str(target), "fetch", "--quiet", "--tags", "--", url, branches])
        if whole.returncode != 0 or not all(_has_commit(target, commit) for commit in commits):
            if made:
                shutil.rmtree(target, ignore_errors=True)
            reason = _last_line(whole) if whole.returncode != 0 else "the commits are not there"
            raise InstanceSkipped(f"cloning {url} failed: {reason}")
    return target
