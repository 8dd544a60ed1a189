"""One run's view of the backend in an evaluation: a start waits for its slot and is
tried again with back-off when it fails for a transient reason; a removal waits for its
slot."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ssebench.errors import BackendError, UserError
from ssebench.evaluation.matrix import TaskRun
from ssebench.extensions import (
    Backend,
    ImageRequest,
    Images,
    ProxyEndpoint,
    RunHandle,
    RunInfo,
    RunSpec,
)
from ssebench.stopping import StopRequest

# Failures of backend.start that clear by themselves: the platform did not answer or
# asked to be called again later. Only these are retried. Everything else (a missing
# image, a name in use, a refused spec, any UserError) would fail again the same way.
TRANSIENT_MARKERS = (
    "connection refused",
    "connection reset",
    "i/o timeout",
    "tls handshake timeout",
    "too many requests",
    "service unavailable",
    "the server is currently unable to handle the request",
    "etcdserver: request timed out",
    "etcdserver: leader changed",
)


def is_transient(error: BaseException) -> bool:
    """True when a failed start is worth trying again after a pause.

    Transient means the platform could not be reached or was overloaded: a
    ConnectionError or TimeoutError, raised by the backend or as the cause of its
    BackendError, or a BackendError whose message carries one of TRANSIENT_MARKERS.
    A UserError (ImageUnavailableError included) never is.
    """
    if isinstance(error, UserError):
        return False
    if isinstance(error, (ConnectionError, TimeoutError)):
        return True
    if not isinstance(error, BackendError):
        return False
    if isinstance(error.__cause__, (ConnectionError, TimeoutError)):
        return True
    message = str(error).lower()
    return any(marker in message for marker in TRANSIENT_MARKERS)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a transient start failure is retried.

    attempts counts the first try. The pause before try n+1 is first_delay * 2**(n-1),
    at most max_delay, with up to half of it taken off at random so that many runs
    refused at once do not come back at once.
    """

    attempts: int = 4
    first_delay: float = 5.0
    max_delay: float = 60.0

    def delay(self, failed_attempts: int, rng: random.Random | None = None) -> float:
        full = min(self.max_delay, self.first_delay * 2.0 ** (failed_attempts - 1))
        fraction = rng.random() if rng is not None else random.random()
        return full * (1 - 0.5 * fraction)


class StoppedBeforeStart(BackendError):
    """The evaluation was stopped before this run's container was started."""


class ScheduledBackend(Backend):
    """One run's view of the backend: start waits for a start slot and retries a
    transient failure with back-off; cleanup waits for a removal slot. Every other
    call goes straight through."""

    def __init__(
        self,
        inner: Backend,
        *,
        starting: threading.Semaphore,
        removing: threading.Semaphore,
        retry: RetryPolicy,
        job: TaskRun,
        stop: StopRequest,
        say: Callable[[str], None],
        rng: random.Random | None = None,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.builds_images = inner.builds_images
        self.supports_exec = inner.supports_exec
        self.default_parallel_runs = inner.default_parallel_runs
        self._starting = starting
        self._removing = removing
        self._retry = retry
        self._job = job
        self._stop = stop
        self._say = say
        self._rng = rng

    def _stopped(self, run_id: str) -> StoppedBeforeStart:
        return StoppedBeforeStart(
            "the evaluation was stopped before the run started", backend=self.name, run_id=run_id
        )

    def start(self, spec: RunSpec) -> RunHandle:
        while True:
            while not self._starting.acquire(timeout=0.1):
                if self._stop.requested.is_set():
                    raise self._stopped(spec.run_id)
            try:
                if self._stop.requested.is_set():
                    raise self._stopped(spec.run_id)
                self._job.state = "starting"
                self._job.start_attempts += 1
                try:
                    handle = self.inner.start(spec)
                except Exception as error:
                    attempts = self._job.start_attempts
                    if not is_transient(error) or attempts >= self._retry.attempts:
                        raise
                    reason = f"{type(error).__name__}: {error}"
                    self._job.retries.append(reason)
                else:
                    self._job.handle = handle
                    self._job.state = "running"
                    return handle
            finally:
                self._starting.release()
            pause = self._retry.delay(attempts, self._rng)
            self._say(
                f"run {spec.run_id}: start failed ({reason}); "
                f"try {attempts + 1} of {self._retry.attempts} in {pause:.1f} s"
            )
            self._job.state = "ready"
            if self._stop.requested.wait(pause):
                raise self._stopped(spec.run_id)

    def cleanup(self, handle: RunHandle) -> None:
        self._job.state = "removing"
        with self._removing:
            self.inner.cleanup(handle)

    def prepare_images(self, request: ImageRequest) -> Images:
        return self.inner.prepare_images(request)

    def copy_from_image(
        self,
        image: str,
        path: str,
        dest: Path,
        platform: str | None,
        *,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        self.inner.copy_from_image(image, path, dest, platform, labels=labels)

    def wait(self, handle: RunHandle, timeout: float | None) -> int:
        return self.inner.wait(handle, timeout)

    def logs(self, handle: RunHandle, follow: bool = False) -> Iterator[str]:
        return self.inner.logs(handle, follow)

    def collect_results(self, handle: RunHandle, dest: Path) -> None:
        self.inner.collect_results(handle, dest)

    def stop(self, handle: RunHandle, grace: float) -> None:
        self.inner.stop(handle, grace)

    def list_runs(self, labels: Mapping[str, str]) -> list[RunInfo]:
        return self.inner.list_runs(labels)

    def inspect_run(self, run_id: str) -> RunInfo | None:
        return self.inner.inspect_run(run_id)

    def endpoint(self, handle: RunHandle, port: int) -> str:
        return self.inner.endpoint(handle, port)

    def exec_argv(
        self,
        handle: RunHandle,
        command: Sequence[str],
        *,
        user: str | None = None,
        workdir: str | None = None,
        tty: bool = False,
        stdin: bool = False,
        env_names: Sequence[str] = (),
    ) -> list[str]:
        return self.inner.exec_argv(
            handle,
            command,
            user=user,
            workdir=workdir,
            tty=tty,
            stdin=stdin,
            env_names=env_names,
        )

    def proxy(self) -> ProxyEndpoint | None:
        return self.inner.proxy()

    def egress_enforced(self, image: str) -> bool | None:
        return self.inner.egress_enforced(image)
