"""Read a catalog service into a Dataset, whose tasks carry metadata but no files.

The tasks' `path` is a place that never exists (under os.devnull), so anything that
would read a task's files fails at once; `ssebench run` refuses a catalog without
--prebuilt before that happens.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ssebench.errors import TaskError, UserError
from ssebench.tasks.dataset import Dataset
from ssebench.tasks.model import DEFAULT_BASE_IMAGE, Task

TIMEOUT_SECONDS = 15.0
NO_FILES = Path(os.devnull)


def _get(url: str) -> Any:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        raise UserError(f"Catalog {url}: HTTP {error.code}") from None
    except urllib.error.URLError as error:
        raise UserError(f"Catalog {url}: cannot connect ({error.reason})") from None
    except (OSError, ValueError):
        raise UserError(f"Catalog {url}: not a JSON answer") from None


def _task(data: dict[str, Any], dataset: str) -> Task:
    try:
        return Task(
            id=str(data["id"]),
            project=str(data["project"]),
            language=str(data["language"]),
            description=str(data.get("description", "")),
            source_dir=str(data["source_dir"]),
            prompt=str(data.get("prompt", "")),
            build=str(data.get("build", "")),
            test=str(data.get("test", "")),
            hidden_test=str(data.get("hidden_test", "")),
            packages=tuple(str(name) for name in data.get("packages", [])),
            base_image=str(data.get("base_image") or DEFAULT_BASE_IMAGE),
            dataset=dataset,
            path=NO_FILES / str(data["id"]),
        )
    except (KeyError, TypeError) as error:
        raise TaskError(f"Catalog task {data.get('id')!r}: field {error} is missing") from None


def load_catalog(url: str) -> Dataset:
    """The dataset a catalog service serves (GET <url>/manifest.json).
    Raises UserError when it cannot be reached, TaskError when its answer is malformed."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"--catalog must be an http:// or https:// URL, not {url!r}")
    base = url.rstrip("/")
    manifest = _get(f"{base}/manifest.json")
    if not isinstance(manifest, dict) or not isinstance(manifest.get("tasks"), list):
        raise TaskError(f"Catalog {base}: the manifest has no list of tasks")
    name = str(manifest.get("name", "catalog"))
    return Dataset(
        name=name,
        version=str(manifest.get("version", "")),
        description=str(manifest.get("description", "")),
        path=NO_FILES,
        tasks=tuple(_task(task, name) for task in manifest["tasks"] if isinstance(task, dict)),
    )
