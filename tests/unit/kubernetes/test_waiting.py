"""How often the Kubernetes backend looks at a run's pod while it waits, and the limits
of a run that never starts, with a clock that the waits move on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ssebench.backends.kubernetes import backend, manifests
from ssebench.backends.kubernetes.backend import POLL_MAX_SECONDS, POLL_SECONDS, _Pace
from ssebench.backends.kubernetes.image_check import ImageCheck
from ssebench.extensions import RunHandle


class Clock:
    """time.monotonic and time.sleep for the backend: a sleep moves the clock on."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(backend.time, "monotonic", clock.monotonic)
    monkeypatch.setattr(backend.time, "sleep", clock.sleep)
    return clock


def pod(version: str, *, waiting: str | None = None, exit_code: int | None = None) -> Any:
    state = SimpleNamespace(
        running=None if waiting or exit_code is not None else SimpleNamespace(),
        terminated=None if exit_code is None else SimpleNamespace(exit_code=exit_code),
        waiting=SimpleNamespace(reason=waiting, message="no such image") if waiting else None,
    )
    return SimpleNamespace(
        metadata=SimpleNamespace(name="p", resource_version=version, deletion_timestamp=None),
        status=SimpleNamespace(
            phase="Pending" if waiting else "Running",
            reason=None,
            conditions=[],
            container_statuses=[SimpleNamespace(name=manifests.TASK_CONTAINER, state=state)],
        ),
    )


def test_the_pace_slows_while_nothing_changes_and_is_quick_after_a_change() -> None:
    pace = _Pace()
    pauses = [pace.after(state) for state in ["a", "a", "a", "a", "a", "a", "b", "b"]]
    assert pauses == [1, 2, 4, 8, POLL_MAX_SECONDS, POLL_MAX_SECONDS, 1, 2]
    assert POLL_SECONDS == 1


class OutputThread:
    """Stands in for the thread that follows the pod's log; it ends on a given join."""

    def __init__(self, clock: Clock, ends_at_join: int) -> None:
        self.clock = clock
        self.joins: list[float] = []
        self.ends_at_join = ends_at_join

    def is_alive(self) -> bool:
        return len(self.joins) < self.ends_at_join

    def join(self, timeout: float) -> None:
        self.joins.append(timeout)
        self.clock.now += timeout if self.is_alive() else timeout / 2


def test_wait_wakes_when_the_output_ends_and_looks_again_soon(
    monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    # Running for four looks; the log ends during the fourth wait; the pod's status
    # still says running once (the kubelet updates it a moment later), then exited.
    pods: Iterator[Any] = iter([pod("1")] * 5 + [pod("2", exit_code=7)])
    kubernetes = backend.KubernetesBackend()
    monkeypatch.setattr(kubernetes, "_pod", lambda handle: next(pods))
    monkeypatch.setattr(backend, "_drain_output", lambda namespace, name: None)
    output = OutputThread(clock, ends_at_join=4)
    monkeypatch.setitem(backend._log_threads, "ns/p", output)  # type: ignore[arg-type]
    handle = RunHandle(
        backend="kubernetes", run_id="r", name="ssebench-r", details={"namespace": "ns"}
    )
    assert kubernetes.wait(handle, None) == 7
    assert output.joins == [1, 2, 4, 8]  # slower while nothing changed, woken by the end
    # The output's end is the container's exit: the next look is soon, its status due.
    assert clock.sleeps == [backend.EXITED_POLL_SECONDS] == [0.25]


@pytest.mark.parametrize(
    ("waiting", "limit", "message"),
    [
        ("ErrImagePull", backend.PULL_ERROR_SECONDS, "cannot pull its image: ErrImagePull"),
        ("ContainerCreating", backend.NO_CONTAINER_SECONDS, "did not start within 600 s"),
    ],
)
def test_a_run_that_never_starts_fails_on_time_with_the_pods_reason(
    clock: Clock, waiting: str, limit: float, message: str
) -> None:
    started = clock.now
    with pytest.raises(backend.BackendError, match=message):
        backend.KubernetesBackend()._wait_until_started(
            lambda: pod("1", waiting=waiting), manifests.TASK_CONTAINER, "the run r"
        )
    assert limit <= clock.now - started <= limit + backend.START_POLL_MAX_SECONDS


def test_a_slow_start_is_looked_at_every_two_seconds_at_most(clock: Clock) -> None:
    """20 s in ContainerCreating, then running: 10 looks, not 21, the first after 2 s;
    seen within 2 s."""
    looks: list[float] = []

    def find() -> Any:
        looks.append(clock.now)
        return pod("1", waiting="ContainerCreating") if clock.now < 1020 else pod("2")

    backend.KubernetesBackend()._wait_until_started(find, manifests.TASK_CONTAINER, "the run r")
    assert clock.sleeps == [2] * 10
    assert len(looks) == 10 and clock.now - 1020 <= backend.START_POLL_MAX_SECONDS


def test_stop_signals_once_and_paces_its_looks_until_the_container_exits(
    monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    pods: Iterator[Any] = iter([pod("1"), pod("1"), pod("1"), pod("2", exit_code=143)])
    kubernetes = backend.KubernetesBackend()
    monkeypatch.setattr(kubernetes, "_pod", lambda handle: next(pods))
    signals: list[tuple[str, str, str]] = []
    monkeypatch.setattr(kubernetes, "_signal", lambda *where: signals.append(where))
    handle = RunHandle(
        backend="kubernetes", run_id="r", name="ssebench-r", details={"namespace": "ns"}
    )
    kubernetes.stop(handle, grace=20)
    assert signals == [("ns", "p", manifests.TASK_CONTAINER)]
    assert clock.sleeps == [1, 2, 4]


def test_stop_waits_the_whole_grace_it_is_given_then_removes_the_job(
    monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    """No cap: 45 s is 45 s (the runner's own Ctrl-C grace is Backend.stop_grace)."""
    kubernetes = backend.KubernetesBackend()
    monkeypatch.setattr(kubernetes, "_pod", lambda handle: pod("1"))  # never exits
    monkeypatch.setattr(kubernetes, "_signal", lambda *where: None)
    removed: list[str] = []
    monkeypatch.setattr(
        kubernetes, "_remove", lambda namespace, name, *a, **k: removed.append(name)
    )
    handle = RunHandle(
        backend="kubernetes", run_id="r", name="ssebench-r", details={"namespace": "ns"}
    )
    started = clock.now
    kubernetes.stop(handle, grace=45)
    assert clock.now - started == 45 and removed == ["ssebench-r"]
    assert kubernetes.stop_grace == 20


def test_stop_ends_at_once_when_the_pod_the_run_started_in_is_gone(
    monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    """A run's pod has no grace: deleted (kubectl, a node's drain), it is gone at once,
    while its Job may stay and, before Kubernetes 1.26, make a replacement, which is not
    the run. Nothing is left to stop: no Job read, no wait, no removal."""
    kubernetes = backend.KubernetesBackend()
    monkeypatch.setattr(kubernetes, "_run_pod", lambda handle: None)
    monkeypatch.setattr(kubernetes, "_job", lambda handle: pytest.fail("the Job was read"))
    monkeypatch.setattr(kubernetes, "_remove", lambda *a, **k: pytest.fail("removed"))
    handle = RunHandle(
        backend="kubernetes",
        run_id="r",
        name="ssebench-r",
        details={"namespace": "ns", backend.POD_DETAIL: "ssebench-r-abcde"},
    )
    started = clock.now
    kubernetes.stop(handle, grace=20)
    assert clock.now == started and clock.sleeps == []


def test_the_run_is_the_pod_it_started_in_not_a_replacement(
    monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    """Its pod deleted (a replacement running beside it, as the Job controller of a
    cluster before 1.26 makes one): wait reports it killed at the first look, whatever
    the Job does (a run's pod has no grace, so it is gone at once), and its results are
    gone."""
    kubernetes = backend.KubernetesBackend()
    monkeypatch.setattr(kubernetes, "_pod", lambda handle: pod("9"))  # the replacement
    monkeypatch.setattr(kubernetes, "_run_pod", lambda handle: None)  # the run's, gone
    monkeypatch.setattr(kubernetes, "_job", lambda handle: pytest.fail("the Job was read"))
    monkeypatch.setattr(backend, "_killed", set())  # not stopped by this process
    monkeypatch.setattr(backend, "_drain_output", lambda namespace, name: None)
    handle = RunHandle(
        backend="kubernetes",
        run_id="r",
        name="ssebench-r",
        details={"namespace": "ns", backend.POD_DETAIL: "p"},
    )
    assert kubernetes.wait(handle, 10) == backend.KILLED_STATUS
    assert clock.sleeps == []
    with pytest.raises(backend.ResultsGoneError, match="are gone"):
        kubernetes.collect_results(handle, Path("/nonexistent"))


class PodsOfAJob:
    """The pods of the Job ssebench-r as the API server shows them at each look: the
    run's first pod, then (from a given look on) that pod deleting and a replacement
    that the Job controller of a cluster before 1.26 made beside it."""

    def __init__(self, *, first_started: bool, deleted_at_look: int) -> None:
        self.looks = 0
        self.first = self._pod("ssebench-r-first", 1, started=first_started)
        self.replacement = self._pod("ssebench-r-again", 2, started=True)
        self.deleted_at_look = deleted_at_look

    @staticmethod
    def _pod(name: str, created: int, *, started: bool) -> Any:
        made = pod("1") if started else pod("1", waiting="ContainerCreating")
        made.metadata.name, made.metadata.creation_timestamp = name, created
        made.metadata.labels = {"job-name": "ssebench-r"}
        return made

    def list(self, namespace: str, selector: str) -> list[Any]:
        self.looks += 1
        if self.looks < self.deleted_at_look:
            return [self.first]
        self.first.metadata.deletion_timestamp = "now"
        return [self.replacement, self.first]

    def read(self, handle: RunHandle) -> Any:
        self.looks += 1
        found = {pod.metadata.name: pod for pod in self.list("ns", "")}
        return found.get(handle.details[backend.POD_DETAIL])


@pytest.mark.parametrize(("first_started", "deleted_at_look"), [(False, 2), (True, 1), (True, 2)])
def test_start_waits_on_the_jobs_first_pod_not_a_replacement(
    monkeypatch: pytest.MonkeyPatch, clock: Clock, first_started: bool, deleted_at_look: int
) -> None:
    """Deleted before its task container started, the run fails to start (it does not
    go on in the replacement); deleted once it started, it is that pod (wait reports it
    killed)."""
    pods = PodsOfAJob(first_started=first_started, deleted_at_look=deleted_at_look)
    kubernetes = backend.KubernetesBackend()
    monkeypatch.setattr(kubernetes, "_pods", pods.list)
    monkeypatch.setattr(kubernetes, "_run_pod", pods.read)
    handle = RunHandle(
        backend="kubernetes", run_id="r", name="ssebench-r", details={"namespace": "ns"}
    )
    find = kubernetes._first_pod_of(handle)
    if not first_started:
        with pytest.raises(backend.BackendError, match="the run r was deleted before it started"):
            kubernetes._wait_until_started(find, manifests.TASK_CONTAINER, "the run r")
        return
    started = kubernetes._wait_until_started(find, manifests.TASK_CONTAINER, "the run r")
    assert started.metadata.name == "ssebench-r-first"


def test_a_pod_that_goes_before_its_container_started_ends_the_wait_at_once(
    clock: Clock,
) -> None:
    looks = iter([pod("1", waiting="ContainerCreating"), None])
    with pytest.raises(backend.BackendError, match="the copy pod was deleted before it started"):
        backend.KubernetesBackend()._wait_until_started(lambda: next(looks), "copy", "the copy pod")
    assert clock.sleeps == [backend.START_POLL_MAX_SECONDS] * 2


def test_a_run_that_cannot_pull_its_image_forgets_the_image_checks_answer(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node said 'present' (kept for an hour), but the run's pod cannot pull the
    image: the start fails on time with the pull error, and the kept answer is dropped,
    in this process and in the cache, so the next run checks the image again."""
    forgotten: list[str] = []
    monkeypatch.setattr(
        backend.image_check, "forget", lambda settings, image: forgotten.append(image)
    )
    kubernetes = backend.KubernetesBackend()
    key = f"{kubernetes.namespace}/{kubernetes.settings.image_pull_policy}/r/x:1"
    monkeypatch.setattr(backend, "_present_images", {key: ImageCheck("present")})
    stuck = pod("1", waiting="ErrImageNeverPull")
    started = clock.now
    with pytest.raises(backend.BackendError, match="cannot pull its image: ErrImageNeverPull"):
        kubernetes._wait_until_started(
            lambda: stuck, manifests.TASK_CONTAINER, "the run r", image="r/x:1"
        )
    assert clock.now - started <= backend.PULL_ERROR_SECONDS + backend.START_POLL_MAX_SECONDS
    assert forgotten == ["r/x:1"] and key not in backend._present_images


def test_a_run_whose_output_this_process_follows_is_first_read_when_it_ends(
    monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    """wait's first look waits for the end of the output (the task container's exit),
    so a short run's pod is read once, exited; the wait is POLL_MAX_SECONDS at most."""
    reads: list[float] = []

    def run_pod(handle: RunHandle) -> Any:
        reads.append(clock.now)
        return pod("2", exit_code=0)

    kubernetes = backend.KubernetesBackend()
    monkeypatch.setattr(kubernetes, "_run_pod", run_pod)
    monkeypatch.setattr(backend, "_drain_output", lambda namespace, name: None)
    output = OutputThread(clock, ends_at_join=1)
    monkeypatch.setitem(backend._log_threads, "ns/p", output)  # type: ignore[arg-type]
    handle = RunHandle(
        backend="kubernetes",
        run_id="r",
        name="ssebench-r",
        details={"namespace": "ns", backend.POD_DETAIL: "p"},
    )
    assert kubernetes.wait(handle, None) == 0
    assert output.joins == [POLL_MAX_SECONDS] and len(reads) == 1 and clock.sleeps == []
    slow = OutputThread(clock, ends_at_join=5)
    monkeypatch.setitem(backend._log_threads, "ns/p", slow)  # type: ignore[arg-type]
    assert kubernetes.wait(handle, 3) == 0
    assert slow.joins == [3]  # no longer than the wait's timeout
    # The output ended, but the kubelet has not reported the exit yet: looked at again
    # after 0.25 s, then 0.5 s, not after POLL_SECONDS.
    statuses = iter([pod("1"), pod("1"), pod("2", exit_code=3)])
    monkeypatch.setattr(kubernetes, "_run_pod", lambda handle: next(statuses))
    ended = OutputThread(clock, ends_at_join=1)
    monkeypatch.setitem(backend._log_threads, "ns/p", ended)  # type: ignore[arg-type]
    clock.sleeps.clear()
    assert kubernetes.wait(handle, None) == 3
    assert clock.sleeps == [0.25, 0.5]
