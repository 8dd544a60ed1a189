"""A local dataset: a folder with dataset.yaml, one folder per task, and manifest.json.

manifest.json is generated (`ssebench dataset manifest DIR`): every task's metadata
and the SHA-256 of every file of the task, so a changed task is noticed (`--check`).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.errors import TaskError
from ssebench.tasks.model import TASK_FILE, Task, load_task, load_yaml_file

DATASET_FILE = "dataset.yaml"
MANIFEST_FILE = "manifest.json"
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,47}$")


@dataclass(frozen=True)
class Dataset:
    name: str
    version: str
    description: str
    path: Path
    tasks: tuple[Task, ...]

    def task(self, task_id: str) -> Task:
        for task in self.tasks:
            if task.id == task_id:
                return task
        known = ", ".join(task.id for task in self.tasks) or "none"
        raise TaskError(f"No task {task_id!r} in {self.path} (tasks: {known})")


def load_dataset(folder: Path) -> Dataset:
    """Read a dataset folder and every task in it. Raises TaskError."""
    file = folder / DATASET_FILE
    if not folder.is_dir():
        raise TaskError(f"{folder}: no such dataset folder; pass a folder with a dataset.yaml")
    data = load_yaml_file(file, "dataset")
    if not isinstance(data, dict):
        raise TaskError(f"{file}: must be a mapping of fields", path=str(file))
    name = data.get("name", folder.name)
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise TaskError(f"{file}: field 'name' must be 1-48 of [a-z0-9-]", field="name")
    version = data.get("version")
    if not isinstance(version, (str, int)) or isinstance(version, bool) or version == "":
        raise TaskError(f"{file}: field 'version' is missing", path=str(file), field="version")
    tasks = tuple(
        load_task(child, dataset=name)
        for child in sorted(folder.iterdir())
        if (child / TASK_FILE).exists()
    )
    if not tasks:
        raise TaskError(f"{folder}: no task folders (folders with a {TASK_FILE})")
    return Dataset(
        name=name,
        version=str(version),
        description=str(data.get("description", "")).strip(),
        path=folder,
        tasks=tasks,
    )


# Files a tool run in a task folder may leave behind; they are not part of the task.
IGNORED_PARTS = frozenset({"__pycache__", ".pytest_cache", ".DS_Store"})


def _task_files(task: Task) -> list[Path]:
    return sorted(
        path
        for path in task.path.rglob("*")
        if path.is_file() and not IGNORED_PARTS.intersection(path.relative_to(task.path).parts)
    )


def _file_hashes(task: Task) -> dict[str, str]:
    hashes = {}
    for file in _task_files(task):
        hashes[file.relative_to(task.path).as_posix()] = hashlib.sha256(
            file.read_bytes()
        ).hexdigest()
    return hashes


def render_manifest(dataset: Dataset) -> dict[str, Any]:
    return {
        "name": dataset.name,
        "version": dataset.version,
        "description": dataset.description,
        "tasks": [{**task.summary(), "files": _file_hashes(task)} for task in dataset.tasks],
    }


def manifest_text(dataset: Dataset) -> str:
    return json.dumps(render_manifest(dataset), indent=2, sort_keys=True) + "\n"


def write_manifest(dataset: Dataset) -> Path:
    path = dataset.path / MANIFEST_FILE
    path.write_text(manifest_text(dataset), encoding="utf-8")
    return path


def manifest_differences(dataset: Dataset) -> list[str]:
    """What differs between manifest.json and the dataset as it is now (empty: none)."""
    path = dataset.path / MANIFEST_FILE
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return [f"{path} is missing"]
    except json.JSONDecodeError:
        return [f"{path} is not valid JSON"]
    current = render_manifest(dataset)
    differences = []
    recorded_tasks = {task.get("id"): task for task in recorded.get("tasks", [])}
    current_tasks = {task["id"]: task for task in current["tasks"]}
    for task_id in sorted(set(recorded_tasks) | set(current_tasks)):
        if task_id not in current_tasks:
            differences.append(f"task {task_id}: in the manifest but not in the dataset")
        elif task_id not in recorded_tasks:
            differences.append(f"task {task_id}: not in the manifest")
        elif recorded_tasks[task_id] != current_tasks[task_id]:
            differences.append(f"task {task_id}: files or metadata changed")
    for key in ("name", "version", "description"):
        if recorded.get(key) != current[key]:
            differences.append(f"field {key} changed")
    return differences
