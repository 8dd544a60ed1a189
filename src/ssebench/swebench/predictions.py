"""SWE-bench predictions made elsewhere (`ssebench grade --predictions`): the file read
line by line, matched to an imported dataset's tasks, and the report in the shape of
the official harness's run report (swebench.harness.reporting.make_run_report).

A predictions file is what every leaderboard submission is: JSON lines (or a JSON array,
or a JSON object by instance ID, as the official harness also reads) of
`instance_id`, `model_name_or_path` and `model_patch`. Whatever is wrong with one line
is one problem naming it; the other lines are graded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssebench.errors import UserError
from ssebench.tasks import Task

INSTANCE = "instance_id"
MODEL = "model_name_or_path"
PATCH = "model_patch"
# The task folder's record of the instance it was imported from (importer.py).
RECORD_FILE = "swebench.json"
# Larger predictions files are not a list of patches.
FILE_LIMIT = 1024 * 1024 * 1024

# What became of a graded prediction, as the official report sorts them.
RESOLVED, UNRESOLVED, ERROR = "resolved", "unresolved", "error"


@dataclass(frozen=True)
class Prediction:
    instance_id: str
    model: str
    patch: str
    where: str  # "line 3", "item 3": for messages

    @property
    def empty(self) -> bool:
        return not self.patch.strip()


@dataclass
class Predictions:
    """The usable predictions (by instance ID; a later line replaces an earlier one, as
    in the official harness) and one line for each that is not."""

    by_instance: dict[str, Prediction] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def models(self) -> list[str]:
        return list(dict.fromkeys(p.model for p in self.by_instance.values()))


def read_predictions(path: Path) -> Predictions:
    """The predictions of a JSONL file, a JSON array or a JSON object by instance ID.
    Raises UserError for a file that cannot be read at all."""
    try:
        if path.stat().st_size > FILE_LIMIT:
            raise UserError(f"--predictions {path} is larger than {FILE_LIMIT} bytes")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"--predictions {path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"--predictions {path} is a folder; name a JSONL or JSON file") from None
    except UnicodeDecodeError as error:
        raise UserError(
            f"--predictions {path} is not UTF-8 text (byte {error.start}); "
            "write it as JSON lines in UTF-8"
        ) from None
    except OSError as error:
        raise UserError(f"--predictions {path} cannot be read: {error.strerror}") from None
    items = _items(text)
    if not items:
        raise UserError(f"--predictions {path} holds no predictions")
    found = Predictions()
    for where, item in items:
        prediction = _prediction(where, item)
        if isinstance(prediction, str):
            found.problems.append(f"--predictions {path} {where}: {prediction}; skipped")
            continue
        earlier = found.by_instance.get(prediction.instance_id)
        if earlier is not None:
            found.problems.append(
                f"--predictions {path} {where}: {prediction.instance_id} again (first at "
                f"{earlier.where}); the later one is graded, as the official harness does"
            )
        found.by_instance[prediction.instance_id] = prediction
    return found


def _items(text: str) -> list[tuple[str, Any]]:
    """(where, parsed value) of each prediction: the items of a JSON array or of a JSON
    object by instance ID, else the file's lines. A line that is not JSON is kept as
    _Unparsable, so that it becomes one problem."""
    if text.lstrip()[:1] in ("[", "{"):
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = None  # JSON lines, read below
        if isinstance(whole, list):
            return [(f"item {number}", item) for number, item in enumerate(whole, start=1)]
        if isinstance(whole, dict):
            if INSTANCE in whole:
                return [("line 1", whole)]
            return [(f"entry {key!r}", item) for key, item in whole.items()]
    items: list[tuple[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            items.append((f"line {number}", json.loads(line)))
        except json.JSONDecodeError as error:
            items.append((f"line {number}", _Unparsable(error.msg)))
    return items


@dataclass(frozen=True)
class _Unparsable:
    reason: str


def _prediction(where: str, item: Any) -> Prediction | str:
    """The prediction, or what is wrong with it (one clause)."""
    if isinstance(item, _Unparsable):
        return f"not JSON ({item.reason})"
    if not isinstance(item, dict):
        return f"not a JSON object with {INSTANCE}, {MODEL} and {PATCH}"
    instance_id = item.get(INSTANCE)
    if not isinstance(instance_id, str) or not instance_id:
        return f"no {INSTANCE} (a string)"
    model = item.get(MODEL)
    if not isinstance(model, str) or not model.strip():
        return f"{instance_id}: no {MODEL} (a string)"
    patch = item.get(PATCH)
    if patch is not None and not isinstance(patch, str):
        return f"{instance_id}: {PATCH} is not a string"
    return Prediction(instance_id, model, patch or "", where)


def instance_of(task: Task) -> str | None:
    """The SWE-bench instance a task was imported from, by its record; None for a task
    that is not an imported instance."""
    try:
        data = json.loads((task.path / RECORD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    instance_id = data.get(INSTANCE) if isinstance(data, dict) else None
    return instance_id if isinstance(instance_id, str) else None


def tasks_by_instance(tasks: Iterable[Task]) -> dict[str, Task]:
    return {instance_id: task for task in tasks if (instance_id := instance_of(task)) is not None}


def official_report(
    dataset_ids: Sequence[str],
    predictions: Mapping[str, Prediction],
    outcomes: Mapping[str, str],
) -> dict[str, Any]:
    """The run report as the official harness writes it (schema_version 2), from the
    instances of the dataset, the predictions graded, and what became of each
    non-empty one (RESOLVED, UNRESOLVED, ERROR; missing: not graded, an error there
    too, as the harness counts an instance without a report)."""
    incomplete, empty, completed, resolved, unresolved, error = (set() for _ in range(6))
    for instance_id in dataset_ids:
        prediction = predictions.get(instance_id)
        if prediction is None:
            incomplete.add(instance_id)
        elif prediction.empty:
            empty.add(instance_id)
        elif outcomes.get(instance_id) == RESOLVED:
            completed.add(instance_id)
            resolved.add(instance_id)
        elif outcomes.get(instance_id) == UNRESOLVED:
            completed.add(instance_id)
            unresolved.add(instance_id)
        else:
            error.add(instance_id)
    return {
        "total_instances": len(dataset_ids),
        "submitted_instances": len(predictions),
        "completed_instances": len(completed),
        "resolved_instances": len(resolved),
        "unresolved_instances": len(unresolved),
        "empty_patch_instances": len(empty),
        "error_instances": len(error),
        "completed_ids": sorted(completed),
        "incomplete_ids": sorted(incomplete),
        "empty_patch_ids": sorted(empty),
        "submitted_ids": sorted(predictions),
        "resolved_ids": sorted(resolved),
        "unresolved_ids": sorted(unresolved),
        "error_ids": sorted(error),
        "schema_version": 2,
    }
