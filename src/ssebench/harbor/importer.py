"""`ssebench dataset import harbor DIR...`: Harbor and Terminal-Bench 1.x task folders
(read by harbor/tasks.py) become ssebench tasks graded on the container's final state.

Each task's folder in the dataset:
  task.yaml      the ssebench task; its `verifier` table makes it graded by a reward
  environment/   the task's Dockerfile and its build context (Harbor: environment/;
                 Terminal-Bench 1.x: the task folder without its tests and solution),
                 with the FROM images of --image-map replaced
  hidden/        tests/ (and Terminal-Bench's run-tests.sh): copied to /tests at grading
  solution.sh    solve.sh, the reference agent's work
  repo/          empty: the task's workdir is what its environment put there
The source folders are only read.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ssebench.errors import UserError
from ssebench.harbor.tasks import HarborTask, read_tasks
from ssebench.tasks.dataset import DATASET_FILE, load_dataset, write_manifest
from ssebench.tasks.model import (
    ENVIRONMENT_FOLDER,
    HIDDEN_FOLDER,
    SOLUTION_SCRIPT,
    SOURCE_FOLDER,
    TASK_FILE,
    TASK_ID_PATTERN,
)

# Where the tests are during grading, as Harbor and Terminal-Bench put them.
TESTS_DIR = "/tests"
DEFAULT_WORKDIR = "/app"
# Harbor's defaults where task.toml says nothing (harbor's TaskConfig).
DEFAULT_AGENT_TIMEOUT_SEC = 600.0
DEFAULT_VERIFIER_TIMEOUT_SEC = 600.0
# The parts of a Terminal-Bench 1.x folder that are not its environment's build context.
TB1_NOT_CONTEXT = {"tests", "solution.sh", "run-tests.sh", "task.yaml", "docker-compose.yaml"}
_FROM = re.compile(r"^(\s*FROM\s+)((?:--\S+\s+)*)(\S+)(.*)$", re.IGNORECASE)
_WORKDIR = re.compile(r"^\s*WORKDIR\s+(\S+)\s*$", re.IGNORECASE)


@dataclass
class HarborImport:
    """What one import did: tasks written, folders skipped (one line each), the task.toml
    keys ssebench does not use, and the images that --image-map replaced."""

    imported: list[tuple[str, str]] = field(default_factory=list)  # (source folder, task id)
    skipped: list[str] = field(default_factory=list)
    unused_keys: list[str] = field(default_factory=list)
    mapped: dict[str, str] = field(default_factory=dict)


def parse_image_map(pairs: Iterable[str]) -> dict[str, str]:
    """--image-map NAME=LOCAL values as a map; UserError naming a malformed one."""
    images = {}
    for pair in pairs:
        name, _, local = pair.partition("=")
        if not name.strip() or not local.strip() or " " in pair:
            raise UserError(
                f"--image-map {pair}: give NAME=LOCAL, e.g. ubuntu:24.04=debian:bookworm-slim"
            )
        images[name] = local
    return images


def task_id_of(task: HarborTask) -> str:
    """The ssebench task ID: the last part of the task's name (harbor/hello-world is
    hello-world), in lower case, with anything else than [a-z0-9-] made a dash."""
    last = task.name.rsplit("/", 1)[-1].lower()
    cleaned = re.sub(r"[^a-z0-9-]+", "-", last).strip("-")[:48].rstrip("-")
    if not TASK_ID_PATTERN.match(cleaned):
        raise UserError(f"{task.path}: no task ID can be made of its name {task.name!r}")
    return cleaned


def map_images(dockerfile: str, images: Mapping[str, str], mapped: dict[str, str]) -> str:
    """The Dockerfile with each FROM image that images names replaced (recorded in
    mapped); the rest of each line (AS stage, flags) is kept."""
    lines = []
    for line in dockerfile.splitlines(keepends=True):
        match = _FROM.match(line.rstrip("\n"))
        if match and match.group(3) in images:
            image = match.group(3)
            mapped[image] = images[image]
            newline = "\n" if line.endswith("\n") else ""
            line = f"{match.group(1)}{match.group(2)}{images[image]}{match.group(4)}{newline}"
        lines.append(line)
    return "".join(lines)


def workdir_of(task: HarborTask, dockerfile: str) -> str:
    """Where the agent works: [environment] workdir, else the Dockerfile's last
    WORKDIR, else /app (Harbor's convention)."""
    if task.environment.workdir:
        return task.environment.workdir
    found = [match.group(1) for match in map(_WORKDIR.match, dockerfile.splitlines()) if match]
    return found[-1].strip("\"'") if found else DEFAULT_WORKDIR


def verifier_table(task: HarborTask) -> dict[str, Any]:
    """task.yaml's verifier: how grading runs the task's tests and reads the reward."""
    script = "run-tests.sh" if task.layout == "terminal-bench-1" else "test.sh"
    env = dict(task.verifier_env)
    if task.layout == "terminal-bench-1":
        env.setdefault("TEST_DIR", TESTS_DIR)
    return {
        "command": f"bash {TESTS_DIR}/{script}",
        "reward": task.reward,
        "user": task.verifier_user or "root",
        "timeout_sec": task.verifier_timeout_sec or DEFAULT_VERIFIER_TIMEOUT_SEC,
        "env": env,
    }


def _environment_files(
    task: HarborTask, folder: Path, images: Mapping[str, str], report: HarborImport
) -> str:
    """Write environment/ (the Dockerfile with its images mapped, and its context);
    the Dockerfile's text."""
    environment = folder / ENVIRONMENT_FOLDER
    dockerfile = task.environment.dockerfile
    if dockerfile is None:
        # A prebuilt image only: the environment is that image.
        environment.mkdir()
        text = f"FROM {task.environment.docker_image}\n"
    elif task.layout == "terminal-bench-1":
        shutil.copytree(
            task.path,
            environment,
            symlinks=True,
            ignore=lambda directory, names: (
                [name for name in names if name in TB1_NOT_CONTEXT]
                if Path(directory) == task.path
                else []
            ),
        )
        text = dockerfile.read_text(encoding="utf-8")
    else:
        shutil.copytree(dockerfile.parent, environment, symlinks=True)
        text = dockerfile.read_text(encoding="utf-8")
    text = map_images(text, images, report.mapped)
    (environment / "Dockerfile").write_text(text, encoding="utf-8")
    return text


def write_task(
    task: HarborTask, folder: Path, images: Mapping[str, str], report: HarborImport
) -> None:
    """Write the ssebench task of one Harbor task (folder must not exist)."""
    if task.solution is None:
        raise UserError(
            f"{task.path}: no solution (solution/solve.sh): the reference agent needs it"
        )
    if task.verifier_mode == "separate":
        raise UserError(
            f"{task.path}: [verifier] environment_mode = separate is not supported yet "
            "(the tests would run in the agent's container)"
        )
    folder.mkdir(parents=True)
    (folder / SOURCE_FOLDER).mkdir()
    dockerfile = _environment_files(task, folder, images, report)
    hidden = folder / HIDDEN_FOLDER
    if task.tests.is_dir():
        shutil.copytree(task.tests, hidden, symlinks=True)
    else:
        hidden.mkdir()
    if task.layout == "terminal-bench-1":
        shutil.copyfile(task.test_script, hidden / task.test_script.name)
    shutil.copyfile(task.solution, folder / SOLUTION_SCRIPT)
    agent: dict[str, Any] = {"timeout_sec": task.agent_timeout_sec or DEFAULT_AGENT_TIMEOUT_SEC}
    if task.agent_user and task.agent_user != "root":
        agent["user"] = task.agent_user
    description = f"{task.layout} task {task.name} (schema {task.schema})"
    data = {
        "id": folder.name,
        "project": task.name.split("/", 1)[0] if "/" in task.name else task.layout,
        "language": "shell",
        "description": description,
        "source_dir": workdir_of(task, dockerfile),
        "prompt": task.instruction.rstrip() + "\n",
        # Graded by the verifier alone: the agent's build and test tools do nothing.
        "build": "true",
        "test": "true",
        "hidden_test": verifier_table(task)["command"],
        "verifier": verifier_table(task),
        "agent": agent,
    }
    resources = {"cpus": task.environment.cpus, "memory_mb": task.environment.memory_mb}
    if any(value is not None for value in resources.values()):
        data["resources"] = {key: value for key, value in resources.items() if value is not None}
    (folder / TASK_FILE).write_text(
        yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000), encoding="utf-8"
    )


def import_tasks(
    sources: Iterable[Path], out: Path, *, images: Mapping[str, str], name: str | None = None
) -> HarborImport:
    """Import the task folders under sources into the dataset folder out (made or
    updated; an imported task's folder is replaced). A task that cannot be read or
    imported is one line of the report's skipped; the others are imported."""
    tasks, problems = read_tasks(sources)
    report = HarborImport(skipped=list(problems))
    out.mkdir(parents=True, exist_ok=True)
    seen: dict[str, Path] = {}
    unused: set[str] = set()
    for task in tasks:
        try:
            task_id = task_id_of(task)
            if task_id in seen:
                raise UserError(f"{task.path}: its task ID {task_id} is {seen[task_id]}'s too")
            folder = out / task_id
            if folder.exists():
                shutil.rmtree(folder)
            try:
                write_task(task, folder, images, report)
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
        except (UserError, OSError, UnicodeDecodeError) as problem:
            report.skipped.append(str(problem))
            continue
        seen[task_id] = task.path
        unused.update(task.unused)
        report.imported.append((str(task.path), task_id))
    report.unused_keys = sorted(unused)
    if report.imported:
        dataset_file = out / DATASET_FILE
        if not dataset_file.exists():
            dataset_file.write_text(
                yaml.safe_dump(
                    {
                        "name": name or re.sub(r"[^a-z0-9-]+", "-", out.resolve().name.lower()),
                        "version": 1,
                        "description": "Imported from Harbor task folders",
                    },
                    sort_keys=False,
                ),
                encoding="utf-8",
            )
        write_manifest(load_dataset(out))
    return report
