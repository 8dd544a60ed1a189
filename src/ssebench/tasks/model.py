"""One task: a folder with task.yaml, the project's source (repo/), the hidden
fail-to-pass tests (hidden/) and the reference patch (reference.patch); optionally
environment/, a Dockerfile (and its context) for the image the project runs in.

A task whose task.yaml has a `verifier` table (an imported Harbor or Terminal-Bench
task) is graded on the container's final state: its verifier command runs the hidden
tests (at /tests) and they write a reward. Its reference is solution.sh, a script the
reference agent runs, instead of reference.patch.

See docs/adding-a-task.md for the format a task author writes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssebench.errors import TaskError
from ssebench.extensions import TaskResources
from ssebench.host.entry_points import entry_points

TASK_FILE = "task.yaml"
SOURCE_FOLDER = "repo"
HIDDEN_FOLDER = "hidden"
REFERENCE_PATCH = "reference.patch"
SOLUTION_SCRIPT = "solution.sh"
ENVIRONMENT_FOLDER = "environment"
DEFAULT_BASE_IMAGE = "debian:bookworm-slim"
LANGUAGES = ("python", "c", "go", "rust", "java", "javascript", "shell")
TASK_ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,47}$")
PACKAGE_PATTERN = re.compile(r"^[a-z0-9][a-z0-9+.-]*$")
USER_PATTERN = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
REWARD_SOURCES = ("reward-file", "pytest-summary")


# The entry point group of the graders that decide a run on the host (tasks/graders.py).
GRADERS_GROUP = "ssebench.graders"


def grader_names() -> list[str]:
    """The names of the installed graders."""
    return sorted({entry.name for entry in entry_points(GRADERS_GROUP)})


@dataclass(frozen=True)
class Verifier:
    """How a task graded by a reward is graded: its command runs as user with env, for
    at most timeout_sec, after the agent's processes are gone; the reward comes from
    /logs/verifier/reward.json or reward.txt (reward-file) or from pytest's short
    summary in its output (pytest-summary)."""

    command: str
    reward: str
    user: str = "root"
    timeout_sec: float = 600.0
    env: tuple[tuple[str, str], ...] = ()

    def container_metadata(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "reward": self.reward,
            "user": self.user,
            "timeout_sec": self.timeout_sec,
            "env": dict(self.env),
        }


@dataclass(frozen=True)
class Task:
    """A task as its task.yaml describes it, plus where it lives on this machine."""

    id: str
    project: str
    language: str
    description: str
    source_dir: str
    prompt: str
    build: str
    test: str
    hidden_test: str
    packages: tuple[str, ...]
    base_image: str
    dataset: str
    path: Path
    grader: str | None = None
    # Set for a task graded on its final state by a reward (see the module's doc).
    verifier: Verifier | None = None
    # The task's own user for the agent (it must exist in the image; never root).
    agent_user: str | None = None
    # The task's own agent timeout in seconds (task.yaml agent.timeout_sec), used when
    # a run gives no --timeout.
    agent_timeout: int | None = None
    # What the task asks of its container (task.yaml resources: cpus, memory_mb).
    resources: TaskResources = field(default_factory=TaskResources)

    @property
    def reference_patch(self) -> Path:
        """The reference the reference agent is handed: the patch, or the solution
        script of a task graded by a reward."""
        return self.path / (SOLUTION_SCRIPT if self.verifier else REFERENCE_PATCH)

    @property
    def environment_dir(self) -> Path | None:
        """The task's own environment build (environment/Dockerfile), if it has one."""
        folder = self.path / ENVIRONMENT_FOLDER
        return folder if (folder / "Dockerfile").is_file() else None

    def container_metadata(self) -> dict[str, str]:
        """What the in-container runtime reads as /ssebench/task/task.json."""
        return {
            "id": self.id,
            "project": self.project,
            "language": self.language,
            "source_dir": self.source_dir,
            "prompt": self.prompt,
            "build": self.build,
            "test": self.test,
            "hidden_test": self.hidden_test,
            "dataset": self.dataset,
            **({"verifier": self.verifier.container_metadata()} if self.verifier else {}),
            **({"agent_user": self.agent_user} if self.agent_user else {}),
        }

    def summary(self) -> dict[str, Any]:
        """The metadata listed by `ssebench tasks list --json` and the manifest."""
        return {
            "id": self.id,
            "project": self.project,
            "language": self.language,
            "description": self.description,
            "source_dir": self.source_dir,
            "packages": list(self.packages),
            "base_image": self.base_image,
        }


def _text(data: dict[str, Any], key: str, file: Path, *, required: bool = True) -> str:
    value = data.get(key)
    if value is None:
        if required:
            raise TaskError(f"{file}: field '{key}' is missing", path=str(file), field=key)
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise TaskError(
            f"{file}: field '{key}' must be a non-empty string", path=str(file), field=key
        )
    return value


def load_yaml_file(file: Path, kind: str) -> Any:
    """The YAML document in `file` (a `kind`.yaml: task or dataset); TaskError naming the
    file and the fix when it is missing, not a file, not UTF-8 or not YAML."""
    import yaml  # here, not at the top: commands that read no task do not pay for it

    # libyaml's safe loader where PyYAML has it: the same documents and the same safe
    # constructor, a tenth of the time (a run reads every task.yaml of its dataset).
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(file.read_text(encoding="utf-8"), Loader=loader)
    except FileNotFoundError:
        raise TaskError(f"{file}: no such file; a {kind} folder needs a {kind}.yaml") from None
    except UnicodeDecodeError as error:
        raise TaskError(
            f"{file}: not UTF-8 text (byte {error.start}); save it as UTF-8", path=str(file)
        ) from None
    except OSError as error:
        raise TaskError(
            f"{file}: cannot be read ({error.strerror}); a {kind}.yaml must be a file",
            path=str(file),
        ) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise TaskError(f"{file}: not valid YAML{where}", path=str(file)) from None


def load_task(folder: Path, dataset: str = "local") -> Task:
    """Read and check one task folder. Raises TaskError naming the file and field."""
    file = folder / TASK_FILE
    data = load_yaml_file(file, "task")
    if not isinstance(data, dict):
        raise TaskError(f"{file}: must be a mapping of fields", path=str(file))

    task_id = _text(data, "id", file)
    if not TASK_ID_PATTERN.match(task_id):
        raise TaskError(
            f"{file}: field 'id' must be 1-48 of [a-z0-9-], starting with a letter or digit",
            path=str(file),
            field="id",
        )
    if task_id != folder.name:
        raise TaskError(
            f"{file}: field 'id' is {task_id!r} but the folder is {folder.name!r}; make them equal",
            path=str(file),
            field="id",
        )
    language = _text(data, "language", file)
    if language not in LANGUAGES:
        raise TaskError(
            f"{file}: field 'language' must be one of {', '.join(LANGUAGES)}",
            path=str(file),
            field="language",
        )
    source_dir = _text(data, "source_dir", file)
    if not source_dir.startswith("/") or source_dir.rstrip("/") in ("", "/tmp", "/var", "/run"):
        raise TaskError(
            f"{file}: field 'source_dir' must be an absolute path of its own, such as /src/NAME",
            path=str(file),
            field="source_dir",
        )
    packages = data.get("packages", [])
    if not isinstance(packages, list) or not all(
        isinstance(name, str) and PACKAGE_PATTERN.match(name) for name in packages
    ):
        raise TaskError(
            f"{file}: field 'packages' must be a list of Debian package names",
            path=str(file),
            field="packages",
        )
    for needed, kind in ((SOURCE_FOLDER, "folder"), (HIDDEN_FOLDER, "folder")):
        if not (folder / needed).is_dir():
            raise TaskError(f"{folder}: the {kind} {needed}/ is missing", path=str(folder))
    verifier = _verifier(data, file)
    reference = SOLUTION_SCRIPT if verifier else REFERENCE_PATCH
    if not (folder / reference).is_file():
        raise TaskError(f"{folder}: the file {reference} is missing", path=str(folder))
    grader = _text(data, "grader", file, required=False) or None
    if grader is not None and grader not in grader_names():
        raise TaskError(
            f"{file}: field 'grader' must be one of {', '.join(grader_names())} (or left "
            f"out): the graders installed (entry points of group {GRADERS_GROUP})",
            path=str(file),
            field="grader",
        )

    return Task(
        id=task_id,
        project=_text(data, "project", file),
        language=language,
        description=_text(data, "description", file, required=False).strip(),
        source_dir=source_dir.rstrip("/"),
        prompt=_text(data, "prompt", file),
        build=_text(data, "build", file),
        test=_text(data, "test", file),
        hidden_test=_text(data, "hidden_test", file),
        packages=tuple(packages),
        base_image=_text(data, "base_image", file, required=False) or DEFAULT_BASE_IMAGE,
        dataset=dataset,
        path=folder,
        grader=grader,
        verifier=verifier,
        agent_user=_agent_user(data, file),
        agent_timeout=_agent_timeout(data, file),
        resources=_resources(data, file),
    )


def _resources(data: dict[str, Any], file: Path) -> TaskResources:
    table = data.get("resources")
    if table is None:
        return TaskResources()

    def problem(what: str) -> TaskError:
        return TaskError(f"{file}: field 'resources' {what}", path=str(file), field="resources")

    if not isinstance(table, dict) or not set(table) <= {"cpus", "memory_mb"}:
        raise problem("must be a mapping of cpus and memory_mb")
    cpus, memory = table.get("cpus"), table.get("memory_mb")
    if cpus is not None and (
        isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or not 0 < cpus < 1024
    ):
        raise problem("cpus must be a number of CPUs above 0, such as 2 or 0.5")
    if memory is not None and (
        isinstance(memory, bool) or not isinstance(memory, int) or memory < 6
    ):
        raise problem("memory_mb must be a whole number of MiB, at least 6")
    return TaskResources(cpus=None if cpus is None else float(cpus), memory_mb=memory)


def _verifier(data: dict[str, Any], file: Path) -> Verifier | None:
    table = data.get("verifier")
    if table is None:
        return None

    def problem(what: str) -> TaskError:
        return TaskError(f"{file}: field 'verifier' {what}", path=str(file), field="verifier")

    if not isinstance(table, dict):
        raise problem("must be a mapping (command, reward, user, timeout_sec, env)")
    command, reward, user = table.get("command"), table.get("reward"), table.get("user", "root")
    timeout, env = table.get("timeout_sec", 600.0), table.get("env", {})
    if not isinstance(command, str) or not command.strip():
        raise problem("needs command, the shell command that runs the tests")
    if reward not in REWARD_SOURCES:
        raise problem(f"needs reward: one of {', '.join(REWARD_SOURCES)}")
    if not isinstance(user, str) or not USER_PATTERN.match(user):
        raise problem("user must be a user name of the image")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise problem("timeout_sec must be a number of seconds above 0")
    if not isinstance(env, dict) or not all(
        isinstance(name, str) and isinstance(value, str) for name, value in env.items()
    ):
        raise problem("env must map names to texts")
    return Verifier(
        command=command,
        reward=reward,
        user=user,
        timeout_sec=float(timeout),
        env=tuple(sorted(env.items())),
    )


def _agent_timeout(data: dict[str, Any], file: Path) -> int | None:
    table = data.get("agent") or {}
    seconds = table.get("timeout_sec") if isinstance(table, dict) else None
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
        raise TaskError(
            f"{file}: field 'agent' timeout_sec must be a number of seconds above 0",
            path=str(file),
            field="agent",
        )
    return math.ceil(seconds)


def _agent_user(data: dict[str, Any], file: Path) -> str | None:
    table = data.get("agent") or {}
    user = table.get("user") if isinstance(table, dict) else None
    if user is None:
        return None
    if not isinstance(user, str) or not USER_PATTERN.match(user) or user == "root":
        raise TaskError(
            f"{file}: field 'agent' user must be a user name of the image other than root "
            "(an agent never runs as root)",
            path=str(file),
            field="agent",
        )
    return user
