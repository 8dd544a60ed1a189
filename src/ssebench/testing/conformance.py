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
from typing import ClassVar, Literal

import pytest

from ssebench.extensions import (
    AGENT_LABEL,
    ARCHIVE_TARGET,
    DEADLINE_LABEL,
    IMAGE_REFERENCE_PATCH,
    KEEP_LABEL,
    LISTED_RUNS,
    MODEL_LABEL,
    REFERENCE_PATCH_TARGET,
    RESULTS_LABEL,
    RESULTS_TARGET,
    RUN_ID_LABEL,
    RUNNER_HOST_LABEL,
    RUNNER_PID_LABEL,
    TASK_ID_LABEL,
    WEBUI_LABEL,
    Backend,
    BackendError,
    ImageRequest,
    Images,
    Mode,
    Mount,
    RunHandle,
    RunSpec,
    SidecarPair,
    UserError,
    prebuilt_images,
)

ImageKind = Literal["pass", "sleep"]
# The built-in agent of each kind of run.
AGENT_OF_KIND: dict[ImageKind, str] = {"pass": "reference", "sleep": "sleeper"}
CONFORMANCE_LABEL = "ssebench.conformance"
SECRET_SENTINEL = "sse-sentinel-9f3c2b7d-do-not-print"
EXEC_SECRET_NAME = "SSE_CONFORMANCE_SECRET"
# What a kept run's container says once it waits to be stopped (docs/container-contract.md).
KEPT_WAITING = "waiting to be stopped"
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


def pilot_request(kind: ImageKind, task_dir: Path, mode: Mode = "sandbox") -> ImageRequest:
    """The image request of a conformance run on the task in task_dir, a folder of a
    dataset (datasets/pilot/<task> of an ssebench checkout, say): the built-in reference
    agent for "pass", the sleeper for "sleep". A backend that runs prebuilt images only
    asks for dataclasses.replace(pilot_request(...), prebuilt=True)."""
    from ssebench.agents import load_agent
    from ssebench.images.layers import image_request
    from ssebench.tasks import load_dataset

    task = load_dataset(task_dir.parent).task(task_dir.name)
    return dataclasses.replace(image_request(task, load_agent(AGENT_OF_KIND[kind])), mode=mode)


def task_source_dir(task_dir: Path) -> str:
    """Where the task's project lives in its containers (the sidecar pair shares it)."""
    from ssebench.tasks import load_dataset

    return load_dataset(task_dir.parent).task(task_dir.name).source_dir


class BackendContract:
    """Subclass in a test module; implement make_backend and set task_dir (or override
    images_for)."""

    known_gaps: ClassVar[frozenset[str]] = frozenset()
    # Seconds a real run may take to finish (image start, agent, grading).
    run_timeout: ClassVar[float] = 600.0
    # The task folder of the suite's runs, a folder of a dataset.
    task_dir: ClassVar[Path | None] = None
    # Ask prepare_images for the published images (a backend that cannot build).
    prebuilt: ClassVar[bool] = False
    # The modes the backend carries out; a sidecar run of one without it must be refused.
    modes: ClassVar[frozenset[Mode]] = frozenset({"sandbox", "sidecar"})
    # Whether a kept run's container keeps running after grading until it is stopped
    # (Kubernetes, where an exited container cannot be reached) or exits (Docker).
    kept_runs_keep_running: ClassVar[bool] = False

    def make_backend(self) -> Backend:
        raise NotImplementedError

    def image_request(self, kind: ImageKind, mode: Mode = "sandbox") -> ImageRequest:
        if self.task_dir is None:
            raise NotImplementedError("set task_dir to a task folder, or override images_for")
        request = pilot_request(kind, self.task_dir, mode)
        return dataclasses.replace(request, prebuilt=self.prebuilt)

    def images_for(self, backend: Backend, kind: ImageKind, mode: Mode = "sandbox") -> Images:
        """Images of a run that ends by itself with a passed grade ("pass"), or one whose
        agent runs until stopped ("sleep"); in sidecar mode, the agent's and the
        environment container's."""
        return backend.prepare_images(self.image_request(kind, mode))

    def artifacts_for(
        self, backend: Backend, kind: ImageKind, images: Images, run_dir: Path
    ) -> tuple[Mount, ...]:
        """Read-only files the run needs: for "pass", the reference agent's patch,
        copied out of the task's image with copy_from_image, as the runner does."""
        if kind != "pass":
            return ()
        patch = run_dir / "reference.patch"
        # In sidecar mode only the environment image holds the task's files.
        backend.copy_from_image(
            images.environment or images.run, IMAGE_REFERENCE_PATCH, patch, None
        )
        return (Mount(target=REFERENCE_PATCH_TARGET, source=str(patch), read_only=True),)

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

    def make_spec(
        self,
        backend: Backend,
        kind: ImageKind,
        tmp_path: Path,
        *,
        keep: bool = False,
        image: str | None = None,
        mode: Mode = "sandbox",
    ) -> RunSpec:
        run_id = f"conf-{secrets.token_hex(4)}"
        run_dir = tmp_path / run_id
        (run_dir / "archive").mkdir(parents=True)
        (run_dir / "result.json").touch()
        supported = mode in self.modes
        images = (
            self.images_for(backend, kind, mode) if supported else self.images_for(backend, kind)
        )
        # What the runner puts into RunSpec.labels (spec, "Labels").
        run_labels = {
            RUN_ID_LABEL: run_id,
            WEBUI_LABEL: "true",
            TASK_ID_LABEL: "conformance",
            MODEL_LABEL: "none",
            AGENT_LABEL: kind,
            RESULTS_LABEL: str(run_dir),
        }
        env = {"SSE_API_KEY": SECRET_SENTINEL, "SSE_RUN_ID": run_id, "TIMEOUT": "600"}
        sidecar = None
        if mode == "sidecar":
            sidecar = SidecarPair(
                run_id=run_id,
                # A backend without sidecar mode is asked to pair the run with itself.
                environment_image=(images.environment if supported else None) or images.run,
                source_dir=task_source_dir(self.task_dir) if self.task_dir else "/src",
                volumes=(f"ssebench-{run_id}-source", f"ssebench-{run_id}-sockets"),
                env=env,
            )
        return RunSpec(
            run_id=run_id,
            task_name="conformance",
            mode=mode,
            image=image or images.run,
            env=env,
            results=Mount(target=RESULTS_TARGET, source=str(run_dir)),
            archive=Mount(target=ARCHIVE_TARGET, source=str(run_dir / "archive")),
            artifacts=self.artifacts_for(backend, kind, images, run_dir),
            labels={**run_labels, CONFORMANCE_LABEL: "true"},
            timeout=600,
            keep=keep,
            sidecar=sidecar,
        )

    @contextmanager
    def started(self, backend: Backend, spec: RunSpec) -> Iterator[RunHandle]:
        handle = backend.start(spec)
        try:
            yield handle
        finally:
            backend.stop(handle, 1)
            backend.cleanup(handle)
            for run in backend.list_runs({RUN_ID_LABEL: spec.run_id}):
                backend.cleanup(run.handle)

    def wait_for_kept(self, backend: Backend, handle: RunHandle) -> int:
        """wait for a kept run that ends by itself; where kept runs keep running, it
        first waits until the container says it waits to be stopped, and stops it."""
        if self.kept_runs_keep_running:
            deadline = time.monotonic() + self.run_timeout
            while not any(KEPT_WAITING in line for line in backend.logs(handle)):
                assert time.monotonic() < deadline, "the kept run never waited to be stopped"
                time.sleep(1)
            found = backend.inspect_run(handle.run_id)
            assert found is not None and found.state == "running"
            backend.stop(handle, 30)
        return backend.wait(handle, self.run_timeout)

    def wait_until_running(self, backend: Backend, run_id: str, seconds: float = 60) -> None:
        """Until the run is running and its container has said something: a process that
        has printed has also had the time to set up its signal handling."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            runs = backend.list_runs({RUN_ID_LABEL: run_id})
            if (
                runs
                and runs[0].state == "running"
                and next(iter(backend.logs(runs[0].handle)), None)
            ):
                return
            time.sleep(0.2)
        raise AssertionError(f"run {run_id} did not reach the running state in {seconds} s")

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
