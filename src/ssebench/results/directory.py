"""The run directory and the results format (docs/results-format.md).

<results>/<task>/<model>/<agent>/<run id>/    one run
    result.json     the grade, written by the evaluator in the container; the runner
                    adds the run's settings under "config"
    summary.json    written by the runner, always
    harness-events.jsonl   the runtime's own dialog events, where the agent cannot write
    final.patch, agent.log, daemon.log, evaluator.log, entrypoint.log
    archive/        the agent's own files, with dialog.jsonl

Everything in it is read through ssebench.results.files (never following a link).
<results>/<task>/<model>/<agent>/latest -> <newest run id>
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ssebench.errors import UserError
from ssebench.results import files as run_files

RESULT_FILE = "result.json"
SUMMARY_FILE = "summary.json"
HARNESS_EVENTS_FILE = "harness-events.jsonl"
ARCHIVE_DIR = "archive"
LATEST_LINK = "latest"
NO_MODEL = "none"
RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
STATUSES = ("passed", "failed", "error")
NO_RESULT_MESSAGE = "No result: evaluator did not produce output"


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def new_run_id() -> str:
    """YYYYMMDD-HHMMSS-<6 hex>, in UTC."""
    return f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def check_run_id(run_id: str) -> str:
    """Return run_id if it is valid; raise UserError naming the rule otherwise."""
    if run_id == LATEST_LINK or run_id in (".", "..") or not RUN_ID_PATTERN.match(run_id):
        raise UserError(
            f"Invalid run ID {run_id!r}: use 1-64 characters of A-Z a-z 0-9 . _ -, "
            "not 'latest', '.' or '..'"
        )
    return run_id


def path_component(name: str) -> str:
    """A model name as one directory name: 'openai/gpt-4o' -> 'openai__gpt-4o'."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", name.replace("/", "__"))
    return cleaned if cleaned not in ("", ".", "..") else "_"


def make_results_root(root: Path) -> None:
    """Make the results folder (--results) if it is missing. Raises UserError when it
    is a file, or cannot be made."""
    if root.exists() and not root.is_dir():
        raise UserError(f"--results {root} is a file, not a folder; pass --results DIR")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(
            f"Cannot make the results folder {root}: {error.strerror}; "
            "pass --results DIR with a folder you can write"
        ) from None


@dataclass(frozen=True)
class RunDirectory:
    """Where one run's files go on the runner's host."""

    path: Path

    @property
    def archive(self) -> Path:
        return self.path / ARCHIVE_DIR

    @property
    def result_file(self) -> Path:
        return self.path / RESULT_FILE

    @property
    def summary_file(self) -> Path:
        return self.path / SUMMARY_FILE

    @classmethod
    def for_run(
        cls, root: Path, *, task: str, model: str | None, agent: str, run_id: str
    ) -> RunDirectory:
        return cls(root / task / path_component(model or NO_MODEL) / agent / check_run_id(run_id))

    def create(self) -> None:
        """Make the skeleton: the directory, archive/ and an empty result.json.

        Refuses a directory that exists, so a run never overwrites another.
        """
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.mkdir()
            self.archive.mkdir()
            self.result_file.touch()
            self._point_latest_here()
        except FileExistsError:
            raise UserError(
                f"The run directory {self.path} exists; choose another --run-id"
            ) from None
        except OSError as error:
            raise UserError(
                f"Cannot make the run directory {self.path}: {error.strerror}; "
                "pass --results DIR with a folder you can write"
            ) from None

    def _point_latest_here(self) -> None:
        link = self.path.parent / LATEST_LINK
        temporary = self.path.parent / f".{LATEST_LINK}.{os.getpid()}"
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(self.path.name)
        temporary.replace(link)  # atomic: a reader never sees no link

    def read_result(self) -> dict[str, Any] | None:
        """The grade the container wrote, or None when there is none usable."""
        data = read_json(self.result_file)
        if data is None or data.get("status") not in STATUSES:
            return None
        return data


def write_json(path: Path, data: dict[str, Any], *, sort_keys: bool = True) -> None:
    """Write atomically, so a reader sees the old file or the new one, never half.
    sort_keys=False keeps the keys in data's order (a format defined elsewhere)."""
    temporary = path.with_name(f".{path.name}.tmp")
    text = json.dumps(data, indent=2, sort_keys=sort_keys)
    temporary.write_text(text + "\n", encoding="utf-8")
    temporary.replace(path)


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object in a run directory (path is <run dir>/<name>), or None when it is
    missing, not an object, too large, or not a regular file reached without a link."""
    return run_files.read_json_object(path.parent, path.name)


def iter_summaries(root: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every recorded run under root (run directories with a summary.json), oldest first."""
    if not root.is_dir():
        return
    found = []
    for summary in root.glob(f"*/*/*/*/{SUMMARY_FILE}"):
        if summary.parent.name == LATEST_LINK or summary.parent.is_symlink():
            continue
        data = read_json(summary)
        if data is not None:
            found.append((summary.parent, data))
    found.sort(key=lambda item: (str(item[1].get("started_at", "")), item[0].name))
    yield from found
