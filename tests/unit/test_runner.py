"""The runner against the fake backend: call order, cleanup, recording in every case."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from ssebench.agents import load_agent
from ssebench.errors import BackendError
from ssebench.extensions import RunHandle
from ssebench.results.directory import NO_RESULT_MESSAGE, RunDirectory
from ssebench.runner import Runner, RunSettings
from ssebench.stopping import StopRequest
from ssebench.tasks import load_dataset
from ssebench.testing.fake import FakeBackend, RecordingBackend

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "datasets" / "tiny"
SENTINEL = "sentinel-key-77aa01"


def settings(
    tmp_path: Path, agent: str = "reference", run_id: str = "run-1", **changes: object
) -> RunSettings:
    task = load_dataset(TINY).task("tiny-add")
    values: dict[str, object] = {
        "task": task,
        "agent": load_agent(agent),
        "model": None,
        "run_id": run_id,
        "results_root": tmp_path / "results",
        "backend": "fake",
        "model_env": {"SSE_API_KEY": SENTINEL},
    }
    values.update(changes)
    return RunSettings(**values)  # type: ignore[arg-type]


def run(backend: RecordingBackend, run_settings: RunSettings) -> tuple[Path, dict[str, object]]:
    runner = Runner(backend, out=io.StringIO())
    images = runner.prepare(run_settings)
    outcome = runner.run(run_settings, images)
    return outcome.run_dir, outcome.summary


def read(path: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads(path.read_text())
    return data


def test_call_order_of_a_reference_run(tmp_path: Path) -> None:
    backend = RecordingBackend()
    run_dir, summary = run(backend, settings(tmp_path))
    assert backend.calls == [
        "prepare_images",
        "copy_from_image",
        "start",
        "wait",
        "collect_results",
        "cleanup",
    ]
    assert summary["status"] == "passed"
    assert summary["exit_code"] == 0
    assert run_dir == tmp_path / "results" / "tiny-add" / "none" / "reference" / "run-1"
    assert (run_dir.parent / "latest").resolve() == run_dir
    result = read(run_dir / "result.json")
    assert result["status"] == "passed"
    assert result["config"]["reference_run"] is True  # type: ignore[index]
    assert (run_dir / "reference.patch").exists()
    assert backend.list_runs({"ssebench.run-id": "run-1"}) == []


def test_the_spec_is_plain_data_made_without_the_backend(tmp_path: Path) -> None:
    """The reference patch is copied out first; making the spec calls nothing."""
    backend = RecordingBackend()
    runner = Runner(backend, out=io.StringIO())
    run_settings = settings(tmp_path)
    images = runner.prepare(run_settings)
    run_dir = RunDirectory.for_run(
        run_settings.results_root, task="tiny-add", model=None, agent="reference", run_id="s-1"
    )
    run_dir.create()
    patch = run_dir.path / "reference.patch"
    calls = len(backend.calls)
    spec = runner._spec(run_settings, images, run_dir, {"ssebench.run-id": "s-1"}, patch)
    assert len(backend.calls) == calls
    assert [(mount.target, mount.source) for mount in spec.artifacts] == [
        ("/reference/patch.diff", str(patch))
    ]
    without = runner._spec(run_settings, images, run_dir, {"ssebench.run-id": "s-1"}, None)
    assert without.artifacts == ()


class GoneTerminal(io.StringIO):
    """A terminal whose reader has gone: every write fails."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_run_whose_terminal_is_gone_is_carried_out_and_recorded(tmp_path: Path) -> None:
    backend = RecordingBackend()
    runner = Runner(backend, out=GoneTerminal())
    run_settings = settings(tmp_path)
    outcome = runner.run(run_settings, runner.prepare(run_settings))
    assert backend.calls[-3:] == ["wait", "collect_results", "cleanup"]
    assert outcome.summary["status"] == "passed"
    assert read(outcome.run_dir / "summary.json")["status"] == "passed"


def test_other_agents_get_no_reference_patch(tmp_path: Path) -> None:
    backend = RecordingBackend()
    run_dir, summary = run(backend, settings(tmp_path, agent="dummy"))
    assert "copy_from_image" not in backend.calls
    assert summary["status"] == "failed"
    assert not (run_dir / "reference.patch").exists()


@pytest.mark.parametrize("error", [BackendError("watch lost"), KeyboardInterrupt()])
def test_cleanup_and_record_when_wait_raises(tmp_path: Path, error: BaseException) -> None:
    backend = RecordingBackend(fail_in="wait", error=error)
    runner = Runner(backend, out=io.StringIO())
    run_settings = settings(tmp_path)
    with pytest.raises(type(error)):
        runner.run(run_settings, runner.prepare(run_settings))
    assert backend.calls[-1] == "cleanup"
    run_dir = tmp_path / "results" / "tiny-add" / "none" / "reference" / "run-1"
    summary = read(run_dir / "summary.json")
    assert summary["status"] == "error"
    assert str(summary["error_msg"]).startswith(NO_RESULT_MESSAGE)
    assert read(run_dir / "result.json")["config"]


def test_recorded_when_start_fails(tmp_path: Path) -> None:
    backend = RecordingBackend(fail_in="start")
    runner = Runner(backend, out=io.StringIO())
    run_settings = settings(tmp_path)
    with pytest.raises(BackendError):
        runner.run(run_settings, runner.prepare(run_settings))
    assert "cleanup" not in backend.calls  # there is no handle to clean up
    summary = read(run_settings.results_root / "tiny-add/none/reference/run-1/summary.json")
    assert summary["status"] == "error" and summary["exit_code"] is None


@pytest.mark.parametrize(("behaviour", "exit_code"), [("noresult", 1), ("crash", 2)])
def test_recorded_when_the_container_leaves_no_grade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, behaviour: str, exit_code: int
) -> None:
    monkeypatch.setenv("SSEBENCH_FAKE_BEHAVIOUR", behaviour)
    run_dir, summary = run(RecordingBackend(), settings(tmp_path))
    assert summary["status"] == "error"
    assert summary["error_msg"] == NO_RESULT_MESSAGE
    assert summary["exit_code"] == exit_code
    assert read(run_dir / "result.json")["status"] == "error"


def test_stopped_run_is_recorded_with_143(tmp_path: Path) -> None:
    backend = RecordingBackend()
    runner = Runner(backend, out=io.StringIO())
    run_settings = settings(tmp_path, agent="sleeper")
    stop = StopRequest()
    stop.request()  # before start: the runner stops the run as soon as it exists
    summary = runner.run(run_settings, runner.prepare(run_settings), stop).summary
    assert summary["exit_code"] == 143
    assert summary["stopped"] is True


def test_existing_run_directory_is_refused(tmp_path: Path) -> None:
    from ssebench.errors import UserError

    run(RecordingBackend(), settings(tmp_path))
    with pytest.raises(UserError, match="exists"):
        run(RecordingBackend(), settings(tmp_path))


def test_env_never_reaches_files_or_output(tmp_path: Path) -> None:
    out = io.StringIO()
    run_settings = settings(tmp_path)
    runner = Runner(RecordingBackend(), out=out)
    outcome = runner.run(run_settings, runner.prepare(run_settings))
    assert SENTINEL not in out.getvalue()
    assert SENTINEL not in repr(run_settings)
    for file in outcome.run_dir.rglob("*"):
        if file.is_file():
            assert SENTINEL not in file.read_text(errors="replace"), file


class UnenforcingBackend(RecordingBackend):
    """A platform that says it does not apply network policies (or cannot tell)."""

    def __init__(self, answer: bool | BaseException | None) -> None:
        super().__init__()
        self.answer = answer
        self.asked_with: list[str] = []

    def egress_enforced(self, image: str) -> bool | None:
        self.asked_with.append(image)
        self.calls.append("egress_enforced")
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


@pytest.mark.parametrize(
    ("answer", "recorded", "said"),
    [
        (False, False, "does not enforce network policies"),
        (True, True, None),
        (None, None, None),
        (BackendError("403 Forbidden: pods"), None, "cannot tell whether"),
    ],
)
def test_whether_egress_is_enforced_is_said_and_recorded(
    tmp_path: Path, answer: bool | BaseException | None, recorded: bool | None, said: str | None
) -> None:
    backend = UnenforcingBackend(answer)
    out = io.StringIO()
    runner = Runner(backend, out=out)
    run_settings = settings(tmp_path, agent="dummy")
    images = runner.prepare(run_settings)
    outcome = runner.run(run_settings, images)
    assert backend.asked_with == [images.run]
    assert outcome.summary["config"]["egress_enforced"] is recorded  # type: ignore[index]
    result = read(outcome.run_dir / "result.json")
    assert result["config"]["egress_enforced"] is recorded  # type: ignore[index]
    warnings = [line for line in out.getvalue().splitlines() if "warning:" in line]
    if said is None:
        assert warnings == []
    else:
        assert len(warnings) == 1 and said in warnings[0], warnings
    # Asked (and said) before the run starts, so the operator can stop it.
    assert backend.calls.index("egress_enforced") < backend.calls.index("start")


def test_results_gone_is_a_run_without_a_grade_not_a_failure(tmp_path: Path) -> None:
    from ssebench.errors import ResultsGoneError

    backend = RecordingBackend(
        fail_in="collect_results", error=ResultsGoneError("The results of run-1 are gone")
    )
    run_dir, summary = run(backend, settings(tmp_path))  # returns: nothing is raised
    assert summary["status"] == "error"
    assert summary["error_msg"] == f"{NO_RESULT_MESSAGE} (The results of run-1 are gone)"
    assert backend.calls[-1] == "cleanup"
    assert read(run_dir / "result.json")["status"] == "error"


@pytest.mark.parametrize("during", ["wait", "collect_results", "cleanup"])
def test_an_abandoned_run_is_recorded_without_calling_the_backend_again(
    tmp_path: Path, during: str
) -> None:
    """A second signal (RunAbandoned, raised where the main thread is): no cleanup
    after it, and the run is recorded; its grade only if it was read out whole."""
    import signal as signals

    stop = StopRequest()

    class Abandoning(RecordingBackend):
        def _note(self, name: str) -> None:
            self.calls.append(name)
            if name == during:
                stop.abandon(signals.SIGINT)  # as the second signal's handler does

        def cleanup(self, handle: RunHandle) -> None:
            self._note("cleanup")
            super().cleanup(handle)

    backend = Abandoning()
    runner = Runner(backend, out=io.StringIO())
    run_settings = settings(tmp_path, run_id=f"abandoned-{during}")
    summary = runner.run(run_settings, runner.prepare(run_settings), stop).summary
    assert backend.calls[-1] == during  # nothing after it
    for left in backend.list_runs({"ssebench.run-id": run_settings.run_id}):
        FakeBackend.cleanup(backend, left.handle)
    assert summary["stopped"] is True
    if during == "cleanup":
        assert summary["status"] == "passed"  # read out whole before the signal
    else:
        assert summary["status"] == "error"
        assert summary["error_msg"] == f"{NO_RESULT_MESSAGE} (ssebench ended by a second SIGINT)"


def test_a_second_signal_while_recording_lets_the_recording_finish() -> None:
    from ssebench.stopping import RunAbandoned

    stop = StopRequest()
    with pytest.raises(RunAbandoned):
        stop.abandon(2)
    assert stop.exit_status == 130
    stop.recording.set()
    stop.abandon(15)  # no raise: the runner records, then the process exits
    assert stop.exit_status == 143
