"""The web UI's launcher with a task catalog ($SSEBENCH_CATALOG, as the Helm chart sets
it): its tasks come from the catalog, and its runs are `--catalog URL --prebuilt`."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench.catalog import make_server
from ssebench.errors import UserError
from ssebench.tasks.dataset import load_dataset
from ssebench.webui.launcher import Launcher
from ssebench.webui.settings import CATALOG_VARIABLE, WebSettings, load_settings
from tests.conftest import PILOT_DATASET

TOKEN = "t" * 24


@pytest.fixture
def catalog() -> Iterator[tuple[str, list[str]]]:
    """A catalog service on 127.0.0.1 serving a manifest with one task fewer than the
    pilot's (so its tasks are told apart from the bundled dataset's), and the paths it
    was asked for."""
    manifest = json.loads((PILOT_DATASET / "manifest.json").read_text())
    manifest["tasks"] = manifest["tasks"][1:]
    server = make_server(PILOT_DATASET / "manifest.json", "127.0.0.1", 0)
    server.manifest_bytes = json.dumps(manifest).encode()
    requests: list[str] = []
    handle = server.RequestHandlerClass.log_message

    def log(handler: object, format: str, *args: object) -> None:
        requests.append(str(getattr(handler, "path", "")))

    server.RequestHandlerClass.log_message = log  # type: ignore[method-assign]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requests
    finally:
        server.RequestHandlerClass.log_message = handle  # type: ignore[method-assign]
        server.shutdown()
        server.server_close()


def _settings(environment: dict[str, str], dataset: str | None = None) -> WebSettings:
    return load_settings(
        host="127.0.0.1",
        port=3001,
        results=Path("results"),
        dataset=dataset,
        backend="fake",
        environment=environment,
    )


def test_settings_take_the_catalog_from_the_environment() -> None:
    url = "http://ssebench-catalog.ssebench.svc:8080"
    assert _settings({CATALOG_VARIABLE: url}).catalog == url
    assert _settings({}).catalog is None
    # A dataset named on the command line wins over the variable.
    assert _settings({CATALOG_VARIABLE: url}, dataset=str(PILOT_DATASET)).catalog is None
    with pytest.raises(UserError, match=r"\$SSEBENCH_CATALOG must be an http"):
        _settings({CATALOG_VARIABLE: "file:///etc/passwd"})


def test_launcher_offers_the_catalog_tasks(catalog: tuple[str, list[str]], tmp_path: Path) -> None:
    url, requests = catalog
    launcher = Launcher(WebSettings(catalog=url, backend="fake"), tmp_path)
    options = launcher.options()
    bundled = [task.id for task in load_dataset(PILOT_DATASET).tasks]
    assert [task["id"] for task in options["tasks"]] == bundled[1:]
    assert "/manifest.json" in requests
    assert (
        launcher.source_dir(bundled[1]) == load_dataset(PILOT_DATASET).task(bundled[1]).source_dir
    )
    # The bundled dataset's first task is not in this catalog, so it cannot be launched.
    with pytest.raises(Exception, match="No task"):
        launcher.argv(run_id="r1", task=bundled[0], agent="reference", model=None)


def test_launch_command_reads_the_catalog_and_uses_prebuilt_images(
    catalog: tuple[str, list[str]], tmp_path: Path
) -> None:
    url, _ = catalog
    task = load_dataset(PILOT_DATASET).tasks[1].id
    argv = Launcher(WebSettings(catalog=url, backend="fake"), tmp_path).argv(
        run_id="r1", task=task, agent="reference", model=None
    )
    assert f"--catalog={url}" in argv and "--prebuilt" in argv
    assert not [item for item in argv if item.startswith("--local")]
    without = Launcher(WebSettings(dataset=str(PILOT_DATASET), backend="fake"), tmp_path).argv(
        run_id="r1", task=task, agent="reference", model=None
    )
    assert f"--local={PILOT_DATASET.resolve()}" in without
    assert "--prebuilt" not in without and not [i for i in without if i.startswith("--catalog")]


def test_a_launch_from_the_catalog_runs_to_its_grade(
    catalog: tuple[str, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real `ssebench run` the launcher starts accepts its command (fake backend):
    the run reads the task from the catalog and is recorded."""
    url, requests = catalog
    # A bundled dataset that does not exist: the run must not fall back to it.
    monkeypatch.setenv("SSEBENCH_DATASET", str(tmp_path / "no-dataset"))
    task = load_dataset(PILOT_DATASET).tasks[1].id
    launcher = Launcher(WebSettings(catalog=url, backend="fake", token=TOKEN), tmp_path)
    launch = launcher.launch(task=task, agent="reference", model=None, run_id="catalog-run")
    assert launch.process.wait(120) == 0, launcher.output("catalog-run")
    output = launcher.output("catalog-run") or ""
    assert "passed" in output, output
    summaries = list(tmp_path.glob(f"{task}/*/reference/catalog-run/summary.json"))
    assert len(summaries) == 1, output
    summary = json.loads(summaries[0].read_text())
    assert summary["status"] == "passed"
    assert summary["config"]["prebuilt"] is True
    assert summary["config"]["dataset"] == "pilot"
    assert requests.count("/manifest.json") >= 1
