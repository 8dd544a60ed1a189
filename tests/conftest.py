"""Shared test set-up: what a test needs (markers), isolation, and leak checks.

A test marked docker, kubernetes, podman or browser skips on a laptop without the thing, and
FAILS when CI=true: CI must never hide a missing engine behind a skip. The session
ends by printing how many tests were skipped, so a hidden skip shows.
"""

from __future__ import annotations

import functools
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TINY_DATASET = ROOT / "tests" / "fixtures" / "datasets" / "tiny"
# An agent whose patch makes the pilot task's grading last (for kills during grading).
SLOW_GRADING = ROOT / "tests" / "fixtures" / "agents" / "slow-grading"
PILOT_DATASET = ROOT / "datasets" / "pilot"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
# The cluster's own kubeconfig (its admin), read before any fixture narrows KUBECONFIG
# to a ServiceAccount (tests/kubernetes does, for the runs' tests).
CLUSTER_KUBECONFIG = os.environ.get("KUBECONFIG", "")
# The base image the pilot's Dockerfiles name; Podman cannot pull it on this machine.
PODMAN_BASE_IMAGE = "debian:bookworm-slim"
# Every container, volume and network the tests create carries this label.
TEST_LABEL = "ssebench.test"

# The shared proxy and scripted model of the model-run tests, and the imported Harbor
# tasks, defined here once: each conftest or module importing one would make a session
# fixture of its own (a second stack would start while the first's still runs).
from tests.docker.harbor_dataset import harbor_dataset  # noqa: E402, F401
from tests.docker.model_stack import model_stack  # noqa: E402, F401


@functools.cache
def docker_problem() -> str | None:
    """None when a Docker daemon answers, else why not."""
    try:
        done = subprocess.run(
            ["docker", "version", "--format", "{{.Server.Version}}"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"docker CLI: {type(error).__name__}"
    if done.returncode != 0:
        return f"Docker daemon not reachable: {done.stderr.strip()[:200]}"
    return None


# A folder where a cluster start beside the tests writes `log` and, once it has ended,
# `status` (up.sh's exit status): .ci/run starts k8s-local there while the tests that
# come first run, as its first start builds Kubernetes (about 8 minutes on 2 cores).
CLUSTER_START_VARIABLE = "SSEBENCH_TEST_CLUSTER_START"
CLUSTER_START_SECONDS = 2400


def cluster_start_problem() -> str | None:
    """Wait for a cluster start beside the tests to end; None when it succeeded (or
    there is none), else why not."""
    folder = os.environ.get(CLUSTER_START_VARIABLE)
    if not folder:
        return None
    status, log = Path(folder) / "status", Path(folder) / "log"
    deadline = time.monotonic() + CLUSTER_START_SECONDS
    while not status.is_file():
        if time.monotonic() > deadline:
            return f"the cluster's start beside the tests did not end in {CLUSTER_START_SECONDS} s"
        time.sleep(2)
    code = status.read_text().strip()
    if code != "0":
        tail = log.read_text(errors="replace")[-1500:] if log.is_file() else "(no log)"
        return f"the cluster's start (k8s-local up.sh) failed with status {code}: {tail}"
    return None


@functools.cache
def kubernetes_problem() -> str | None:
    """None when the cluster of $KUBECONFIG answers, else why not."""
    started = cluster_start_problem()
    if started is not None:
        return started
    if not os.environ.get("KUBECONFIG"):
        return "KUBECONFIG is not set (bash ../shared/k8s-local/up.sh prints one)"
    try:
        from kubernetes import client, config
    except ImportError:
        return "the kubernetes client is not installed: pip install -e '.[dev,kubernetes]'"
    try:
        configuration = client.Configuration()
        config.load_kube_config(client_configuration=configuration)
        client.VersionApi(client.ApiClient(configuration)).get_code(_request_timeout=10)
    except Exception as error:
        return f"no cluster answers via KUBECONFIG: {type(error).__name__}: {str(error)[:200]}"
    return None


@functools.cache
def podman_problem() -> str | None:
    """None when Podman works here and holds the base image, else why not."""
    try:
        done = subprocess.run(
            ["podman", "image", "exists", PODMAN_BASE_IMAGE],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"podman CLI: {type(error).__name__} (apt-get install -y podman)"
    if done.returncode != 0:
        return (
            f"Podman has no {PODMAN_BASE_IMAGE} ({done.stderr.strip()[:200]}): "
            "scripts/seed-podman-base-image.sh"
        )
    return None


CHROMIUM = Path("/usr/bin/chromium")


@functools.cache
def browser_problem() -> str | None:
    """None when Debian's chromium and Playwright's Python package are here, else why not."""
    if not CHROMIUM.is_file():
        return f"no {CHROMIUM}: apt-get install -y chromium"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed: pip install -e '.[dev,webui]'"
    return None


# What a marker needs, and how to tell whether this machine has it.
NEEDS: dict[str, tuple[str, Callable[[], str | None]]] = {
    "docker": ("Docker", docker_problem),
    "kubernetes": ("Kubernetes", kubernetes_problem),
    "browser": ("a browser", browser_problem),
    "podman": ("Podman", podman_problem),
}


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker, (thing, problem_of) in NEEDS.items():
        if not item.get_closest_marker(marker):
            continue
        problem = problem_of()
        if problem is not None:
            if IN_CI:
                pytest.fail(f"CI=true and this test needs {thing}: {problem}")
            pytest.skip(problem)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    write_suite_costs(terminalreporter)
    skipped = len(terminalreporter.stats.get("skipped", []))
    terminalreporter.write_line(f"ssebench: skipped tests: {skipped}")


def write_suite_costs(terminalreporter: pytest.TerminalReporter, files: int = 20) -> None:
    """What each suite (tests/<dir>) and the costliest files took, setup and teardown
    included: CI must stay under 60 minutes cold, and --durations names tests, not
    where a shared fixture's build lands."""
    by_suite: dict[str, float] = {}
    by_file: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if not isinstance(report, pytest.TestReport):
                continue
            path = report.nodeid.split("::", 1)[0]
            parts = path.split("/")
            suite = "/".join(parts[:2]) if len(parts) > 2 else path
            by_suite[suite] = by_suite.get(suite, 0.0) + report.duration
            by_file[path] = by_file.get(path, 0.0) + report.duration
    if not by_suite:
        return
    terminalreporter.write_sep("=", "ssebench: what each suite cost")
    for suite, seconds in sorted(by_suite.items(), key=lambda item: -item[1]):
        terminalreporter.write_line(f"{seconds:8.1f}s  {suite}")
    terminalreporter.write_sep("-", f"the {files} costliest files")
    for path, seconds in sorted(by_file.items(), key=lambda item: -item[1])[:files]:
        terminalreporter.write_line(f"{seconds:8.1f}s  {path}")


@pytest.fixture(autouse=True, scope="session")
def fake_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The fake backend's runs live in a folder of this test session only."""
    state = tmp_path_factory.mktemp("fake-state")
    previous = os.environ.get("SSEBENCH_FAKE_STATE")
    os.environ["SSEBENCH_FAKE_STATE"] = str(state)
    yield state
    if previous is None:
        os.environ.pop("SSEBENCH_FAKE_STATE", None)
    else:
        os.environ["SSEBENCH_FAKE_STATE"] = previous


# The one `cluster` of the session (tests/kubernetes/cluster.py), defined here so that
# every directory shares it: a fixture imported into two conftests is two fixtures,
# and the second would start while the first has narrowed $KUBECONFIG. Imported last,
# as that module imports this one.
from tests.kubernetes.cluster import cluster  # noqa: E402, F401
