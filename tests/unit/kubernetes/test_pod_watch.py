"""Waiting for a run's pods to change: one watch request instead of a list a second."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from ssebench.backends.kubernetes import backend
from ssebench.backends.kubernetes.backend import POLL_SECONDS, _PodQuery


class FakeApiError(Exception):
    status = 410
    reason = "Gone"
    body = ""


class WatchResponse:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.closed = False

    def stream(self, amount: int) -> Iterator[bytes]:
        yield from self.chunks

    def close(self) -> None:
        self.closed = True

    def release_conn(self) -> None:
        pass


class FakeCore:
    """list_namespaced_pod as the API answers it: a list, or a watch response."""

    def __init__(self, watch: WatchResponse | Exception) -> None:
        self.watch = watch
        self.calls: list[dict[str, Any]] = []

    def list_namespaced_pod(self, namespace: str, **options: Any) -> Any:
        self.calls.append({"namespace": namespace, **options})
        if not options.get("watch"):
            return SimpleNamespace(items=["pod"], metadata=SimpleNamespace(resource_version="41"))
        if isinstance(self.watch, Exception):
            raise self.watch
        return self.watch


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    pauses: list[float] = []
    monkeypatch.setattr(backend.time, "sleep", pauses.append)
    return pauses


def use(monkeypatch: pytest.MonkeyPatch, core: FakeCore) -> None:
    api = SimpleNamespace(core=core, api_exception=FakeApiError)
    monkeypatch.setattr(backend, "_api", lambda: api)


def test_a_listing_gives_the_version_to_watch_from(monkeypatch: pytest.MonkeyPatch) -> None:
    core = FakeCore(WatchResponse([]))
    use(monkeypatch, core)
    assert _PodQuery("ns", label_selector="a=b").listing() == (["pod"], "41")
    assert core.calls == [
        {"namespace": "ns", "label_selector": "a=b", "field_selector": "", "_request_timeout": 30}
    ]


def test_an_event_ends_the_wait(monkeypatch: pytest.MonkeyPatch, slept: list[float]) -> None:
    response = WatchResponse([b'{"type": "MODIFIED", ', b"more"])
    core = FakeCore(response)
    use(monkeypatch, core)
    _PodQuery("ns", field_selector="metadata.name=p").await_change("41", 30)
    (watch,) = core.calls
    assert watch["watch"] is True and watch["resource_version"] == "41"
    assert watch["timeout_seconds"] == 30 and watch["field_selector"] == "metadata.name=p"
    assert watch["_preload_content"] is False
    assert response.closed
    # The event came at once, so the wait still lasts a poll's interval, no longer.
    assert len(slept) == 1 and 0 < slept[0] <= POLL_SECONDS


def test_a_failing_watch_is_a_poll_not_a_busy_loop(
    monkeypatch: pytest.MonkeyPatch, slept: list[float]
) -> None:
    use(monkeypatch, FakeCore(FakeApiError()))
    _PodQuery("ns").await_change("41", 30)
    assert len(slept) == 1 and slept[0] == pytest.approx(POLL_SECONDS, abs=0.05)


def test_without_a_version_or_time_there_is_no_watch(
    monkeypatch: pytest.MonkeyPatch, slept: list[float]
) -> None:
    core = FakeCore(WatchResponse([]))
    use(monkeypatch, core)
    _PodQuery("ns").await_change(None, 30)
    _PodQuery("ns").await_change("41", 0.25)  # less than the watch's 1 s granularity
    assert core.calls == []
    assert slept[0] == pytest.approx(POLL_SECONDS, abs=0.05)
    assert slept[1] == pytest.approx(0.25, abs=0.05)


class Clock:
    """time.monotonic for the backend, moved on by the waits it makes."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


class StuckPods:
    """A query whose only pod never starts its container; each wait costs its seconds."""

    def __init__(self, clock: Clock, waiting: str | None) -> None:
        self.clock = clock
        state = SimpleNamespace(
            running=None,
            terminated=None,
            waiting=SimpleNamespace(reason=waiting, message="no such image") if waiting else None,
        )
        self.pod = SimpleNamespace(
            status=SimpleNamespace(
                phase="Pending",
                reason=None,
                conditions=[
                    SimpleNamespace(status="False", reason="Unschedulable", message="0/1 nodes")
                ],
                container_statuses=[SimpleNamespace(name="task", state=state)] if waiting else [],
            )
        )
        self.waits: list[float] = []

    def listing(self) -> tuple[list[Any], str | None]:
        return [self.pod], "7"

    def await_change(self, version: str | None, seconds: float) -> None:
        assert version == "7"
        self.waits.append(seconds)
        self.clock.now += seconds


@pytest.mark.parametrize(
    ("waiting", "limit", "message"),
    [
        ("ErrImagePull", backend.PULL_ERROR_SECONDS, "cannot pull its image: ErrImagePull"),
        (None, backend.NO_CONTAINER_SECONDS, "did not start within 600 s: Unschedulable"),
    ],
)
def test_a_run_that_never_starts_fails_on_time_with_the_pods_reason(
    monkeypatch: pytest.MonkeyPatch, waiting: str | None, limit: float, message: str
) -> None:
    clock = Clock()
    monkeypatch.setattr(backend.time, "monotonic", clock.monotonic)
    pods = StuckPods(clock, waiting)
    started = clock.now
    with pytest.raises(backend.BackendError, match=message):
        backend.KubernetesBackend()._wait_until_started(
            pods, lambda found: found[0], "task", "the run r"
        )
    # Found at the first look past the limit: no later than one wait's length.
    assert limit <= clock.now - started <= limit + max(pods.waits)
    assert max(pods.waits) <= backend.WATCH_SECONDS
