"""What an evaluation is made of: its matrix entries (an agent with a model), each task's
attempt as it goes (TaskRun), and how many runs may be in each step at once (Limits)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ssebench.errors import UserError
from ssebench.extensions import (
    Backend,
    RunHandle,
)
from ssebench.results.directory import NO_MODEL
from ssebench.runner import RunSettings
from ssebench.stopping import StopRequest
from ssebench.tasks import Task

State = Literal["queued", "preparing", "ready", "starting", "running", "removing", "done"]


# What became of a task: a grade (passed, failed), error (no grade: the run or its
# images failed), stopped (interrupted: recorded but not a grade), not_run (never begun).
Status = Literal["passed", "failed", "error", "stopped", "not_run"]


@dataclass(frozen=True)
class Limits:
    """How many tasks may be in each step at once."""

    jobs: int
    preparing: int = 2
    starting: int = 4
    removing: int = 4

    @classmethod
    def for_jobs(
        cls,
        jobs: int,
        *,
        preparing: int | None = None,
        starting: int | None = None,
        removing: int | None = None,
    ) -> Limits:
        limits = cls(
            jobs=jobs,
            preparing=min(jobs, cls.preparing) if preparing is None else preparing,
            starting=min(jobs, cls.starting) if starting is None else starting,
            removing=min(jobs, cls.removing) if removing is None else removing,
        )
        for name in ("jobs", "preparing", "starting", "removing"):
            if getattr(limits, name) < 1:
                raise UserError(f"The limit {name} must be at least 1")
        return limits


def default_jobs(backend: Backend, cores: int | None) -> int:
    """The backend's default_parallel_runs, else this machine's cores."""
    return backend.default_parallel_runs or max(1, cores or 1)


@dataclass(frozen=True)
class MatrixEntry:
    """One agent with one model (None: the agent needs none)."""

    agent: str
    model: str | None = None

    @property
    def model_label(self) -> str:
        return self.model or NO_MODEL

    @property
    def label(self) -> str:
        return f"{self.agent} / {self.model_label}"

    def to_json(self) -> dict[str, str]:
        return {"agent": self.agent, "model": self.model_label}


@dataclass
class TaskRun:
    """One attempt of one task by one matrix entry, as it goes. Changed by the worker
    that holds it."""

    task: Task
    entry: MatrixEntry = MatrixEntry("reference")
    attempt: int = 1
    state: State = "queued"
    status: Status | None = None
    skipped: bool = False
    run_id: str | None = None
    run_dir: Path | None = None
    error_msg: str | None = None
    start_attempts: int = 0
    retries: list[str] = field(default_factory=list)
    spend: float | None = None
    # A task graded by a reward: what its tests wrote (recorded.reward_of).
    reward: dict[str, float] | None = None
    # True once the run got its model key: only then can it have spent anything.
    model_key: bool = False
    started: float | None = None
    finished: float | None = None
    settings: RunSettings | None = None
    stop: StopRequest | None = None
    handle: RunHandle | None = None

    @property
    def seconds(self) -> float | None:
        if self.started is None:
            return None
        end = self.finished if self.finished is not None else time.monotonic()
        return round(end - self.started, 3)

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task.id,
            "agent": self.entry.agent,
            "model": self.entry.model_label,
            "attempt": self.attempt,
            "state": self.state,
            "status": self.status,
            "skipped": self.skipped,
            "run_id": self.run_id,
            "run_dir": None if self.run_dir is None else str(self.run_dir),
            "error_msg": self.error_msg,
            "start_attempts": self.start_attempts,
            "start_retries": list(self.retries),
            "seconds": self.seconds if not self.skipped else None,
            "spend": self.spend,
            **({"reward": self.reward} if self.reward is not None else {}),
        }


# The statuses a finished run of the matrix can have, as counted.
STATUSES: tuple[Status, ...] = ("passed", "failed", "error", "stopped", "not_run")


@dataclass(frozen=True)
class Counts:
    total: int
    queued: int
    running: int
    done: int
    passed: int
    failed: int
    error: int
    stopped: int
    not_run: int
    skipped: int

    def to_json(self) -> dict[str, int]:
        return {
            "total": self.total,
            "passed": self.passed,
            "failed": self.failed,
            "error": self.error,
            "stopped": self.stopped,
            "not_run": self.not_run,
            "skipped": self.skipped,
        }
