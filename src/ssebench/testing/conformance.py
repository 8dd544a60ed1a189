"""The behaviour suite every backend must pass (spec, "The interface").

An extension author subclasses BackendContract in a pytest module and says how to make
the backend and which images behave how; the suite then drives real runs through the
interface and checks the contracts. See docs/writing-a-backend.md:

    from ssebench.testing.conformance import BackendContract

    class TestMyBackend(BackendContract):
        known_gaps = frozenset({"endpoint"})     # contracts not met yet, with a reason

        def make_backend(self):
            return MyBackend()

        task_dir = Path("datasets/pilot/py-semver-prerelease")  # the runs' task

The suite asks the backend's prepare_images for the pilot images of task_dir (set
prebuilt = True for a backend that runs published images only), or override images_for.
A backend without sidecar mode sets modes = frozenset({"sandbox"}); the suite then
checks that it refuses a sidecar run cleanly.

A listed gap is expected to fail; when it passes, the test fails so the list stays
honest. Every run the suite starts carries the label ssebench.conformance=true and is
removed at the end of its test.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import secrets
import socket
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

import pytest

from ssebench.extensions import (
    DEADLINE_LABEL,
    KEEP_LABEL,
    LISTED_RUNS,
    RUN_ID_LABEL,
    RUNNER_HOST_LABEL,
    RUNNER_PID_LABEL,
    TASK_ID_LABEL,
    BackendError,
    RunHandle,
    UserError,
    prebuilt_images,
)
from ssebench.testing.contract_runs import (
    AGENT_OF_KIND,
    CONFORMANCE_LABEL,
    EXEC_SECRET_NAME,
    SECRET_SENTINEL,
    ContractRuns,
    ImageKind,
    pilot_request,
    task_source_dir,
)

# Also the names a backend's test module may take from here, as before the suite's runs
# had a module of their own (contract_runs.py).
__all__ = [
    "AGENT_OF_KIND",
    "CONFORMANCE_LABEL",
    "CONTRACTS",
    "BackendContract",
    "ContractRuns",
    "ImageKind",
    "pilot_request",
    "task_source_dir",
]

CONTRACTS = (
    "pass_run",
    "results_in_dest",
    "stop_returns_143",
    "stop_before_start",
    "cleanup_idempotent",
    "list_and_inspect",
    "logs",
    "wait_timeout",
    "keep",
    "start_error",
    "endpoint",
    "exec_argv",
    "prune_labels",
    "prepare_images",
    "logs_follow",
    "output_streamed",
    "sidecar",
)
# A registry that answers nothing: on this machine's loopback, where nothing listens on
# the discard port, so a check or pull of it fails at once without leaving the machine.
MISSING_REGISTRY = "127.0.0.1:9/ssebench-conformance-missing"


class BackendContract(ContractRuns):
    """Subclass in a test module; implement make_backend and set task_dir (or override
    images_for)."""

    known_gaps: ClassVar[frozenset[str]] = frozenset()
    # -- helpers ---------------------------------------------------------------------

    @contextmanager
    def contract(self, name: str) -> Iterator[None]:
        assert name in CONTRACTS, name
        if name not in self.known_gaps:
            yield
            return
        try:
            yield
        # pytest.raises and pytest.fail fail with an outcome that is not an Exception.
        except (Exception, pytest.fail.Exception) as failure:
            pytest.xfail(f"known gap {name}: {type(failure).__name__}: {failure}")
        pytest.fail(f"{name} is listed in known_gaps but holds now; remove it from the list")

    # -- the contracts ---------------------------------------------------------------

    def test_pass_run(self, tmp_path: Path) -> None:
        """start, wait, collect_results, cleanup: exit 0, a passed grade, nothing left."""
        with self.contract("pass_run"):
            backend = self.make_backend()
            spec = self.make_spec(backend, "pass", tmp_path)
            handle = backend.start(spec)
            try:
                assert backend.wait(handle, self.run_timeout) == 0
                backend.collect_results(handle, Path(spec.results.source))
            finally:
                backend.cleanup(handle)
            result = json.loads((Path(spec.results.source) / "result.json").read_text())
            assert result["status"] == "passed", result
            assert backend.list_runs({RUN_ID_LABEL: spec.run_id}) == []

    def test_results_in_dest(self, tmp_path: Path) -> None:
        """After collect_results, dest holds the grade and the archive folder."""
        with self.contract("results_in_dest"):
            backend = self.make_backend()
            spec = self.make_spec(backend, "pass", tmp_path)
            with self.started(backend, spec) as handle:
                backend.wait(handle, self.run_timeout)
                backend.collect_results(handle, Path(spec.results.source))
                dest = Path(spec.results.source)
                assert json.loads((dest / "result.json").read_text())["status"] in (
                    "passed",
                    "failed",
                    "error",
                )
                assert (dest / "archive").is_dir()

    def test_stop_returns_143(self, tmp_path: Path) -> None:
        """A stopped run's wait returns 143 (128 + SIGTERM)."""
        with self.contract("stop_returns_143"):
            backend = self.make_backend()
            spec = self.make_spec(backend, "sleep", tmp_path)
            with self.started(backend, spec) as handle:
                self.wait_until_running(backend, spec.run_id)
                backend.stop(handle, 10)
                assert backend.wait(handle, 60) == 143
                backend.stop(handle, 1)  # a second stop is harmless

    def test_stop_before_start(self, tmp_path: Path) -> None:
        """stop and cleanup of a run that never started do nothing and raise nothing."""
        with self.contract("stop_before_start"):
            backend = self.make_backend()
            run_id = f"conf-never-{secrets.token_hex(4)}"
            handle = RunHandle(backend=backend.name, run_id=run_id, name=f"ssebench-{run_id}")
            backend.stop(handle, 1)
            backend.cleanup(handle)
            assert backend.list_runs({RUN_ID_LABEL: run_id}) == []

    def test_cleanup_idempotent(self, tmp_path: Path) -> None:
        with self.contract("cleanup_idempotent"):
            backend = self.make_backend()
            spec = self.make_spec(backend, "sleep", tmp_path)
            handle = backend.start(spec)
            backend.stop(handle, 1)
            backend.wait(handle, 60)
            backend.cleanup(handle)
            backend.cleanup(handle)
            assert backend.list_runs({RUN_ID_LABEL: spec.run_id}) == []

    def test_list_and_inspect(self, tmp_path: Path) -> None:
        """A running run is found by its labels, with its labels, image and handle."""
        with self.contract("list_and_inspect"):
            backend = self.make_backend()
            spec = self.make_spec(backend, "sleep", tmp_path)
            with self.started(backend, spec):
                self.wait_until_running(backend, spec.run_id)
                listed = backend.list_runs({**LISTED_RUNS, CONFORMANCE_LABEL: "true"})
                assert spec.run_id in [run.run_id for run in listed]
                found = backend.inspect_run(spec.run_id)
                assert found is not None
                assert found.state == "running"
                assert found.exit_code is None
                assert found.labels[TASK_ID_LABEL] == "conformance"
                assert found.handle.run_id == spec.run_id
                assert backend.inspect_run(f"conf-missing-{secrets.token_hex(4)}") is None

    def test_logs(self, tmp_path: Path) -> None:
        """logs yields the container's output; with follow, until it exits."""
        with self.contract("logs"):
            backend = self.make_backend()
            spec = self.make_spec(backend, "pass", tmp_path, keep=True)
            with self.started(backend, spec) as handle:
                self.wait_for_kept(backend, handle)
                lines = list(backend.logs(handle, follow=True))
                assert lines, "no output"
                assert all("\n" not in line for line in lines)
                assert SECRET_SENTINEL not in "\n".join(lines)

    def test_wait_timeout(self, tmp_path: Path) -> None:
        with self.contract("wait_timeout"):
            backend = self.make_backend()
            spec = self.make_spec(backend, "sleep", tmp_path)
            with self.started(backend, spec) as handle, pytest.raises(TimeoutError):
                backend.wait(handle, 0.5)

    def test_keep(self, tmp_path: Path) -> None:
        """A kept run survives cleanup; a handle found again by list_runs removes it."""
        with self.contract("keep"):
            backend = self.make_backend()
            spec = self.make_spec(backend, "pass", tmp_path, keep=True)
            with self.started(backend, spec) as handle:
                assert self.wait_for_kept(backend, handle) == 0
                backend.cleanup(handle)
                kept = backend.list_runs({RUN_ID_LABEL: spec.run_id})
                assert [run.state for run in kept] == ["exited"]
                assert kept[0].exit_code == 0
                backend.cleanup(kept[0].handle)
                assert backend.list_runs({RUN_ID_LABEL: spec.run_id}) == []

    def test_start_error(self, tmp_path: Path) -> None:
        """A run that cannot start raises BackendError, leaves nothing, leaks no env."""
        with self.contract("start_error"):
            backend = self.make_backend()
            missing = f"ssebench-conformance/missing-{secrets.token_hex(4)}:none"
            spec = self.make_spec(backend, "pass", tmp_path, image=missing)
            with pytest.raises((BackendError, UserError)) as raised:
                handle = backend.start(spec)
                backend.cleanup(handle)  # only reached when start wrongly succeeded
            assert SECRET_SENTINEL not in str(raised.value)
            assert SECRET_SENTINEL not in repr(spec)
            assert backend.list_runs({RUN_ID_LABEL: spec.run_id}) == []

    def test_endpoint(self, tmp_path: Path) -> None:
        """endpoint: an http URL for a running run, BackendError for a finished one."""
        with self.contract("endpoint"):
            backend = self.make_backend()
            spec = self.make_spec(backend, "sleep", tmp_path)
            with self.started(backend, spec) as handle:
                self.wait_until_running(backend, spec.run_id)
                url = urllib.parse.urlsplit(backend.endpoint(handle, 4263))
                # The port may differ from 4263: a backend that forwards picks a free one.
                assert url.scheme == "http" and url.hostname and url.port, url
                assert not url.username and not url.password, "the URL carries credentials"
                backend.stop(handle, 5)
                backend.wait(handle, 60)
                with pytest.raises(BackendError):
                    backend.endpoint(handle, 4263)

    def test_exec_argv(self, tmp_path: Path) -> None:
        """exec_argv keeps the command's arguments apart and env values out of argv."""
        with self.contract("exec_argv"):
            backend = self.make_backend()
            assert backend.supports_exec
            spec = self.make_spec(backend, "sleep", tmp_path)
            with self.started(backend, spec) as handle:
                self.wait_until_running(backend, spec.run_id)
                command = ["echo", "a b", ";", "$HOME"]
                argv = backend.exec_argv(handle, command)
                assert argv[-len(command) :] == command
                # Run it: a shell anywhere on the way would split or expand the words.
                done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
                assert done.returncode == 0, done.stderr
                assert done.stdout == "a b ; $HOME\n"
                os.environ[EXEC_SECRET_NAME] = SECRET_SENTINEL
                try:
                    by_name = backend.exec_argv(handle, ["true"], env_names=[EXEC_SECRET_NAME])
                except BackendError:
                    by_name = []  # the spec lets a backend that cannot pass names refuse
                finally:
                    del os.environ[EXEC_SECRET_NAME]
                assert SECRET_SENTINEL not in " ".join(by_name)

    def test_prune_labels(self, tmp_path: Path) -> None:
        """A run carries what `ssebench runs prune` judges it by: a deadline past its
        timeout, the host and process that started it, and whether it is kept."""
        with self.contract("prune_labels"):
            backend = self.make_backend()
            spec = self.make_spec(backend, "sleep", tmp_path)
            started = time.time()
            with self.started(backend, spec):
                (run,) = backend.list_runs({RUN_ID_LABEL: spec.run_id})
                deadline = run.labels.get(DEADLINE_LABEL, "")
                assert deadline.isdigit() and int(deadline) >= int(started) + spec.timeout
                assert run.labels.get(RUNNER_HOST_LABEL) == socket.gethostname()
                assert run.labels.get(RUNNER_PID_LABEL) == str(os.getpid())
                assert run.labels.get(KEEP_LABEL) == "false"

    def test_prepare_images(self, tmp_path: Path) -> None:
        """prepare_images gives the same names when asked twice, and a published image
        that does not exist is a UserError that names it, before any run exists."""
        with self.contract("prepare_images"):
            backend = self.make_backend()
            assert self.images_for(backend, "pass") == self.images_for(backend, "pass")
            if self.task_dir is None:
                pytest.fail("the missing-image check needs task_dir (the task's folder)")
            request = dataclasses.replace(
                self.image_request("pass"), prebuilt=True, registry=MISSING_REGISTRY
            )
            with pytest.raises(UserError) as raised:
                backend.prepare_images(request)
            (missing,) = [prebuilt_images(request).run]
            assert missing in str(raised.value), str(raised.value)

    def test_logs_follow(self, tmp_path: Path) -> None:
        """logs(follow=True) yields a running container's lines as they come, and ends
        once the container has exited."""
        with self.contract("logs_follow"):
            backend = self.make_backend()
            spec = self.make_spec(backend, "sleep", tmp_path)
            with self.started(backend, spec) as handle:
                self.wait_until_running(backend, spec.run_id)
                lines: queue.Queue[str | None] = queue.Queue()

                def follow() -> None:
                    try:
                        for line in backend.logs(handle, follow=True):
                            lines.put(line)
                    finally:
                        lines.put(None)

                reader = threading.Thread(target=follow, daemon=True)
                reader.start()
                first = lines.get(timeout=60)
                assert first is not None, "follow ended while the run was running"
                assert backend.inspect_run(spec.run_id).state == "running"  # type: ignore[union-attr]
                backend.stop(handle, 5)
                reader.join(90)
                assert not reader.is_alive(), "logs(follow=True) went on after the run exited"

    def test_output_streamed(self, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
        """From start on, the container's output reaches this process's stdout or
        stderr while it runs, without the secret of its environment."""
        with self.contract("output_streamed"):
            backend = self.make_backend()
            spec = self.make_spec(backend, "sleep", tmp_path)
            with self.started(backend, spec) as handle:
                self.wait_until_running(backend, spec.run_id)
                first = next(iter(backend.logs(handle)))
                deadline = time.monotonic() + 30
                seen = ""
                while first not in seen and time.monotonic() < deadline:
                    time.sleep(0.2)
                    captured = capfd.readouterr()
                    seen += captured.out + captured.err
                assert first in seen, f"{first!r} did not reach this process's output"
                assert SECRET_SENTINEL not in seen

    def test_sidecar(self, tmp_path: Path) -> None:
        """With sidecar mode, a pair's run passes like a sandbox run, is listed as one run
        while kept, and cleanup leaves nothing; without it, a sidecar run is refused and
        leaves nothing either."""
        with self.contract("sidecar"):
            backend = self.make_backend()
            # Kept, so the exited pair is still there to be listed (one run, not two).
            spec = self.make_spec(backend, "pass", tmp_path, keep=True, mode="sidecar")
            if "sidecar" not in self.modes:
                with pytest.raises((UserError, BackendError)) as raised:
                    handle = backend.start(spec)
                    backend.cleanup(handle)  # only reached when start wrongly succeeded
                assert SECRET_SENTINEL not in str(raised.value)
                assert backend.list_runs({RUN_ID_LABEL: spec.run_id}) == []
                return
            handle = backend.start(spec)
            try:
                assert backend.wait(handle, self.run_timeout) == 0
                (listed,) = backend.list_runs({RUN_ID_LABEL: spec.run_id})
                assert listed.labels[TASK_ID_LABEL] == "conformance"
                backend.collect_results(handle, Path(spec.results.source))
            finally:
                backend.cleanup(handle)  # kept: the pair stays
                # As `ssebench runs remove` does: the listed handle removes the whole pair.
                for found in backend.list_runs({RUN_ID_LABEL: spec.run_id}):
                    backend.cleanup(found.handle)
            result = json.loads((Path(spec.results.source) / "result.json").read_text())
            assert result["status"] == "passed", result
            assert backend.list_runs({RUN_ID_LABEL: spec.run_id}) == []
