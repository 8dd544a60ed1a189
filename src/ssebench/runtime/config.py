"""What a run is told: the container's environment, its fixed paths and task.json."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DAEMON_PORT = 4263
DEFAULT_TIMEOUT = 3600
DEFAULT_DIFFICULTY = 2
DEFAULT_STEP_TIMEOUT = 900
DEFAULT_RESULTS = "/var/lib/ssebench/results"
DEFAULT_ARCHIVE = "/tmp/sse-archive"

# Written by the tool layer's Dockerfile: the case image's environment (toolchain
# variables such as GOPATH or CARGO_HOME), which the agent and the task commands
# need although they otherwise get a clean environment.
IMAGE_ENV_FILE = Path("/opt/ssebench/image.env")

# Variables of the container's environment that the runtime consumes itself; every
# other SSE_* variable is handed on to the agent (agent settings such as
# SSE_SLEEPER_SECONDS).
RUNTIME_ONLY_VARIABLES = frozenset(
    {"SSE_RESULTS", "SSE_KEEP_ALIVE", "SSE_RUN_ID", "SSE_RESULTS_OWNER"}
)

# Set per process by Docker, the shell or the build, not by the image's author.
_NOT_IMAGE_VARIABLES = frozenset(
    {"HOME", "HOSTNAME", "PWD", "OLDPWD", "SHLVL", "_", "USER", "LOGNAME", "TERM"}
)


@dataclass(frozen=True)
class Layout:
    """Where things are in the container. Tests point it at temporary directories."""

    task_dir: Path = Path("/ssebench/task")
    results: Path = Path(DEFAULT_RESULTS)
    # The parent of the results mount, kept 0700 root so that only root reaches the grade.
    private_root: Path = Path("/var/lib/ssebench")
    archive: Path = Path(DEFAULT_ARCHIVE)
    socket_dir: Path = Path("/run/ssebench")
    grade_root: Path = Path("/var/lib/ssebench-grade")
    image_env_file: Path = IMAGE_ENV_FILE
    # A task graded by a reward (Harbor's convention): its tests are copied to tests_dir
    # at grading; logs_root/agent is the agent's, logs_root/verifier the verifier's.
    logs_root: Path = Path("/logs")
    tests_dir: Path = Path("/tests")

    @property
    def task_file(self) -> Path:
        return self.task_dir / "task.json"

    @property
    def hidden_dir(self) -> Path:
        return self.task_dir / "hidden"

    @property
    def agent_socket(self) -> Path:
        return self.socket_dir / "agent.sock"

    @property
    def admin_socket(self) -> Path:
        return self.socket_dir / "admin.sock"

    @property
    def dialog_file(self) -> Path:
        return self.archive / "dialog.jsonl"

    @property
    def harness_events_file(self) -> Path:
        """The runtime's own dialog events, where the agent cannot write."""
        return self.results / "harness-events.jsonl"

    @property
    def private_dir(self) -> Path:
        """Root-only: what no task command may read or change."""
        return self.grade_root / "private"

    @property
    def base_repository(self) -> Path:
        return self.private_dir / "base.git"

    @property
    def grading_workspace(self) -> Path:
        return self.grade_root / "grade"

    @property
    def tools_workspace(self) -> Path:
        return self.grade_root / "tools"

    @property
    def runner_home_template(self) -> Path:
        return self.private_dir / "runner-home"

    def with_environment(self, settings: Settings) -> Layout:
        """The layout with the results and archive paths the environment asks for."""
        return Layout(
            task_dir=self.task_dir,
            results=settings.results,
            private_root=self.private_root,
            archive=settings.archive,
            socket_dir=self.socket_dir,
            grade_root=self.grade_root,
            image_env_file=self.image_env_file,
            logs_root=self.logs_root,
            tests_dir=self.tests_dir,
        )


@dataclass(frozen=True)
class Settings:
    """The run's settings, parsed from the container's environment."""

    base_url: str = field(repr=False)
    api_key: str = field(repr=False)
    model_name: str
    difficulty: int
    timeout: int
    results: Path
    archive: Path
    keep_alive: bool
    run_id: str | None
    step_timeout: int
    # Who gets the results back once the run ends (SSE_RESULTS_OWNER=uid:gid): the user
    # of a runner that is not root, which could not read its own run directory else.
    results_owner: tuple[int, int] | None
    # SSE_* variables meant for the agent; they may hold anything, so no repr.
    agent_variables: Mapping[str, str] = field(repr=False)
    # Problems with the environment, logged once the logs are open.
    warnings: tuple[str, ...] = ()

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Settings:
        warnings: list[str] = []
        difficulty = _integer(environ, "SSE_DIFFICULTY", DEFAULT_DIFFICULTY, 1, 3, warnings)
        timeout = _integer(environ, "TIMEOUT", DEFAULT_TIMEOUT, 1, None, warnings)
        step_timeout = _integer(
            environ, "SSE_STEP_TIMEOUT", DEFAULT_STEP_TIMEOUT, 1, None, warnings
        )
        agent_variables = {
            name: value
            for name, value in environ.items()
            if name.startswith("SSE_") and name not in RUNTIME_ONLY_VARIABLES
        }
        return cls(
            base_url=environ.get("SSE_BASE_URL", ""),
            api_key=environ.get("SSE_API_KEY", ""),
            model_name=environ.get("SSE_MODEL_NAME", ""),
            difficulty=difficulty,
            timeout=timeout,
            results=Path(environ.get("SSE_RESULTS") or DEFAULT_RESULTS),
            archive=Path(environ.get("SSE_ARCHIVE") or DEFAULT_ARCHIVE),
            keep_alive=environ.get("SSE_KEEP_ALIVE", "") == "1",
            run_id=environ.get("SSE_RUN_ID") or None,
            step_timeout=step_timeout,
            results_owner=_owner(environ.get("SSE_RESULTS_OWNER", ""), warnings),
            agent_variables=agent_variables,
            warnings=tuple(warnings),
        )

    @property
    def secrets(self) -> tuple[str, ...]:
        """Values that must never reach a log, a result or an error message."""
        return tuple(value for value in (self.api_key,) if value)


def _owner(value: str, warnings: list[str]) -> tuple[int, int] | None:
    if not value:
        return None
    uid, _, gid = value.partition(":")
    if not (uid.isdigit() and gid.isdigit()):
        warnings.append("SSE_RESULTS_OWNER is not uid:gid; the results stay root's")
        return None
    return int(uid), int(gid)


def _integer(
    environ: Mapping[str, str],
    name: str,
    default: int,
    low: int,
    high: int | None,
    warnings: list[str],
) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if value < low or (high is not None and value > high):
        # The value itself is not repeated: the log must not echo the environment.
        allowed = f"{low}..{high}" if high is not None else f">= {low}"
        warnings.append(f"{name} is not an integer in {allowed}; using {default}")
        return default
    return value


class TaskError(Exception):
    """task.json is missing or malformed."""


@dataclass(frozen=True)
class Verifier:
    """task.json's verifier: the command that runs a task's tests on the final state,
    as user, with env, for at most timeout seconds; where the reward comes from."""

    command: str
    reward: str  # "reward-file" or "pytest-summary"
    user: str
    timeout: float
    env: Mapping[str, str]

    @classmethod
    def from_json(cls, data: Any) -> Verifier | None:
        if data is None:
            return None
        if not isinstance(data, dict):
            raise TaskError("task.json: 'verifier' must be an object")
        command, reward, user = data.get("command"), data.get("reward"), data.get("user")
        timeout, env = data.get("timeout_sec"), data.get("env", {})
        if not (isinstance(command, str) and command and isinstance(user, str) and user):
            raise TaskError("task.json: the verifier needs a command and a user")
        if reward not in ("reward-file", "pytest-summary"):
            raise TaskError(
                "task.json: the verifier's reward must be reward-file or pytest-summary"
            )
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise TaskError("task.json: the verifier's timeout_sec must be above 0")
        if not isinstance(env, dict) or not all(
            isinstance(name, str) and isinstance(value, str) for name, value in env.items()
        ):
            raise TaskError("task.json: the verifier's env must map names to texts")
        return cls(command=command, reward=reward, user=user, timeout=float(timeout), env=env)


@dataclass(frozen=True)
class Task:
    """The part of /ssebench/task/task.json the runtime uses."""

    id: str
    source_dir: Path
    prompt: str
    build: str
    test: str
    hidden_test: str
    project: str = ""
    language: str = ""
    dataset: str = ""
    # Optional: the commit to grade against. Without it, the source repo's HEAD as
    # the container starts, before the agent can move it.
    base_commit: str | None = None
    # A task graded on its final state by a reward: how (see rewards.py). None: by patch.
    verifier: Verifier | None = None
    # The image's user the agent runs as instead of the agent account (never root).
    agent_user: str | None = None

    @classmethod
    def from_json(cls, data: Any) -> Task:
        if not isinstance(data, dict):
            raise TaskError("task.json is not a JSON object")

        def text(key: str, required: bool) -> str:
            value = data.get(key)
            if value is None and not required:
                return ""
            if not isinstance(value, str) or (required and not value):
                raise TaskError(f"task.json: {key!r} must be a non-empty string")
            return value

        source_dir = Path(text("source_dir", True))
        if not source_dir.is_absolute():
            raise TaskError("task.json: 'source_dir' must be an absolute path")
        base_commit = text("base_commit", False) or None
        return cls(
            id=text("id", True),
            source_dir=source_dir,
            prompt=text("prompt", True),
            build=text("build", False),
            test=text("test", False),
            hidden_test=text("hidden_test", True),
            project=text("project", False),
            language=text("language", False),
            dataset=text("dataset", False),
            base_commit=base_commit,
            verifier=Verifier.from_json(data.get("verifier")),
            agent_user=text("agent_user", False) or None,
        )

    @classmethod
    def load(cls, path: Path) -> Task:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise TaskError(f"cannot read {path}: {type(error).__name__}") from error
        return cls.from_json(data)


def load_image_environment(path: Path) -> dict[str, str]:
    """The case image's environment as the tool layer recorded it (``env -0``)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    variables: dict[str, str] = {}
    for entry in raw.split(b"\0"):
        name, sep, value = entry.decode("utf-8", "replace").partition("=")
        if not sep or not name or name in _NOT_IMAGE_VARIABLES or name.startswith("SSE_"):
            continue
        variables[name] = value
    return variables


def default_path(environ: Mapping[str, str]) -> str:
    return environ.get("PATH") or "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
