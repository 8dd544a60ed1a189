"""Stopping a run on a signal: the first SIGTERM or SIGINT asks the backend to stop the
run with its grace (StopRequest), so the run is graded as far as it got and recorded; a
second ends ssebench at once (RunAbandoned) and leaves the run to the backend."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TextIO

from ssebench.extensions import Backend, RunHandle


class RunAbandoned(BaseException):
    """A second signal: ssebench ends now and leaves the run to its backend (on
    Kubernetes, to the Job's deadline and time to live). Raised in the main thread by
    stop_on_signals; the runner records the run from what is on this machine, without
    calling the backend again."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class StopRequest:
    """Turns a first signal during a run into backend.stop with the backend's grace
    (Backend.stop_grace), once. The stop runs in a thread, so the main thread keeps
    waiting for the container, which then exits (143) and is recorded as usual.

    A second signal abandons the run (RunAbandoned) unless the run is being recorded
    already: recording is set by the runner once it no longer needs the backend.
    """

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.recording = threading.Event()
        self._lock = threading.Lock()
        self._backend: Backend | None = None
        self._handle: RunHandle | None = None
        self._stopping = False
        # 128 + the second signal: the status the process ends with.
        self.exit_status: int | None = None

    def attach(self, backend: Backend, handle: RunHandle) -> None:
        with self._lock:
            self._backend, self._handle = backend, handle
        if self.requested.is_set():
            self._stop_in_background()

    def request(self) -> None:
        self.requested.set()
        self._stop_in_background()

    def abandon(self, signum: int) -> None:
        """The second signal: end now (RunAbandoned), or, while the run is being
        recorded, once it is recorded."""
        self.requested.set()
        self.exit_status = 128 + signum
        if not self.recording.is_set():
            raise RunAbandoned(signum)

    def _stop_in_background(self) -> None:
        with self._lock:
            if self._stopping or self._backend is None or self._handle is None:
                return
            self._stopping = True
            backend, handle = self._backend, self._handle
        threading.Thread(
            target=backend.stop, args=(handle, backend.stop_grace), daemon=True
        ).start()


@contextmanager
def stop_on_signals(stop: StopRequest, out: TextIO) -> Iterator[None]:
    """First SIGTERM or SIGINT: stop the run and record it. Second: end the process at
    once, leaving the run to the backend, and record it from what is on this machine
    (a run being recorded already finishes that first: it takes no backend call)."""
    received = 0

    def handle(signum: int, frame: FrameType | None) -> None:
        nonlocal received
        received += 1
        name = signal.Signals(signum).name
        if received == 1:
            out.write(f"ssebench: {name}: stopping the run; a second signal ends ssebench\n")
            out.flush()
            stop.request()
            return
        if stop.recording.is_set():
            out.write(f"ssebench: {name}: recording the run, then exiting\n")
        else:
            out.write(f"ssebench: {name}: exiting now; the run is left to the backend\n")
        out.flush()
        stop.abandon(signum)

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
