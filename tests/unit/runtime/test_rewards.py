"""Grading by a reward (runtime/rewards.py): the entrypoint runs a task with a verifier
end to end as the current user, with /tests and /logs in temporary directories. What
needs real accounts (the agent's processes swept, the verifier as root) is tested in
tests/docker/test_harbor_tasks.py."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

from ssebench.runtime.accounts import Accounts
from ssebench.runtime.config import Task
from ssebench.runtime.rewards import (
    NO_REWARD,
    REWARD_MAX_BYTES,
    RewardUnreadable,
    parse_reward_json,
    parse_reward_txt,
    pytest_summary_reward,
    read_reward_file,
)

from .conftest import Project, make_project
from .test_entrypoint import agent, run_entrypoint

# The task's tests: hello.txt must say hello; the reward goes where HOW says.
TEST_SH = """#!/bin/sh
logs="$SSE_TEST_LOGS/verifier"
echo "tests at $(dirname "$0"), user $(id -un)"
if grep -q hello hello.txt 2>/dev/null; then ok=1; else ok=0; fi
case "$HOW" in
  txt) echo "$ok" > "$logs/reward.txt" ;;
  json) printf '{"correctness": %s, "performance": 0}' "$ok" > "$logs/reward.json" ;;
  none) ;;
  link) echo 1 > /tmp/elsewhere.$$; ln -s /tmp/elsewhere.$$ "$logs/reward.txt" ;;
  fifo) mkfifo "$logs/reward.txt" ;;
  huge) truncate -s 2G "$logs/reward.txt" ;;
  sleep) sleep 30 ;;
esac
"""


def reward_project(tmp_path: Path, short_dir: Path, how: str, timeout: float = 30.0) -> Project:
    project = make_project(tmp_path, short_dir, {})
    layout = dataclasses.replace(
        project.layout, logs_root=tmp_path / "logs", tests_dir=tmp_path / "tests"
    )
    (layout.hidden_dir / "test.sh").write_text(TEST_SH)
    task: dict[str, Any] = json.loads(layout.task_file.read_text())
    task["verifier"] = {
        "command": f"sh {layout.tests_dir}/test.sh",
        "reward": "reward-file",
        "user": "root",
        "timeout_sec": timeout,
        "env": {"HOW": how, "SSE_TEST_LOGS": str(layout.logs_root)},
    }
    layout.task_file.write_text(json.dumps(task))
    return dataclasses.replace(project, layout=layout, task=Task.load(layout.task_file))


def say_hello() -> list[str]:
    return ["/bin/sh", "-c", "echo hello > hello.txt"]


def test_the_reward_decides_and_is_recorded(
    tmp_path: Path, short_dir: Path, accounts: Accounts
) -> None:
    project = reward_project(tmp_path, short_dir, "txt")
    code, stdout = run_entrypoint(project, accounts, say_hello())
    assert code == 0
    result = project.result()
    assert (result["status"], result["error_msg"], result["reward"]) == (
        "passed",
        None,
        {"reward": 1.0},
    )
    assert [step["name"] for step in result["steps"]] == ["verifier"]
    # The workdir's diff is kept as a record; the tests ran from /tests.
    assert b"+hello" in (project.layout.results / "final.patch").read_bytes()
    assert (
        f"tests at {project.layout.tests_dir}".encode()
        in (project.layout.results / "evaluator.log").read_bytes()
    )
    assert b"grading: reward: reward 1" in stdout


def test_a_reward_of_0_fails(tmp_path: Path, short_dir: Path, accounts: Accounts) -> None:
    project = reward_project(tmp_path, short_dir, "txt")
    run_entrypoint(project, accounts, agent("dummy"))
    result = project.result()
    assert (result["status"], result["error_msg"], result["reward"]) == (
        "failed",
        "Reward 0",
        {"reward": 0.0},
    )


def test_every_key_of_a_reward_map_is_kept(
    tmp_path: Path, short_dir: Path, accounts: Accounts
) -> None:
    project = reward_project(tmp_path, short_dir, "json")
    run_entrypoint(project, accounts, say_hello())
    result = project.result()
    assert result["reward"] == {"correctness": 1.0, "performance": 0.0}
    assert (result["status"], result["error_msg"]) == (
        "failed",
        "Reward correctness=1, performance=0",
    )


def test_no_reward_is_an_error_not_a_0(tmp_path: Path, short_dir: Path, accounts: Accounts) -> None:
    project = reward_project(tmp_path, short_dir, "none")
    run_entrypoint(project, accounts, say_hello())
    result = project.result()
    assert (result["status"], result["error_msg"]) == ("error", NO_REWARD)
    assert "reward" not in result


def test_a_reward_the_agent_wrote_and_tests_it_planted_are_gone(
    tmp_path: Path, short_dir: Path, accounts: Accounts
) -> None:
    project = reward_project(tmp_path, short_dir, "none")
    logs, tests = project.layout.logs_root, project.layout.tests_dir
    # Here the agent can write where the verifier's files go (one user plays both);
    # in the container it cannot, and grading makes both anew all the same.
    forge = (
        f"mkdir -p {logs}/verifier {tests} && echo 1 > {logs}/verifier/reward.txt && "
        f"echo '{{\"reward\": 1}}' > {logs}/verifier/reward.json && "
        f"printf 'echo 1 > {logs}/verifier/reward.txt' > {tests}/forged.sh"
    )
    run_entrypoint(project, accounts, ["/bin/sh", "-c", forge])
    result = project.result()
    assert (result["status"], result["error_msg"]) == ("error", NO_REWARD)
    assert not (tests / "forged.sh").exists()
    assert (tests / "test.sh").read_text() == TEST_SH


@pytest.mark.parametrize(
    ("how", "reason"),
    [
        ("link", "reward.txt cannot be opened as a file"),
        ("fifo", "reward.txt is not a regular file"),
        ("huge", f"reward.txt is over {REWARD_MAX_BYTES} bytes"),
    ],
)
def test_a_reward_file_that_is_no_plain_small_file_is_not_read(
    tmp_path: Path, short_dir: Path, accounts: Accounts, how: str, reason: str
) -> None:
    project = reward_project(tmp_path, short_dir, how)
    run_entrypoint(project, accounts, say_hello())
    result = project.result()
    assert result["status"] == "error"
    assert result["error_msg"].startswith(reason)


def test_a_verifier_past_its_timeout_is_an_error(
    tmp_path: Path, short_dir: Path, accounts: Accounts
) -> None:
    project = reward_project(tmp_path, short_dir, "sleep", timeout=1.0)
    run_entrypoint(project, accounts, say_hello())
    result = project.result()
    assert (result["status"], result["error_msg"]) == ("error", "Verifier timed out after 1s")
    assert result["steps"][0]["timed_out"] is True


def test_reward_files_parse_strictly(tmp_path: Path) -> None:
    assert parse_reward_txt(b" 0.5\n") == {"reward": 0.5}
    assert parse_reward_json(b'{"a": 1, "b": 0.25}') == {"a": 1.0, "b": 0.25}
    for bad, parse in [
        (b"", parse_reward_txt),
        (b"yes", parse_reward_txt),
        (b"nan", parse_reward_txt),
        (b"[1]", parse_reward_json),
        (b"{}", parse_reward_json),
        (b'{"a": true}', parse_reward_json),
        (b'{"a": "1"}', parse_reward_json),
    ]:
        with pytest.raises(RewardUnreadable):
            parse(bad)
    assert read_reward_file(tmp_path / "absent") is None
    os.mkdir(tmp_path / "dir")
    with pytest.raises(RewardUnreadable, match="not a regular file"):
        read_reward_file(tmp_path / "dir")


def test_pytest_summary_gives_1_only_when_every_listed_test_passed() -> None:
    passed = (
        b"..\n=== short test summary info ===\nPASSED t.py::a\nPASSED t.py::b\n=== 2 passed ==="
    )
    failed = passed.replace(b"PASSED t.py::b", b"FAILED t.py::b - assert")
    assert pytest_summary_reward(passed) == {"reward": 1.0}
    assert pytest_summary_reward(failed) == {"reward": 0.0}
    with pytest.raises(RewardUnreadable, match="no pytest short summary"):
        pytest_summary_reward(b"PASSED t.py::a\n")
    with pytest.raises(RewardUnreadable, match="lists no test"):
        pytest_summary_reward(b"=== short test summary info ===\n=== no tests ran ===\n")
