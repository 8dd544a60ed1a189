"""One run's lifecycle (spec, "What the runner does around it").

prepare_images -> run directory -> reference patch -> start -> wait -> collect_results
-> cleanup -> record. cleanup runs also when wait is interrupted or raises, and the run
is recorded (summary.json, and result.json with "config") in every case once its run
directory exists: also when the container failed, was stopped, or left no grade. A
second signal (RunAbandoned) is the one exception to cleanup: ssebench then ends at
once, leaving the run to its backend, and records it from the run directory.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ssebench import labels
from ssebench.agents import Agent
from ssebench.errors import ResultsGoneError, SsebenchError, UserError
from ssebench.extensions import (
    ARCHIVE_TARGET,
    IMAGE_REFERENCE_PATCH,
    REFERENCE_PATCH_TARGET,
    RESULTS_OWNER_VARIABLE,
    RESULTS_TARGET,
    Backend,
    Egress,
    ImageRequest,
    Images,
    Mode,
    Mount,
    NetworkPolicy,
    RunHandle,
    RunSpec,
    SidecarPair,
)
from ssebench.host.output import write_or_drop
from ssebench.images.layers import image_request
from ssebench.results.directory import (
    NO_MODEL,
    NO_RESULT_MESSAGE,
    RunDirectory,
    utc_now,
    write_json,
)
from ssebench.results.unrecorded import write_runner_file
from ssebench.stopping import RunAbandoned, StopRequest
from ssebench.tasks import Task
from ssebench.tasks.graders import grade_on_host

if TYPE_CHECKING:
    from ssebench.proxy import ModelSession

REFERENCE_PATCH_COPY = "reference.patch"
GIVEN_PATCH_COPY = "given.patch"
READOUT_FAILED = "Read-out failed"


# How long an agent may run when neither --timeout nor the task says.
DEFAULT_TIMEOUT = 3600


def task_timeout(task: Task) -> int:
    """The task's own agent timeout (an imported Harbor task's [agent] timeout_sec),
    else DEFAULT_TIMEOUT."""
    return task.agent_timeout or DEFAULT_TIMEOUT


@dataclass(frozen=True)
class RunSettings:
    """What the user asked for: one task, one agent, one model, and how to run it.

    model_env holds the run's model key and proxy URL (secret: not in repr).
    """

    task: Task
    agent: Agent
    model: str | None
    run_id: str
    results_root: Path
    backend: str
    mode: Mode = "sandbox"
    timeout: int = DEFAULT_TIMEOUT
    # No --timeout was given: each task's own agent timeout applies (for_task).
    timeout_from_task: bool = False
    # Seconds each grading step may run; None leaves the container's default.
    step_timeout: int | None = None
    difficulty: int = 2
    egress: Egress = "restricted"
    keep: bool = False
    keep_alive: bool = False
    platform: str | None = None
    prebuilt: bool = False
    rebuild: bool = False
    registry: str = "ssebench"
    tool_version: str = "1"
    model_env: Mapping[str, str] = field(default_factory=dict, repr=False)
    # A patch made elsewhere, handed to the agent (the given-patch agent applies it):
    # `ssebench grade --predictions`. Copied into the run directory as given.patch.
    given_patch: bytes | None = field(default=None, repr=False)

    @property
    def model_label(self) -> str:
        return self.model or NO_MODEL

    def for_task(self, task: Task, run_id: str) -> RunSettings:
        """These settings for another task's run: its own agent timeout when no
        --timeout was given."""
        timeout = task_timeout(task) if self.timeout_from_task else self.timeout
        return dataclasses.replace(self, task=task, run_id=run_id, timeout=timeout)

    def image_request(self) -> ImageRequest:
        return dataclasses.replace(
            image_request(self.task, self.agent),
            mode=self.mode,
            prebuilt=self.prebuilt,
            registry=self.registry,
            tool_version=self.tool_version,
            platform=self.platform,
            rebuild=self.rebuild,
        )

    def config(self) -> dict[str, Any]:
        """The run's settings as result.json and summary.json record them."""
        return {
            "task": self.task.id,
            "dataset": self.task.dataset,
            "agent": self.agent.name,
            "agent_version": self.agent.version,
            "model": self.model_label,
            "mode": self.mode,
            "timeout": self.timeout,
            "difficulty": self.difficulty,
            "egress": self.egress,
            "backend": self.backend,
            "prebuilt": self.prebuilt,
            "reference_run": self.agent.is_reference,
            "keep": self.keep,
            "platform": self.platform,
            **({"step_timeout": self.step_timeout} if self.step_timeout is not None else {}),
            **(
                {"given_patch_sha256": hashlib.sha256(self.given_patch).hexdigest()}
                if self.given_patch is not None
                else {}
            ),
        }


@dataclass(frozen=True)
class RunOutcome:
    run_dir: Path
    summary: dict[str, Any]

    @property
    def status(self) -> str:
        return str(self.summary["status"])


def _reason(error: BaseException) -> str:
    """An error as one line for summary.json: ssebench's own messages as they are."""
    if isinstance(error, SsebenchError):
        return str(error)
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def sidecar_pair(settings: RunSettings, images: Images, env: Mapping[str, str]) -> SidecarPair:
    """The environment container of a sidecar run and the two volumes, named from the
    run ID. It gets the run's environment too: it redacts the key from what it logs."""
    assert images.environment is not None
    return SidecarPair(
        run_id=settings.run_id,
        environment_image=images.environment,
        source_dir=settings.task.source_dir,
        volumes=(f"ssebench-{settings.run_id}-source", f"ssebench-{settings.run_id}-sockets"),
        env=dict(env),
    )


class Runner:
    """Drives a Backend through one run. Holds no run state between runs."""

    def __init__(self, backend: Backend, *, out: TextIO | None = None) -> None:
        self.backend = backend
        self.out = out or sys.stderr

    def say(self, message: str) -> None:
        # Its reader gone, the run goes on unsaid: a raise here would leave the run
        # unrecorded, or its model key unrevoked (ModelSession.finish says as it goes).
        write_or_drop(self.out, f"ssebench: {message}\n")

    def prepare(self, settings: RunSettings) -> Images:
        return self.backend.prepare_images(settings.image_request())

    def run(
        self,
        settings: RunSettings,
        images: Images,
        stop: StopRequest | None = None,
        model_session: ModelSession | None = None,
    ) -> RunOutcome:
        """Carry out the run and record it. Raises the backend's error after recording.

        model_session: the run's model key, whose spend is read (into summary.json) and
        which is revoked once the container is gone, whatever happened to the run.
        """
        stop = stop or StopRequest()
        started_at, started = utc_now(), time.monotonic()
        run_dir = RunDirectory.for_run(
            settings.results_root,
            task=settings.task.id,
            model=settings.model,
            agent=settings.agent.name,
            run_id=settings.run_id,
        )
        run_dir.create()
        # Who runs it: a reader that finds it later without summary.json and this process
        # gone records it (results/unrecorded.py), as a runner killed outright cannot.
        write_runner_file(run_dir.path, timeout=settings.timeout, config=settings.config())
        self.say(f"run {settings.run_id}: {run_dir.path}")
        exit_code: int | None = None
        failure: BaseException | None = None
        readout_failure: str | None = None
        no_results: str | None = None
        collected = False
        handle: RunHandle | None = None
        timings: dict[str, float] = {}
        egress_enforced: bool | None = None
        try:
            egress_enforced = self._egress_enforced(settings, images)
            key = model_session.key if model_session is not None else None
            key_hash = key.hashed if key is not None and key.managed else None
            if settings.mode == "sidecar" and images.environment is None:
                raise UserError(
                    "A sidecar run needs an environment image; prepare_images gave none"
                )
            run_labels = self._run_labels(settings, run_dir, key_hash)
            handed = self._handed_patch(settings, images, run_dir, run_labels)
            spec = self._spec(settings, images, run_dir, run_labels, handed)
            handle = self.backend.start(spec)
            stop.attach(self.backend, handle)
            running = time.monotonic()
            exit_code = self.backend.wait(handle, None)
            timings["container"] = round(time.monotonic() - running, 3)
            collecting = time.monotonic()
            try:
                self.backend.collect_results(handle, run_dir.path)
                collected = True
            except ResultsGoneError as error:
                no_results = str(error)  # a run without a grade, not a failed run
            except Exception as error:
                # Whatever grade the run directory holds, the run was not read out whole.
                readout_failure = f"{READOUT_FAILED}: {_reason(error)}"
                raise
            finally:
                timings["collect_results"] = round(time.monotonic() - collecting, 3)
        except BaseException as error:  # recorded below, then raised again
            failure = error
        if handle is not None and not isinstance(failure, RunAbandoned):
            try:
                self._cleanup(handle)
            except RunAbandoned as error:  # during cleanup: the results were read already
                failure = failure or error
        # From here on, a second signal lets the run be recorded first (stop_on_signals).
        stop.recording.set()
        abandoned = isinstance(failure, RunAbandoned)
        if abandoned:
            backend_name = self.backend.name
            self.say(
                f"run {settings.run_id}: left to the {backend_name} backend; "
                f"`ssebench runs remove {settings.run_id} --backend {backend_name}` removes it now"
            )
        spend: float | None = None
        if model_session is not None:
            found = model_session.finish(self.say)
            spend = None if found is None else round(found.usd, 6)
        timings["total"] = round(time.monotonic() - started, 3)
        try:
            summary = self._record(
                settings,
                run_dir,
                images,
                exit_code=exit_code,
                stopped=stop.requested.is_set(),
                failure=failure,
                readout_failure=readout_failure,
                no_results=no_results,
                # Results gone, or abandoned before they were read: whatever the run
                # directory holds is not the run's read-out (and may still be written).
                grade_read=(collected or not abandoned) and no_results is None,
                started_at=started_at,
                timings=timings,
                spend=spend,
                egress_enforced=egress_enforced,
            )
        except OSError as error:
            if not abandoned:
                raise
            # The container may still own the run directory (an unprivileged runner).
            self.say(f"run {settings.run_id}: not recorded: {_reason(error)}")
            summary = {"status": "error", "error_msg": NO_RESULT_MESSAGE}
        if failure is not None and not abandoned:
            raise failure
        return RunOutcome(run_dir=run_dir.path, summary=summary)

    def _egress_enforced(self, settings: RunSettings, images: Images) -> bool | None:
        """Whether the platform applies the run's network policy, as the backend says;
        said at the start when it does not."""
        try:
            enforced = self.backend.egress_enforced(images.run)
        except SsebenchError as error:
            self.say(f"warning: cannot tell whether the run's network policy is enforced: {error}")
            return None
        if enforced is False:
            self.say(
                f"warning: the {self.backend.name} backend's platform does not enforce "
                f"network policies, so this run's egress ({settings.egress}) is not "
                "restricted: it reaches whatever the platform's pods reach, the internet "
                f"included if they do (ssebench doctor --backend {self.backend.name})"
            )
        return enforced

    def _cleanup(self, handle: RunHandle) -> None:
        try:
            self.backend.cleanup(handle)
        except Exception as error:  # best effort, as the interface says; never mask the run
            self.say(f"cleanup of {handle.run_id} failed: {type(error).__name__}: {error}")

    @staticmethod
    def _run_labels(
        settings: RunSettings, run_dir: RunDirectory, key_hash: str | None
    ) -> dict[str, str]:
        run_labels = labels.run_labels(
            run_id=settings.run_id,
            task_id=settings.task.id,
            model=settings.model_label,
            agent=settings.agent.name,
            results=str(run_dir.path),
            reference_run=settings.agent.is_reference,
        )
        if key_hash is not None:
            # Whoever removes the run if its runner dies (prune) revokes the key by it.
            run_labels[labels.KEY_SHA256] = key_hash
        return run_labels

    def _handed_patch(
        self,
        settings: RunSettings,
        images: Images,
        run_dir: RunDirectory,
        run_labels: Mapping[str, str],
    ) -> Path | None:
        """The patch the agent is handed, put into the run directory: the task's
        reference patch (copied out of the image) for the reference agent, a patch made
        elsewhere (`grade --predictions`) for the given-patch agent; None for others."""
        if settings.agent.is_reference:
            patch = run_dir.path / REFERENCE_PATCH_COPY
            # In sidecar mode only the environment image holds the task's files.
            sidecar = settings.mode == "sidecar"
            task_image = images.environment if sidecar and images.environment else images.run
            self.backend.copy_from_image(
                task_image, IMAGE_REFERENCE_PATCH, patch, settings.platform, labels=run_labels
            )
            return patch
        if settings.given_patch is not None:
            patch = run_dir.path / GIVEN_PATCH_COPY
            patch.write_bytes(settings.given_patch)
            return patch
        return None

    def _spec(
        self,
        settings: RunSettings,
        images: Images,
        run_dir: RunDirectory,
        run_labels: dict[str, str],
        handed_patch: Path | None,
    ) -> RunSpec:
        """The run as the backend is given it: plain data of what was prepared."""
        sidecar = settings.mode == "sidecar"
        # Every backend ships this one file (the Kubernetes backend as a Secret).
        artifacts = (
            ()
            if handed_patch is None
            else (Mount(target=REFERENCE_PATCH_TARGET, source=str(handed_patch), read_only=True),)
        )
        env = {
            "SSE_MODEL_NAME": settings.model_label,
            "SSE_DIFFICULTY": str(settings.difficulty),
            "TIMEOUT": str(settings.timeout),
            "SSE_RESULTS": RESULTS_TARGET,
            "SSE_ARCHIVE": ARCHIVE_TARGET,
            "SSE_RUN_ID": settings.run_id,
            **settings.model_env,
        }
        if settings.keep_alive:
            env["SSE_KEEP_ALIVE"] = "1"
        if settings.step_timeout is not None:
            env["SSE_STEP_TIMEOUT"] = str(settings.step_timeout)
        if os.getuid() != 0:
            # The container makes the run directory root's while it runs; it hands it
            # back to us at the end so we can read the grade and write summary.json.
            env[RESULTS_OWNER_VARIABLE] = f"{os.getuid()}:{os.getgid()}"
        return RunSpec(
            run_id=settings.run_id,
            task_name=settings.task.id,
            mode=settings.mode,
            image=images.run,
            env=env,
            results=Mount(target=RESULTS_TARGET, source=str(run_dir.path)),
            archive=Mount(target=ARCHIVE_TARGET, source=str(run_dir.archive)),
            artifacts=artifacts,
            network=NetworkPolicy(egress=settings.egress),
            platform=settings.platform,
            labels=run_labels,
            timeout=settings.timeout,
            keep=settings.keep,
            sidecar=sidecar_pair(settings, images, env) if sidecar else None,
            resources=settings.task.resources,
        )

    def _record(
        self,
        settings: RunSettings,
        run_dir: RunDirectory,
        images: Images,
        *,
        exit_code: int | None,
        stopped: bool,
        failure: BaseException | None,
        started_at: str,
        timings: dict[str, float],
        spend: float | None = None,
        readout_failure: str | None = None,
        no_results: str | None = None,
        grade_read: bool = True,
        egress_enforced: bool | None = None,
    ) -> dict[str, Any]:
        grade = run_dir.read_result() if grade_read else None
        config = {**settings.config(), "egress_enforced": egress_enforced}
        # Stopped by this runner's signal, or by anyone else's (`runs stop`, docker
        # stop): the container's grade says so.
        stopped = stopped or (grade is not None and grade.get("stopped") is True)
        evaluator_grade = None
        if readout_failure is not None:
            # A grade of a run whose read-out failed is not the run's verdict: kept
            # apart, never counted.
            evaluator_grade, grade = grade, {"status": "error", "error_msg": readout_failure}
        if grade is None:
            message = NO_RESULT_MESSAGE
            if isinstance(failure, SsebenchError):
                message = f"{NO_RESULT_MESSAGE} ({failure})"
            elif isinstance(failure, KeyboardInterrupt):
                message = f"{NO_RESULT_MESSAGE} (interrupted)"
            elif isinstance(failure, RunAbandoned):
                message = f"{NO_RESULT_MESSAGE} (ssebench ended by a second {failure})"
            elif no_results is not None:
                message = f"{NO_RESULT_MESSAGE} ({no_results})"
            elif failure is not None:
                message = f"{NO_RESULT_MESSAGE} ({type(failure).__name__})"
            grade = {"status": "error", "error_msg": message}
        elif evaluator_grade is None:
            # A task with a grader (task.yaml `grader`) is decided from its test output.
            grade = grade_on_host(settings.task, run_dir.path, grade)
        write_json(run_dir.result_file, {**grade, "config": config})
        summary = {
            "schema": 1,
            "run_id": settings.run_id,
            "task": settings.task.id,
            "config": config,
            "images": {"run": images.run, "environment": images.environment},
            "status": grade["status"],
            "error_msg": grade.get("error_msg"),
            "grade": {key: value for key, value in grade.items() if key != "config"},
            "exit_code": exit_code,
            "stopped": stopped,
            "started_at": started_at,
            "finished_at": utc_now(),
            "durations": timings,
            "spend": spend,
        }
        if evaluator_grade is not None:
            summary["evaluator_grade"] = evaluator_grade
        write_json(run_dir.summary_file, summary)
        verdict = summary["status"]
        detail = f" ({summary['error_msg']})" if summary["error_msg"] else ""
        self.say(f"run {settings.run_id}: {verdict}{detail}, exit {exit_code}")
        return summary
