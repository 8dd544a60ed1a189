"""Reading Harbor and Terminal-Bench 1.x task folders (harbor/tasks.py): the seven real
tasks of ../shared/datasets/harbor-real, unchanged, every task.toml variant among them;
and each malformed task one line naming its file and key, the others still read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ssebench.harbor.tasks import HarborTaskError, read_task, read_tasks

HARBOR_REAL = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "harbor-real"


def test_the_seven_real_tasks_are_read_unchanged() -> None:
    tasks, problems = read_tasks([HARBOR_REAL])
    assert problems == []
    by_folder = {task.path.name: task for task in tasks}
    assert sorted(by_folder) == [
        "cookbook-multi-reward",
        "cookbook-simple-task",
        "harbor-hello-alpine",
        "harbor-hello-user",
        "harbor-hello-world",
        "harbor-separate-verifier-environment",
        "tb1-evoeval-0",
    ]
    schemas = {name: task.schema for name, task in by_folder.items()}
    assert schemas == {
        "cookbook-multi-reward": "1.0",
        "cookbook-simple-task": "1.0",
        "harbor-hello-alpine": "1.1",
        "harbor-hello-user": "1.1",
        "harbor-hello-world": "1.4",
        "harbor-separate-verifier-environment": "1.3",
        "tb1-evoeval-0": "tb1",
    }
    world = by_folder["harbor-hello-world"]
    assert world.name == "harbor/hello-world" and world.layout == "harbor"
    assert world.instruction == (HARBOR_REAL / "harbor-hello-world/instruction.md").read_text()
    assert world.environment.dockerfile == HARBOR_REAL / "harbor-hello-world/environment/Dockerfile"
    assert (world.agent_timeout_sec, world.verifier_timeout_sec) == (120.0, 120.0)
    assert (world.environment.cpus, world.environment.memory_mb) == (1.0, 2048)
    assert world.test_script.name == "test.sh" and world.reward == "reward-file"
    assert world.solution == HARBOR_REAL / "harbor-hello-world/solution/solve.sh"
    assert world.unused == ("task.version", "metadata")
    # The old task.toml: no [task] table, the folder names it.
    assert by_folder["cookbook-simple-task"].name == "cookbook-simple-task"
    assert by_folder["harbor-hello-user"].agent_user == "agent"
    separate = by_folder["harbor-separate-verifier-environment"]
    assert separate.verifier_mode == "separate"
    assert separate.verifier_environment is not None
    assert separate.verifier_environment.dockerfile == separate.tests / "Dockerfile"
    assert separate.verifier_environment.network_mode == "no-network"
    assert separate.environment.docker_image == "ubuntu:24.04"
    assert separate.artifacts == ("/tmp/configured-artifact.txt",)
    tb1 = by_folder["tb1-evoeval-0"]
    assert tb1.layout == "terminal-bench-1" and tb1.reward == "pytest-summary"
    assert tb1.test_script.name == "run-tests.sh" and tb1.solution is not None
    assert (tb1.agent_timeout_sec, tb1.verifier_timeout_sec) == (600.0, 120.0)
    assert tb1.instruction.startswith("Solve this python programming problem")
    assert "tags" in tb1.unused


def copy(name: str, into: Path) -> Path:
    folder = into / name
    shutil.copytree(HARBOR_REAL / name, folder)
    return folder


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda folder: (folder / "task.toml").write_text("[agent\ntimeout_sec = 1\n"),
            "task.toml: not TOML",
        ),
        (
            lambda folder: (folder / "task.toml").write_text(
                (folder / "task.toml")
                .read_text()
                .replace("[agent]\ntimeout_sec = 120.0", '[agent]\ntimeout_sec = "soon"')
            ),
            "task.toml: [agent] timeout_sec must be a number of 0 or more, not 'soon'",
        ),
        (
            lambda folder: (folder / "instruction.md").unlink(),
            "instruction.md: missing (the task's instruction)",
        ),
        (
            lambda folder: (folder / "tests" / "test.sh").unlink(),
            "tests/test.sh is missing",
        ),
        (
            lambda folder: (folder / "task.toml").write_text(
                (folder / "task.toml").read_text().replace('schema_version = "1.4"', "")
            ),
            "task.toml: no schema_version (or the older version) at the top",
        ),
    ],
    ids=["not-toml", "bad-timeout", "no-instruction", "no-test-script", "no-schema"],
)
def test_a_malformed_task_is_one_line_and_the_others_are_read(
    tmp_path: Path, change: object, message: str
) -> None:
    broken = copy("harbor-hello-world", tmp_path)
    copy("harbor-hello-user", tmp_path)
    change(broken)  # type: ignore[operator]
    tasks, problems = read_tasks([tmp_path])
    assert [task.path.name for task in tasks] == ["harbor-hello-user"]
    assert len(problems) == 1 and message in problems[0], problems
    assert str(broken) in problems[0]
    with pytest.raises(HarborTaskError):
        read_task(broken)


def test_a_terminal_bench_task_with_another_parser_is_refused(tmp_path: Path) -> None:
    folder = copy("tb1-evoeval-0", tmp_path)
    text = (folder / "task.yaml").read_text().replace("parser_name: pytest", "parser_name: x")
    (folder / "task.yaml").write_text(text)
    with pytest.raises(HarborTaskError, match="parser_name 'x' is not supported"):
        read_task(folder)


def test_a_folder_that_is_no_task_says_what_it_lacks(tmp_path: Path) -> None:
    with pytest.raises(HarborTaskError, match=r"neither task\.toml .* nor task\.yaml"):
        read_task(tmp_path)
