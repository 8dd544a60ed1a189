"""A hostile agent's archive on Kubernetes (issue 14): real runs on the cluster of the
agent in tests/fixtures/agents/hostile, read out through the collector's tar stream and
the safe extractor, and then the real `ssebench webui` on those runs.

The agent fills its archive with links to /dev/zero, /etc/passwd and
/proc/self/environ, FIFOs named as the files the host reads (dialog.jsonl,
final.patch, result.json, summary.json, logs/agent.log), a hard link, setuid, setgid,
sticky and world-writable modes, and, by run: 250,000 files, 300 nested directories or
a 3 GB sparse file. The collector's GNU tar lists a directory in the order the file
system gives (hashed on ext4), not by name, so each run makes only the bulk that breaks
the cap it tries; a fourth run breaks none, so that every hostile entry is read out.

Each run is recorded: a broken cap as an error naming it (as on Docker), the run within
the caps with its grade. The host's run directory holds no link, FIFO, device, setuid,
setgid, sticky or group/other-writable entry, and no more files or bytes than the caps;
the read-out takes bounded time; nothing of the run is left in the namespace. The web
UI then answers every route of those runs within 2 s and follows nothing.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ssebench.backends.kubernetes import KubernetesBackend
from ssebench.errors import BackendError
from ssebench.extensions import Images
from ssebench.results.safe_tar import MAX_BYTES, MAX_DEPTH, MAX_ENTRIES
from ssebench.runner import READOUT_FAILED, Runner, RunSettings, image_request
from ssebench.tasks import load_dataset
from tests.conftest import PILOT_DATASET
from tests.hostile_agent import SETUID_TEXT, hostile_agent, tree_of
from tests.hostile_run import PASSWD_MARK
from tests.kubernetes.cluster import REGISTRY, TASK, Cluster, build_as_published, new_run_id
from tests.polling import wait_until
from tests.unit.test_webui_hostile_runs import REQUEST_SECONDS, routes_of
from tests.webui.conftest import TOKEN, Server, request, start_server, stop_server

pytestmark = pytest.mark.kubernetes
# The read-out of 200,000 entries is the slow part: 325-356 s measured on two loaded cores
# (the extractor alone writes them in about 120 s there; the rest is the collector's tar
# at half a core and the stream over the API), where Docker's copy stays under 240 s.
COPY_SECONDS = 600
SPARSE_BYTES = 3 * 1024**3
# What the agent makes that is neither a regular file nor a directory: four links and
# logs/daemon.log (symbolic), the second name of the setuid file (a hard link in the
# stream), five FIFOs.
SKIPPED = 11
# Names in archive/ that must not reach the host: links and FIFOs.
NEVER_ON_THE_HOST = (
    "a-link-zero",
    "a-link-passwd",
    "a-link-environ",
    "a-link-up",
    "dialog.jsonl",
    "final.patch",
    "result.json",
    "summary.json",
    "logs/agent.log",
    "logs/daemon.log",
)
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@dataclass(frozen=True)
class Scenario:
    name: str
    agent_env: dict[str, str]  # how much of each bulk the agent makes
    caps: dict[str, str]  # the read-out's settings in the runner's environment
    broken: str | None  # what the read-out reports, None when no cap breaks


def bulk(files: int = 0, depth: int = 0, sparse_bytes: int = 0) -> dict[str, str]:
    return {
        "SSE_HOSTILE_FILES": str(files),
        "SSE_HOSTILE_DEPTH": str(depth),
        "SSE_HOSTILE_SPARSE_BYTES": str(sparse_bytes),
    }


SCENARIOS = (
    Scenario("files", bulk(files=250_000), {}, f"more than {MAX_ENTRIES} entries"),
    Scenario("depth", bulk(files=1000, depth=300), {}, f"deeper than {MAX_DEPTH} directories"),
    Scenario(
        "bytes", bulk(files=1000, sparse_bytes=SPARSE_BYTES), {}, f"more than {MAX_BYTES} bytes"
    ),
    # Room for the 300 directories: nothing breaks, every hostile entry is read out.
    Scenario("within", bulk(files=1000, depth=300), {"SSEBENCH_ARCHIVE_MAX_DEPTH": "400"}, None),
)


@dataclass(frozen=True)
class Finished:
    run_id: str
    run_dir: Path
    summary: dict[str, Any]
    raised: str | None  # the BackendError runner.run raised
    stderr: str  # what the read-out said to the operator
    objects_left: list[str]  # the run's objects in the namespace after it


def run_settings(results: Path, scenario: Scenario) -> RunSettings:
    return RunSettings(
        task=load_dataset(PILOT_DATASET).task(TASK),
        agent=hostile_agent(),
        model=None,
        run_id=new_run_id(f"hostile-{scenario.name}"),
        results_root=results,
        backend="kubernetes",
        timeout=900,
        prebuilt=True,
        registry=REGISTRY,
        model_env=scenario.agent_env,
    )


@pytest.fixture(scope="module")
def images(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Images:
    """The hostile agent's image, built here and tagged under the name the backend uses."""
    build_as_published(image_request(load_dataset(PILOT_DATASET).task(TASK), hostile_agent()))
    settings = run_settings(tmp_path_factory.mktemp("images"), SCENARIOS[-1])
    return Runner(KubernetesBackend(), out=io.StringIO()).prepare(settings)


def run_hostile(cluster: Cluster, results: Path, images: Images, scenario: Scenario) -> Finished:
    settings = run_settings(results, scenario)
    stderr = io.StringIO()
    raised = None
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stderr(stderr):
        for variable, value in scenario.caps.items():
            patch.setenv(variable, value)
        started = time.monotonic()
        try:
            Runner(KubernetesBackend(), out=io.StringIO()).run(settings, images)
        except BackendError as error:
            raised = str(error)
    print(f"{scenario.name}: {time.monotonic() - started:.0f}s")
    run_dir = results / TASK / "none" / "hostile" / settings.run_id
    summary = json.loads((run_dir / "summary.json").read_text())
    print(f"{scenario.name}: durations {summary['durations']}")
    selector = f"ssebench.run-id={settings.run_id}"
    # The runner leaves the deletion to the cluster; the pod of a run that wrote much to
    # its volumes takes its time to go on a loaded machine.
    with contextlib.suppress(AssertionError):  # what is left is checked by the test
        wait_until(lambda: cluster.objects_of(selector) == [], "the run's objects to go", 150)
    return Finished(
        settings.run_id,
        run_dir,
        summary,
        raised,
        stderr.getvalue(),
        cluster.objects_of(selector),
    )


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostile-results")


@pytest.fixture(scope="module")
def finished(cluster: Cluster, results: Path, images: Images) -> dict[str, Finished]:
    """Every scenario's run, one after the other (the caps are read from the runner's
    environment; the machine has two cores)."""
    return {
        scenario.name: run_hostile(cluster, results, images, scenario) for scenario in SCENARIOS
    }


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[scenario.name for scenario in SCENARIOS])
def test_a_hostile_archive_reaches_the_host_safe_and_within_the_caps(
    finished: dict[str, Finished], scenario: Scenario
) -> None:
    run = finished[scenario.name]
    summary = run.summary
    assert summary["exit_code"] == 0, summary  # the agent exited 0 and the run was graded
    assert summary["durations"]["collect_results"] < COPY_SECONDS, summary["durations"]
    if scenario.broken is None:
        assert run.raised is None
        assert summary["status"] == "failed" and summary["error_msg"] == "Hidden test failed"
    else:
        assert run.raised is not None and "was not unpacked" in run.raised
        assert scenario.broken in run.raised
        assert summary["status"] == "error", summary
        assert summary["error_msg"].startswith(READOUT_FAILED)
        assert scenario.broken in summary["error_msg"]
        assert summary["evaluator_grade"]["status"] == "failed"  # not the record
    assert run.objects_left == []

    bad, entries, size = tree_of(run.run_dir)
    assert bad == []
    assert 0 < entries <= MAX_ENTRIES
    assert size <= MAX_BYTES
    archive = run.run_dir / "archive"
    # The harness's own files are the harness's: the agent's FIFOs of these names stay out.
    for name in ("summary.json", "result.json", "final.patch"):
        assert stat.S_ISREG((run.run_dir / name).lstat().st_mode)
    for name in NEVER_ON_THE_HOST:
        assert not os.path.lexists(archive / name), name
    if scenario.name == "files":
        assert len(list((archive / "many").glob("*/*"))) < 250_000
    if scenario.name == "bytes":
        assert not os.path.lexists(archive / "zz-sparse")


def test_every_hostile_entry_is_skipped_or_made_safe(finished: dict[str, Finished]) -> None:
    """The run within the caps: the read-out went through the whole archive."""
    run = finished["within"]
    archive = run.run_dir / "archive"
    assert f"skipped {SKIPPED} entries" in run.stderr, run.stderr
    # tar stores the setuid file's second name as a hard link: which name comes first
    # depends on the directory's order, and only that one is a file on the host.
    copies = [archive / name for name in ("a-setuid", "a-z-hard-link") if (archive / name).exists()]
    assert len(copies) == 1, copies
    assert copies[0].read_text() == SETUID_TEXT
    for name in (copies[0].name, "a-setgid", "a-world-writable", "a-sticky", "logs"):
        assert stat.S_IMODE((archive / name).lstat().st_mode) == 0o755, name
    assert len(list((archive / "many").glob("*/*"))) == 1000
    assert (archive / "zz-deep" / "/".join(["d"] * 300) / "bottom").read_text() == "deep\n"


@pytest.fixture(scope="module")
def webui(
    finished: dict[str, Finished], results: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    log = tmp_path_factory.mktemp("webui-log") / "webui.log"
    server = start_server(results, log, SSEBENCH_BACKEND="kubernetes")
    yield server
    stop_server(server)


def timed(server: Server, method: str, path: str, body: Any) -> tuple[int, Any, float]:
    headers = dict(AUTH)
    data = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        data = json.dumps(body).encode()
    started = time.monotonic()
    status, answer = request(server.url + path, method=method, headers=headers, body=data)
    return status, answer, time.monotonic() - started


def test_the_web_ui_serves_every_route_of_the_hostile_runs_in_time(
    finished: dict[str, Finished], webui: Server
) -> None:
    status, listed, seconds = timed(webui, "GET", "/api/runs?limit=1000", None)
    assert status == 200 and seconds < REQUEST_SECONDS, seconds
    shown = {run["run_id"]: run["status"] for run in listed["runs"]}
    assert shown == {run.run_id: run.summary["status"] for run in finished.values()}
    status, _, seconds = timed(webui, "GET", "/", None)
    assert status == 200 and seconds < REQUEST_SECONDS, seconds
    for run in finished.values():
        for method, path, body in routes_of(run.run_id):
            status, answer, seconds = timed(webui, method, path, body)
            assert status < 500, (path, answer)
            assert seconds < REQUEST_SECONDS, (path, seconds)
            # Neither /etc/passwd nor the UI's own environment (which holds the token).
            text = json.dumps(answer)
            assert PASSWD_MARK not in text and TOKEN not in text, path
        detail = timed(webui, "GET", f"/api/runs/{run.run_id}", None)[1]
        assert detail["status"] == run.summary["status"] and detail["state"] == "finished"
        kinds = {(entry["kind"], entry["setuid"]) for entry in detail["archive"]["entries"]}
        assert kinds <= {("file", False), ("directory", False)}, kinds
