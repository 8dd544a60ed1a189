"""A fake backend whose "containers" are local processes, for fast tests without Docker.

Each run is a real child process (ssebench.testing.fake_container) that behaves like the
in-container runtime as far as the runner can tell: it prints its progress, writes
result.json into the run directory, ends with a status, and answers SIGTERM with 143.
The state of runs lives in files under a state folder, so the backend holds no state
between calls and a second process (ssebench runs ...) finds the runs again.

The image name says how the container behaves: fake/<behaviour>, where behaviour is
one of BEHAVIOURS. prepare_images picks it from the agent: reference -> pass,
sleeper -> sleep, anything else -> fail; SSEBENCH_FAKE_BEHAVIOUR overrides it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path

from ssebench.errors import BackendError, ImageUnavailableError
from ssebench.extensions import (
    Backend,
    ImageRequest,
    Images,
    RunHandle,
    RunInfo,
    RunSpec,
    RunState,
)
from ssebench.host.processes import process_exists
from ssebench.labels import matches

STATE_VARIABLE = "SSEBENCH_FAKE_STATE"
BEHAVIOUR_VARIABLE = "SSEBENCH_FAKE_BEHAVIOUR"
BEHAVIOURS = ("pass", "fail", "sleep", "stubborn", "noresult", "crash")
FAKE_PATCH = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n"

# Popen objects of the containers this process started, by name, so wait can reap them.
_children: dict[str, subprocess.Popen[bytes]] = {}


def state_root() -> Path:
    root = Path(os.environ.get(STATE_VARIABLE) or Path(tempfile.gettempdir()) / "ssebench-fake")
    root.mkdir(parents=True, exist_ok=True)
    return root


class FakeBackend(Backend):
    name = "fake"
    builds_images = True
    # Where the container writes its results: into the run directory itself (a shared
    # mount, as Docker's bind mount), or into storage of its own that collect_results
    # copies from (as a backend without access to the runner's host does).
    results_by_copy = False

    def _folder(self, name: str) -> Path:
        return state_root() / name

    def prepare_images(self, request: ImageRequest) -> Images:
        behaviour = os.environ.get(BEHAVIOUR_VARIABLE) or {
            "reference": "pass",
            "sleeper": "sleep",
        }.get(request.agent, "fail")
        if behaviour not in BEHAVIOURS:
            raise ImageUnavailableError(
                f"No fake image for behaviour {behaviour!r}; use one of {', '.join(BEHAVIOURS)}",
                image=f"fake/{behaviour}",
            )
        return Images(run=f"fake/{behaviour}")

    def copy_from_image(
        self,
        image: str,
        path: str,
        dest: Path,
        platform: str | None,
        *,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        if not image.startswith("fake/"):
            raise RuntimeError(f"No such image: {image}")
        dest.write_text(FAKE_PATCH, encoding="utf-8")

    def start(self, spec: RunSpec) -> RunHandle:
        behaviour = spec.image.removeprefix("fake/")
        if not spec.image.startswith("fake/") or behaviour not in BEHAVIOURS:
            raise BackendError(
                f"No such image: {spec.image}", backend=self.name, run_id=spec.run_id
            )
        name = f"fake-{spec.run_id}"
        folder = self._folder(name)
        try:
            folder.mkdir()
        except FileExistsError:
            raise BackendError(
                f"A run named {name} exists", backend=self.name, run_id=spec.run_id
            ) from None
        meta = {
            "run_id": spec.run_id,
            "image": spec.image,
            "labels": dict(spec.labels),
            "keep": spec.keep,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        # The environment reaches the container as its process environment, never argv.
        environment = {**os.environ, **spec.env}
        results = spec.results.source
        if self.results_by_copy:
            (folder / "results" / "archive").mkdir(parents=True)
            results = str(folder / "results")
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ssebench.testing.fake_container",
                behaviour,
                results,
                str(folder),
            ],
            env=environment,
            start_new_session=True,
        )
        _children[name] = process
        (folder / "pid").write_text(str(process.pid), encoding="utf-8")
        return RunHandle(
            backend=self.name,
            run_id=spec.run_id,
            name=name,
            details={"keep": str(spec.keep).lower()},
        )

    def _exit_code(self, name: str) -> int | None:
        folder = self._folder(name)
        try:
            return int((folder / "exit_code").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
        child = _children.get(name)
        if child is not None:
            code = child.poll()
            return None if code is None else (128 - code if code < 0 else code)
        pid = self._pid(name)
        if pid is not None and not process_exists(pid):
            return 137  # died without saying how: treat as killed
        return None

    def _pid(self, name: str) -> int | None:
        try:
            return int((self._folder(name) / "pid").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def wait(self, handle: RunHandle, timeout: float | None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if not self._folder(handle.name).exists():
                raise BackendError(
                    f"Run {handle.run_id} is gone", backend=self.name, run_id=handle.run_id
                )
            code = self._exit_code(handle.name)
            if code is not None:
                child = _children.pop(handle.name, None)
                if child is not None:
                    child.wait()
                return code
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"Run {handle.run_id} still running after {timeout} s")
            time.sleep(0.05)

    def logs(self, handle: RunHandle, follow: bool = False) -> Iterator[str]:
        log = self._folder(handle.name) / "output.log"
        position = 0
        while True:
            finished = self._exit_code(handle.name) is not None
            try:
                with log.open(encoding="utf-8") as stream:
                    stream.seek(position)
                    while line := stream.readline():
                        if not line.endswith("\n") and not finished:
                            break
                        position += len(line.encode())
                        yield line.rstrip("\n")
            except FileNotFoundError:
                if not self._folder(handle.name).exists():
                    raise BackendError(
                        f"Run {handle.run_id} is gone", backend=self.name, run_id=handle.run_id
                    ) from None
            if not follow or finished:
                return
            time.sleep(0.05)

    def collect_results(self, handle: RunHandle, dest: Path) -> None:
        """With a shared run directory, nothing to do; else copy what the container
        wrote over the runner's skeleton."""
        if not self.results_by_copy:
            return
        shutil.copytree(self._folder(handle.name) / "results", dest, dirs_exist_ok=True)

    def stop(self, handle: RunHandle, grace: float) -> None:
        pid = self._pid(handle.name)
        if pid is None or self._exit_code(handle.name) is not None:
            return
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and self._exit_code(handle.name) is None:
            time.sleep(0.05)
        if self._exit_code(handle.name) is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)

    def cleanup(self, handle: RunHandle) -> None:
        if handle.details.get("keep") == "true":
            return
        folder = self._folder(handle.name)
        if not folder.exists():
            return
        pid = self._pid(handle.name)
        if pid is not None and self._exit_code(handle.name) is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        child = _children.pop(handle.name, None)
        if child is not None:
            child.wait()
        shutil.rmtree(folder, ignore_errors=True)

    def list_runs(self, labels: Mapping[str, str]) -> list[RunInfo]:
        runs = []
        for folder in sorted(state_root().iterdir()):
            try:
                meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if not matches(meta["labels"], dict(labels)):
                continue
            code = self._exit_code(folder.name)
            state: RunState = (
                "exited"
                if code is not None
                else ("running" if self._pid(folder.name) is not None else "created")
            )
            runs.append(
                RunInfo(
                    run_id=meta["run_id"],
                    name=folder.name,
                    state=state,
                    exit_code=code,
                    image=meta["image"],
                    labels=meta["labels"],
                    created_at=meta["created_at"],
                    # A handle found again is not "kept": runs remove must be able to end it.
                    handle=RunHandle(backend=self.name, run_id=meta["run_id"], name=folder.name),
                )
            )
        return runs


class CopyingFakeBackend(FakeBackend):
    """The fake backend whose results come back by copy, not through a shared folder."""

    name = "fake-copying"
    results_by_copy = True


class RecordingBackend(FakeBackend):
    """The fake backend that notes what it is asked, for tests of the runner and of
    what drives it: each call by name in order (calls), the requests it prepared
    (requests), the images it copied from (copied_from) and the specs it started
    (specs). A call named fail_in raises error instead, after it is noted: a fault
    where a test wants one (a SIGKILL there, an API that refuses)."""

    def __init__(self, fail_in: str | None = None, error: BaseException | None = None) -> None:
        self.calls: list[str] = []
        self.requests: list[ImageRequest] = []
        self.copied_from: list[str] = []
        self.specs: list[RunSpec] = []
        self.fail_in = fail_in
        self.error = error or BackendError("injected")

    def _note(self, name: str) -> None:
        self.calls.append(name)
        if name == self.fail_in:
            raise self.error

    def prepare_images(self, request: ImageRequest) -> Images:
        self._note("prepare_images")
        self.requests.append(request)
        return super().prepare_images(request)

    def copy_from_image(
        self,
        image: str,
        path: str,
        dest: Path,
        platform: str | None,
        *,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        self._note("copy_from_image")
        self.copied_from.append(image)
        super().copy_from_image(image, path, dest, platform, labels=labels)

    def start(self, spec: RunSpec) -> RunHandle:
        self._note("start")
        self.specs.append(spec)
        return super().start(spec)

    def wait(self, handle: RunHandle, timeout: float | None) -> int:
        self._note("wait")
        return super().wait(handle, timeout)

    def collect_results(self, handle: RunHandle, dest: Path) -> None:
        self._note("collect_results")
        super().collect_results(handle, dest)

    def cleanup(self, handle: RunHandle) -> None:
        self.calls.append("cleanup")  # noted, never failed: cleanup is best effort
        super().cleanup(handle)
