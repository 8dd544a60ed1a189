"""Grading: the agent's tree becomes final.patch, which must apply to a pristine copy of
the base commit, build, pass the task's tests, and then pass the hidden tests.

Every task command runs as the runner user in a scratch copy (see workspace.py);
the evaluator itself runs as root but executes nothing the agent wrote.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .accounts import Account
from .config import Task
from .logs import LogFile, RedactingStream, Redactor
from .processes import Completed
from .repository import BaseRepository, count_patch_files
from .workspace import Workspace, restore_home

SCHEMA = 1
STEP_FAILURES = {
    "apply": "Patch apply failed",
    "build": "Build failed",
    "test": "Test failed",
    "hidden_test": "Hidden test failed",
    "verifier": "Verifier failed",
}
STOPPED_DURING_GRADING = "Stopped during grading"
MODEL_ERROR = "Model error"
# How much of the agent's own reason for a model error goes into error_msg.
MODEL_ERROR_REASON_CHARS = 200


@dataclass(frozen=True)
class Step:
    name: str
    ok: bool
    exit_code: int
    seconds: float
    # The step ran past SSE_STEP_TIMEOUT and was killed.
    timed_out: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ok": self.ok,
            "exit_code": self.exit_code,
            "seconds": self.seconds,
            "timed_out": self.timed_out,
        }

    @property
    def failure(self) -> str:
        """error_msg of a run this failed step decides, naming a timeout as such."""
        if self.timed_out:
            return f"{STEP_FAILURES[self.name]}: timed out after {round(self.seconds)}s"
        return STEP_FAILURES[self.name]


@dataclass
class Grading:
    """What grading found so far; complete unless ``error`` says it broke off."""

    steps: list[Step] = field(default_factory=list)
    patch: bytes | None = None
    # The short error message of a grading that broke off, e.g. "Evaluator error: OSError".
    error: str | None = None
    # A task graded by a reward (rewards.py): what its tests wrote, by name.
    reward: dict[str, float] | None = None


def model_error_message(reason: Any) -> str:
    """error_msg of a run whose model could not be used: "Model error: <reason>".

    The reason is the agent's (its last `complete` event), so it is made one line of
    printable characters, clipped; without a usable one it is just "Model error".
    """
    text = " ".join(str(reason).split()) if isinstance(reason, str) else ""
    text = "".join(char for char in text if char.isprintable())
    if len(text) > MODEL_ERROR_REASON_CHARS:
        text = text[: MODEL_ERROR_REASON_CHARS - 3].rstrip() + "..."
    return f"{MODEL_ERROR}: {text}" if text else MODEL_ERROR


def reward_status(reward: dict[str, float]) -> tuple[str, str | None]:
    """passed when every value is 1; else failed, naming the reward."""
    if all(value == 1 for value in reward.values()):
        return "passed", None
    if list(reward) == ["reward"]:
        return "failed", f"Reward {reward['reward']:g}"
    return "failed", "Reward " + ", ".join(f"{name}={value:g}" for name, value in reward.items())


def decide_status(
    grading: Grading, *, timed_out: bool, timeout: int, model_error: str | None = None
) -> tuple[str, str | None]:
    """(status, error_msg): the evaluator's own failure first, then a model error (the
    run's model could not be used: model_error is its error_msg; the patch is graded
    all the same, its steps are recorded), then the agent's timeout (which fails a run
    even if its patch passes), then the reward of a task graded by one (rewards.py),
    else the first failed step."""
    if grading.error is not None:
        return "error", grading.error
    if model_error is not None:
        return "error", model_error
    if timed_out:
        return "failed", f"Timeout ({timeout}s)"
    if grading.reward is not None:
        return reward_status(grading.reward)
    for step in grading.steps:
        if not step.ok:
            return "failed", step.failure
    return "passed", None


def result_document(
    *,
    task_id: str | None,
    run_id: str | None,
    grading: Grading,
    agent_exit_code: int | None,
    timed_out: bool,
    stopped: bool,
    timeout: int,
    started_at: str,
    finished_at: str,
    model_error: str | None = None,
) -> dict[str, Any]:
    status, error_msg = decide_status(
        grading, timed_out=timed_out, timeout=timeout, model_error=model_error
    )
    patch = grading.patch
    reward = {} if grading.reward is None else {"reward": grading.reward}
    return {
        "schema": SCHEMA,
        "run_id": run_id,
        "task": task_id,
        "status": status,
        "error_msg": error_msg,
        "agent_exit_code": agent_exit_code,
        "timed_out": timed_out,
        "stopped": stopped,
        "steps": [step.to_json() for step in grading.steps],
        "patch_bytes": None if patch is None else len(patch),
        "patch_files": None if patch is None else count_patch_files(patch),
        "started_at": started_at,
        "finished_at": finished_at,
        "runtime_version": __version__,
        **reward,
    }


def write_result(path: Path, document: dict[str, Any]) -> None:
    """Write result.json atomically (temporary file + rename), root-only."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.unlink(missing_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temporary, flags, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            json.dump(document, stream, indent=2)
            stream.write("\n")
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


class Grader:
    """What the two graders share: the grading found so far (complete unless its error
    says it broke off), steps recorded from completed commands, progress lines."""

    def __init__(
        self, *, log: LogFile, redactor: Redactor, progress: Callable[[str], None]
    ) -> None:
        self.log = log
        self.redactor = redactor
        self.progress = progress
        # Filled in as grading goes, so a grading that is interrupted still has it.
        self.grading = Grading()

    def run(self) -> Grading:
        try:
            self._grade()
        except Exception as error:
            self.log.exception("grading broke off", error)
            self.grading.error = f"Evaluator error: {type(error).__name__}"
        return self.grading

    def _grade(self) -> None:
        raise NotImplementedError

    def _record_step(self, name: str, completed: Completed) -> Step:
        step = Step(
            name,
            completed.exit_code == 0 and not completed.timed_out,
            completed.exit_code,
            round(completed.seconds, 3),
            timed_out=completed.timed_out,
        )
        self.grading.steps.append(step)
        how = "timed out" if completed.timed_out else f"exit {completed.exit_code}"
        self._say(f"{name}: {'ok' if step.ok else 'FAILED'} ({how}, {step.seconds:.1f}s)")
        return step

    def _say(self, message: str) -> None:
        self.log.line(message)
        self.progress(f"grading: {message}")


class Evaluator(Grader):
    def __init__(
        self,
        *,
        task: Task,
        repository: BaseRepository,
        workspace: Workspace,
        runner: Account,
        results_dir: Path,
        hidden_dir: Path,
        runner_home_template: Path,
        log: LogFile,
        redactor: Redactor,
        progress: Callable[[str], None],
    ) -> None:
        super().__init__(log=log, redactor=redactor, progress=progress)
        self.task = task
        self.repository = repository
        self.workspace = workspace
        self.runner = runner
        self.results_dir = results_dir
        self.hidden_dir = hidden_dir
        self.runner_home_template = runner_home_template

    def _grade(self) -> None:
        patch = self.repository.diff()
        self.grading.patch = patch
        write_patch(self.results_dir / "final.patch", patch)
        files = count_patch_files(patch)
        self._say(f"final.patch: {len(patch)} bytes, {files} files")

        # Nothing a task command started while the agent ran may touch grading.
        restore_home(self.runner, self.runner_home_template)
        self.workspace.reset()
        extracted = self._logged(self.workspace.extract_base)
        if extracted.exit_code != 0:
            raise RuntimeError(f"extracting the base commit exited {extracted.exit_code}")

        if not self._step("apply", "git apply final.patch", self._apply(patch)):
            return
        for name, command in (("build", self.task.build), ("test", self.task.test)):
            if not command:
                self._say(f"{name}: the task has no {name} command; skipped")
            elif not self._step(name, command, self._command(command)):
                return
        if self.hidden_dir.is_dir():
            copied = self._logged(self._overlay_hidden)
            if copied.exit_code != 0:
                raise RuntimeError(f"copying the hidden tests exited {copied.exit_code}")
        hidden_test = self.task.hidden_test
        self._step("hidden_test", hidden_test, self._command(hidden_test))

    def _apply(self, patch: bytes) -> Callable[[RedactingStream], Completed]:
        return lambda sink: self.workspace.apply(patch, sink)

    def _command(self, command: str) -> Callable[[RedactingStream], Completed]:
        return lambda sink: self.workspace.run_command(command, sink)

    def _overlay_hidden(self, sink: RedactingStream) -> Completed:
        return self.workspace.overlay(self.hidden_dir, sink)

    def _step(self, name: str, label: str, action: Callable[[RedactingStream], Completed]) -> bool:
        self.log.line(f"== {name}: $ {label}")
        return self._record_step(name, self._logged(action)).ok

    def _logged(self, action: Callable[[RedactingStream], Completed]) -> Completed:
        """Run an action with its output going, redacted, to evaluator.log."""
        sink = RedactingStream(self.redactor, self.log.write)
        try:
            return action(sink)
        finally:
            sink.close()


def write_patch(path: Path, data: bytes) -> None:
    """Write final.patch (replacing it, never through a link)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(path, flags, 0o644), "wb") as stream:
        stream.write(data)
