"""Reading Harbor and Terminal-Bench 1.x task folders (issue 48, first slice: the reader
that `ssebench dataset import harbor` builds on).

Harbor: `task.toml` (`schema_version` 1.1 to 1.4, or the older `version = "1.0"` without
a `[task]` table), `instruction.md`, `environment/` (a Dockerfile), `solution/solve.sh`,
`tests/test.sh`; the reward is what the tests write to `/logs/verifier/reward.json` or
`reward.txt`. Terminal-Bench 1.x: `task.yaml`, a root `Dockerfile`, `run-tests.sh` with
`tests/`, `solution.sh`; the reward is pytest's short summary.

A task that cannot be read is one HarborTaskError naming the file and the key; the keys
ssebench does not use are listed (`unused`), so the import can name them in one line.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from ssebench.errors import UserError

Layout = Literal["harbor", "terminal-bench-1"]
RewardSource = Literal["reward-file", "pytest-summary"]
VerifierMode = Literal["shared", "separate"]

TASK_TOML = "task.toml"
TASK_YAML = "task.yaml"
INSTRUCTION = "instruction.md"
# The keys of task.toml ssebench reads, by table ("" for the top level).
USED_TOML = {
    "": {"schema_version", "version", "artifacts"},
    "task": {"name", "description"},
    "agent": {"timeout_sec", "user"},
    "verifier": {"timeout_sec", "user", "env", "environment_mode", "environment"},
    "verifier.environment": {"network_mode", "cpus", "memory_mb", "build_timeout_sec"},
    "environment": {
        "docker_image",
        "cpus",
        "memory_mb",
        "storage_mb",
        "network_mode",
        "workdir",
        "build_timeout_sec",
        "env",
    },
}
USED_YAML = {"instruction", "max_agent_timeout_sec", "max_test_timeout_sec", "parser_name"}


class HarborTaskError(UserError):
    """A task folder that cannot be read; the message names the file and the key."""


@dataclass(frozen=True)
class Environment:
    """What the agent's container is made from and may use."""

    dockerfile: Path | None  # environment/Dockerfile (Harbor) or the root one (TB 1.x)
    docker_image: str | None  # a prebuilt image instead of (or besides) the Dockerfile
    cpus: float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    network_mode: str | None = None  # e.g. "no-network"
    workdir: str | None = None
    build_timeout_sec: float | None = None
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HarborTask:
    """One task folder, read."""

    name: str
    path: Path
    layout: Layout
    schema: str  # schema_version, "1.0" for the old `version`, "tb1" for Terminal-Bench
    instruction: str
    environment: Environment
    tests: Path  # the folder copied to /tests for the verifier
    test_script: Path  # tests/test.sh (Harbor) or run-tests.sh (TB 1.x)
    solution: Path | None  # solution/solve.sh or solution.sh: the reference agent's work
    reward: RewardSource
    agent_timeout_sec: float | None = None
    agent_user: str | None = None
    verifier_timeout_sec: float | None = None
    verifier_user: str | None = None
    verifier_env: Mapping[str, str] = field(default_factory=dict)
    verifier_mode: VerifierMode = "shared"
    verifier_environment: Environment | None = None  # separate mode: tests/Dockerfile
    artifacts: tuple[str, ...] = ()
    unused: tuple[str, ...] = ()  # keys present that ssebench does not use (dotted)


def read_task(folder: Path) -> HarborTask:
    """The task in folder, either layout. HarborTaskError when it cannot be read."""
    if (folder / TASK_TOML).is_file():
        return _harbor_task(folder)
    if (folder / TASK_YAML).is_file():
        return _terminal_bench_task(folder)
    raise HarborTaskError(
        f"{folder}: neither {TASK_TOML} (Harbor) nor {TASK_YAML} (Terminal-Bench 1.x) is there"
    )


def read_tasks(folders: Iterable[Path]) -> tuple[list[HarborTask], list[str]]:
    """The tasks of folders (each a task, or a folder of tasks), and one line for each
    that cannot be read: the others are still read."""
    tasks, problems = [], []
    for folder in folders:
        candidates = (
            [folder]
            if (folder / TASK_TOML).is_file() or (folder / TASK_YAML).is_file()
            else sorted(path for path in folder.iterdir() if path.is_dir())
            if folder.is_dir()
            else [folder]
        )
        for candidate in candidates:
            try:
                tasks.append(read_task(candidate))
            except HarborTaskError as error:
                problems.append(str(error))
    return tasks, problems


# -- Harbor --------------------------------------------------------------------------------


def _harbor_task(folder: Path) -> HarborTask:
    file = folder / TASK_TOML
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise HarborTaskError(f"{file}: cannot be read ({error})") from None
    except tomllib.TOMLDecodeError as error:
        raise HarborTaskError(f"{file}: not TOML ({error})") from None
    schema = _string(data, "schema_version", file) or _string(data, "version", file)
    if schema is None:
        raise HarborTaskError(f"{file}: no schema_version (or the older version) at the top")
    task = _table(data, "task", file)
    agent = _table(data, "agent", file)
    verifier = _table(data, "verifier", file)
    environment = _table(data, "environment", file)
    mode = _string(verifier, "environment_mode", file, "verifier") or "shared"
    if mode not in ("shared", "separate"):
        raise HarborTaskError(
            f"{file}: [verifier] environment_mode must be shared or separate, not {mode!r}"
        )
    tests = folder / "tests"
    separate = None
    if mode == "separate":
        separate = _environment(
            _table(verifier, "environment", file, "verifier"),
            file,
            "verifier.environment",
            dockerfile=_existing(tests / "Dockerfile"),
        )
        if separate.dockerfile is None:
            raise HarborTaskError(
                f"{file}: [verifier] environment_mode = separate needs tests/Dockerfile"
            )
    instruction = _read_text(folder / INSTRUCTION)
    env = _environment(
        environment,
        file,
        "environment",
        dockerfile=_existing(folder / "environment" / "Dockerfile"),
    )
    if env.dockerfile is None and env.docker_image is None:
        raise HarborTaskError(
            f"{file}: the task has neither environment/Dockerfile nor [environment] docker_image"
        )
    test_script = tests / "test.sh"
    if not test_script.is_file():
        raise HarborTaskError(f"{folder}: tests/test.sh is missing")
    artifacts = data.get("artifacts", [])
    if not isinstance(artifacts, list) or not all(isinstance(item, str) for item in artifacts):
        raise HarborTaskError(f"{file}: artifacts must be a list of paths")
    return HarborTask(
        name=_string(task, "name", file, "task") or folder.name,
        path=folder,
        layout="harbor",
        schema=schema,
        instruction=instruction,
        environment=env,
        tests=tests,
        test_script=test_script,
        solution=_existing(folder / "solution" / "solve.sh"),
        reward="reward-file",
        agent_timeout_sec=_number(agent, "timeout_sec", file, "agent"),
        agent_user=_string(agent, "user", file, "agent"),
        verifier_timeout_sec=_number(verifier, "timeout_sec", file, "verifier"),
        verifier_user=_string(verifier, "user", file, "verifier"),
        verifier_env=_env(verifier, file, "verifier"),
        verifier_mode="separate" if mode == "separate" else "shared",
        verifier_environment=separate,
        artifacts=tuple(artifacts),
        unused=tuple(_unused(data)),
    )


def _environment(
    table: Mapping[str, Any], file: Path, where: str, *, dockerfile: Path | None
) -> Environment:
    memory = _number(table, "memory_mb", file, where)
    storage = _number(table, "storage_mb", file, where)
    return Environment(
        dockerfile=dockerfile,
        docker_image=_string(table, "docker_image", file, where),
        cpus=_number(table, "cpus", file, where),
        memory_mb=None if memory is None else int(memory),
        storage_mb=None if storage is None else int(storage),
        network_mode=_string(table, "network_mode", file, where),
        workdir=_string(table, "workdir", file, where),
        build_timeout_sec=_number(table, "build_timeout_sec", file, where),
        env=_env(table, file, where),
    )


def _unused(data: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The dotted keys of data that ssebench does not read (a table it does not read is
    one key; an empty table none)."""
    found = []
    used = USED_TOML.get(prefix, set())
    for key, value in data.items():
        dotted = f"{prefix}.{key}" if prefix else key
        if dotted in USED_TOML and isinstance(value, dict):
            found.extend(_unused(value, dotted))
        elif key not in used and not _empty(value):
            found.append(dotted)
    return found


def _empty(value: Any) -> bool:
    """Nothing set: an empty or zero value, or a table of such (`[solution.env]`,
    `gpus = 0`), which needs no word at import."""
    if isinstance(value, dict):
        return all(_empty(item) for item in value.values())
    return not value


# -- Terminal-Bench 1.x ------------------------------------------------------------------


def _terminal_bench_task(folder: Path) -> HarborTask:
    file = folder / TASK_YAML
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise HarborTaskError(f"{file}: cannot be read ({error})") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise HarborTaskError(f"{file}: not YAML{where}") from None
    if not isinstance(data, dict):
        raise HarborTaskError(f"{file}: must be a mapping of keys")
    instruction = data.get("instruction")
    if not isinstance(instruction, str) or not instruction.strip():
        raise HarborTaskError(f"{file}: instruction must be a non-empty text")
    parser = data.get("parser_name", "pytest")
    if parser != "pytest":
        raise HarborTaskError(
            f"{file}: parser_name {parser!r} is not supported (only pytest's summary is read)"
        )
    dockerfile = _existing(folder / "Dockerfile")
    if dockerfile is None:
        raise HarborTaskError(f"{folder}: the Dockerfile is missing")
    run_tests = folder / "run-tests.sh"
    if not run_tests.is_file():
        raise HarborTaskError(f"{folder}: run-tests.sh is missing")
    return HarborTask(
        name=folder.name,
        path=folder,
        layout="terminal-bench-1",
        schema="tb1",
        instruction=instruction,
        environment=Environment(dockerfile=dockerfile, docker_image=None),
        tests=folder / "tests",
        test_script=run_tests,
        solution=_existing(folder / "solution.sh"),
        reward="pytest-summary",
        agent_timeout_sec=_number(data, "max_agent_timeout_sec", file),
        verifier_timeout_sec=_number(data, "max_test_timeout_sec", file),
        unused=tuple(sorted(key for key in data if key not in USED_YAML)),
    )


# -- values ------------------------------------------------------------------------------


def _existing(path: Path) -> Path | None:
    return path if path.is_file() else None


def _read_text(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HarborTaskError(f"{path}: missing (the task's instruction)") from None
    except (OSError, UnicodeDecodeError) as error:
        raise HarborTaskError(f"{path}: cannot be read ({error})") from None
    if not text.strip():
        raise HarborTaskError(f"{path}: empty (the task's instruction)")
    return text


def _label(key: str, table: str) -> str:
    return f"[{table}] {key}" if table else key


def _table(data: Mapping[str, Any], key: str, file: Path, parent: str = "") -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        name = f"{parent}.{key}" if parent else key
        raise HarborTaskError(f"{file}: [{name}] must be a table")
    return value


def _string(data: Mapping[str, Any], key: str, file: Path, table: str = "") -> str | None:
    value = data.get(key)
    if value is None or (isinstance(value, str) and not value):
        return None
    if not isinstance(value, str):
        raise HarborTaskError(f"{file}: {_label(key, table)} must be a text, not {value!r}")
    return value


def _number(data: Mapping[str, Any], key: str, file: Path, table: str = "") -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise HarborTaskError(
            f"{file}: {_label(key, table)} must be a number of 0 or more, not {value!r}"
        )
    return float(value)


def _env(data: Mapping[str, Any], file: Path, table: str) -> dict[str, str]:
    value = data.get("env", {})
    if not isinstance(value, dict) or not all(
        isinstance(name, str) and isinstance(item, (str, int, float))
        for name, item in value.items()
    ):
        raise HarborTaskError(f"{file}: [{table}.env] must map names to texts")
    return {name: str(item) for name, item in value.items()}
