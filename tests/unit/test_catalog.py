"""The catalog service on a real socket of this machine, and the CLI reading it."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench.catalog import load_catalog, make_server
from ssebench.catalog.server import CatalogServer
from ssebench.errors import TaskError, UserError
from ssebench.tasks.dataset import load_dataset
from ssebench.tasks.sources import resolve_dataset
from tests.cli import ssebench

PILOT = Path(__file__).resolve().parents[2] / "datasets" / "pilot"


@pytest.fixture
def catalog() -> Iterator[str]:
    server = make_server(PILOT / "manifest.json", "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _get(url: str) -> object:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


def test_serves_the_manifest_and_its_tasks(catalog: str) -> None:
    manifest = json.loads((PILOT / "manifest.json").read_text())
    assert _get(f"{catalog}/manifest.json") == manifest
    listing = _get(f"{catalog}/tasks")
    assert isinstance(listing, dict)
    assert [task["id"] for task in listing["tasks"]] == [task["id"] for task in manifest["tasks"]]
    assert all("files" not in task for task in listing["tasks"])
    first = manifest["tasks"][0]
    assert _get(f"{catalog}/tasks/{first['id']}") == {**first, "dataset": manifest["name"]}


def test_unknown_task_is_404(catalog: str) -> None:
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(f"{catalog}/tasks/no-such-task", timeout=5)
    assert caught.value.code == 404


def test_client_dataset_matches_the_local_one(catalog: str) -> None:
    local = load_dataset(PILOT)
    remote = resolve_dataset(None, catalog)
    assert remote.name == local.name
    assert [task.summary() for task in remote.tasks] == [task.summary() for task in local.tasks]
    assert not remote.tasks[0].path.exists()


def test_bad_manifest_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "manifest.json"
    bad.write_text('{"name": "x", "version": "1", "tasks": [{"id": "Bad ID"}]}')
    with pytest.raises(TaskError, match="every task needs"):
        make_server(bad, "127.0.0.1", 0)
    with pytest.raises(TaskError, match="no such manifest"):
        make_server(tmp_path / "missing.json", "127.0.0.1", 0)


def test_unreachable_catalog_is_a_user_error() -> None:
    server = CatalogServer(("127.0.0.1", 0), {"name": "x", "version": "1", "tasks": []})
    port = server.server_address[1]
    server.server_close()  # nothing listens there now
    with pytest.raises(UserError, match="cannot connect"):
        load_catalog(f"http://127.0.0.1:{port}")
    with pytest.raises(UserError, match="http"):
        load_catalog("ftp://example/")


def test_cli_tasks_list_from_a_catalog(catalog: str) -> None:
    result = ssebench("tasks", "list", "--catalog", catalog, "--json", timeout=60)
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    local = load_dataset(PILOT)
    assert [task["id"] for task in listed["tasks"]] == [task.id for task in local.tasks]


def test_cli_run_from_a_catalog_needs_prebuilt(catalog: str, tmp_path: Path) -> None:
    task = load_dataset(PILOT).tasks[0].id
    result = ssebench(
        "run",
        "--catalog",
        catalog,
        "--task",
        task,
        "--agent",
        "reference",
        "--results",
        str(tmp_path),
        timeout=60,
        env={"SSEBENCH_PREBUILT": ""},
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "ssebench: error: --catalog needs --prebuilt: a catalog has the tasks' metadata, not files"
    ]
