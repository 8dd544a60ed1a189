"""How the conformance suite (conformance.py) makes its runs: the pilot images it asks
a backend for, the RunSpec of each run, and the waits for them. BackendContract
inherits ContractRuns; a backend's test class overrides its settings and make_backend.
"""

from __future__ import annotations

import dataclasses
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar, Literal

from ssebench.extensions import (
    AGENT_LABEL,
    ARCHIVE_TARGET,
    IMAGE_REFERENCE_PATCH,
    MODEL_LABEL,
    REFERENCE_PATCH_TARGET,
    RESULTS_LABEL,
    RESULTS_TARGET,
    RUN_ID_LABEL,
    TASK_ID_LABEL,
    WEBUI_LABEL,
    Backend,
    ImageRequest,
    Images,
    Mode,
    Mount,
    RunHandle,
    RunSpec,
    SidecarPair,
)

ImageKind = Literal["pass", "sleep"]
# The built-in agent of each kind of run.
AGENT_OF_KIND: dict[ImageKind, str] = {"pass": "reference", "sleep": "sleeper"}
CONFORMANCE_LABEL = "ssebench.conformance"
SECRET_SENTINEL = "sse-sentinel-9f3c2b7d-do-not-print"
EXEC_SECRET_NAME = "SSE_CONFORMANCE_SECRET"
# What a kept run's container says once it waits to be stopped (docs/container-contract.md).
KEPT_WAITING = "waiting to be stopped"


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


class ContractRuns:
    """The runs of the suite: set task_dir (or override images_for) and make_backend."""

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
