"""SWE-bench-format instances: reading the published files and checking each instance.

An instance is one JSON object per line with the fields of the official datasets
(REQUIRED_FIELDS). A 5.x instance also carries its own build and test (`dockerfile`,
`eval_script`, `log_parser`, optional `eval_type`); a classic one does not, and needs
an install specification (specs.py). A line that is not an object, or an object that
lacks a field, is a Skipped entry with one line saying why, never an exception.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.errors import UserError

REQUIRED_FIELDS = (
    "instance_id",
    "repo",
    "base_commit",
    "patch",
    "test_patch",
    "problem_statement",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
    "version",
)
# A 5.x instance carries these three; with all of them it needs no specification.
OWN_BUILD_FIELDS = ("dockerfile", "eval_script", "log_parser")
# A 5.x row may give its environment as an image to pull in place of a dockerfile.
IMAGE_FIELD = "image"
EVAL_TYPES = ("pass_and_fail", "fail_only")
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_COMMIT = re.compile(r"^[0-9a-f]{7,40}$")
_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]*$")


@dataclass(frozen=True)
class Instance:
    """One instance, its fields checked and its test lists parsed."""

    instance_id: str
    repo: str
    base_commit: str
    patch: str
    test_patch: str
    problem_statement: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    version: str
    dockerfile: str | None
    eval_script: str | None
    log_parser: str | None
    eval_type: str
    created_at: str | None = None
    environment_setup_commit: str | None = None
    image: str | None = None

    @property
    def has_own_build(self) -> bool:
        """A 5.x instance: its eval_script with a dockerfile or an image to build on."""
        return self.eval_script is not None and (
            self.dockerfile is not None or self.image is not None
        )

    @property
    def repo_name(self) -> str:
        return self.repo.split("/", 1)[1]


class InstanceSkipped(Exception):
    """An instance that cannot be imported; its message is the one-line reason."""


@dataclass(frozen=True)
class Skipped:
    """An instance that is not imported, and why (one line)."""

    instance_id: str
    reason: str

    def line(self) -> str:
        return f"skipped {self.instance_id}: {self.reason}"


def _test_list(value: Any) -> tuple[str, ...] | None:
    """FAIL_TO_PASS / PASS_TO_PASS: a list of strings, or (as the published datasets
    store them) a JSON string of one; None when it is neither."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    return None


def _optional_text(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) and value.strip() else None


# An absolute path inside a test ID's parameters: the path of the machine that made
# the record (e.g. test_x[/n/fs/.../data/a.dcm-data0]), which no other machine has.
_FOREIGN_PATH = re.compile(r"\[(?:[^\]]*[-,])?/[^\]/\s]+/[^\]\s]*\]?")


def foreign_path_tests(tests: tuple[str, ...]) -> list[str]:
    """The test IDs that carry an absolute path in their parameters."""
    return [test for test in tests if _FOREIGN_PATH.search(test.partition("::")[2])]


def _date_text(value: Any) -> str | None:
    """created_at as text: a string as published, or a parquet file's timestamp."""
    if hasattr(value, "isoformat"):
        return str(value.isoformat())
    return value if isinstance(value, str) and value.strip() else None


def check_instance(data: Any, line_number: int) -> Instance | Skipped:
    """An Instance from one parsed JSON line, or why it cannot be one."""
    if not isinstance(data, dict):
        return Skipped(f"line {line_number}", "not a JSON object")
    name = data.get("instance_id")
    label = name if isinstance(name, str) and name.strip() else f"line {line_number}"
    missing = [key for key in REQUIRED_FIELDS if key not in data or data[key] is None]
    if missing:
        return Skipped(label, f"the field {missing[0]} is missing")
    for key in ("instance_id", "repo", "base_commit", "patch", "test_patch"):
        if not isinstance(data[key], str) or not data[key].strip():
            return Skipped(label, f"the field {key} must be a non-empty string")
    if not isinstance(data["problem_statement"], str):
        return Skipped(label, "the field problem_statement must be a string")
    if not _REPO.match(data["repo"]):
        return Skipped(label, f"the field repo must be OWNER/NAME, not {data['repo']!r}")
    if not _COMMIT.match(data["base_commit"]):
        return Skipped(label, "the field base_commit must be a hexadecimal commit ID")
    tests = {key: _test_list(data[key]) for key in ("FAIL_TO_PASS", "PASS_TO_PASS")}
    for key, value in tests.items():
        if value is None:
            return Skipped(label, f"the field {key} must be a list of test names")
    if not tests["FAIL_TO_PASS"]:
        return Skipped(label, "FAIL_TO_PASS is empty: nothing would tell a fix apart")
    eval_type = data.get("eval_type") or "pass_and_fail"
    if eval_type not in EVAL_TYPES:
        return Skipped(label, f"the field eval_type must be one of {', '.join(EVAL_TYPES)}")
    image = data.get(IMAGE_FIELD)
    if image is not None and (not isinstance(image, str) or not _IMAGE.match(image)):
        return Skipped(label, "the field image must be an image name, e.g. NAMESPACE/NAME:TAG")
    version = data["version"]
    if not isinstance(version, (str, int, float)) or isinstance(version, bool):
        return Skipped(label, "the field version must be a string")
    return Instance(
        instance_id=data["instance_id"],
        repo=data["repo"],
        base_commit=data["base_commit"],
        patch=data["patch"],
        test_patch=data["test_patch"],
        problem_statement=data["problem_statement"],
        fail_to_pass=tests["FAIL_TO_PASS"] or (),
        pass_to_pass=tests["PASS_TO_PASS"] or (),
        version=str(version),
        dockerfile=_optional_text(data, "dockerfile"),
        eval_script=_optional_text(data, "eval_script"),
        log_parser=_optional_text(data, "log_parser"),
        eval_type=eval_type,
        created_at=_date_text(data.get("created_at")),
        environment_setup_commit=_optional_text(data, "environment_setup_commit"),
        image=_optional_text(data, IMAGE_FIELD),
    )


# Fields of the published records that the import reads (beside REQUIRED_FIELDS).
USED_FIELDS = (
    *REQUIRED_FIELDS,
    *OWN_BUILD_FIELDS,
    IMAGE_FIELD,
    "eval_type",
    "environment_setup_commit",
    "created_at",
)


def unused_fields(records: list[Any]) -> list[str]:
    """The fields of the records that the import does not use, sorted: named to the
    user in one line, so that nothing is dropped silently."""
    names: set[str] = set()
    for record in records:
        data = record.record if isinstance(record, _Numbered) else record
        if isinstance(data, dict):
            names.update(str(key) for key in data)
    return sorted(names - set(USED_FIELDS))


def read_records(path: Path) -> list[Any]:
    """The records of a published file: JSONL, a JSON array, or a parquet file (by its
    `.parquet` suffix). Raises UserError when the file cannot be read as one of them; a
    JSONL line that is not valid JSON is a Skipped entry."""
    if path.suffix == ".parquet":
        return _parquet_records(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(
            f"{path}: no such file; pass a JSONL, JSON or parquet file of instances"
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: cannot be read ({error}); pass a UTF-8 JSONL file") from None
    if text.lstrip().startswith("["):
        try:
            array = json.loads(text)
        except json.JSONDecodeError as error:
            raise UserError(
                f"{path}: starts like a JSON array but is not valid JSON ({error.msg}, "
                f"line {error.lineno}); pass a JSON array or one object per line"
            ) from None
        return list(array)
    records: list[Any] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(_Numbered(number, json.loads(line)))
        except json.JSONDecodeError:
            records.append(Skipped(f"line {number}", "not valid JSON"))
    return records


@dataclass(frozen=True)
class _Numbered:
    """A JSONL record with its line number, which names it while it has no instance_id."""

    line: int
    record: Any


def _parquet_records(path: Path) -> list[Any]:
    try:
        import pyarrow.parquet
    except ImportError:
        raise UserError(
            "reading a parquet file needs pyarrow: pip install 'ssebench[datasets]'"
        ) from None
    try:
        return list(pyarrow.parquet.read_table(path).to_pylist())
    except FileNotFoundError:
        raise UserError(f"{path}: no such file; pass a parquet file of instances") from None
    except (OSError, pyarrow.ArrowException) as error:
        raise UserError(f"{path}: not a readable parquet file ({error})") from None


def hub_records(name: str, split: str) -> list[Any]:
    """The records of a published dataset's split, through the `datasets` library (its
    cache, or the network unless HF_DATASETS_OFFLINE=1). Raises UserError."""
    try:
        import datasets
    except ImportError:
        raise UserError(
            "--dataset needs the datasets library: pip install 'ssebench[datasets]'"
        ) from None
    try:
        loaded = datasets.load_dataset(name, split=split)  # type: ignore[attr-defined]
    except Exception as error:  # the library raises many kinds; each is one line here
        reason = " ".join(str(error).split())[:300]
        raise UserError(
            f"--dataset {name} --split {split}: cannot be loaded ({type(error).__name__}: {reason})"
        ) from None
    return [dict(row) for row in loaded]


def check_records(records: list[Any]) -> Iterator[Instance | Skipped]:
    """Every record checked, in order: an Instance, or a Skipped entry saying why."""
    for number, record in enumerate(records, start=1):
        if isinstance(record, Skipped):
            yield record
        elif isinstance(record, _Numbered):
            yield check_instance(record.record, record.line)
        else:
            yield check_instance(record, number)


def read_instances(path: Path) -> Iterator[Instance | Skipped]:
    """Every instance of a JSONL, JSON array or parquet file, in order. Raises UserError
    when the file cannot be read; a bad record is a Skipped entry."""
    yield from check_records(read_records(path))
