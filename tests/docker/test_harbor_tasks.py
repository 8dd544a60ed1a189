"""Real Harbor and Terminal-Bench tasks (tests/docker/harbor_dataset.py) run on Docker:
the reference solves each, the dummy does not, and a hostile agent gets no reward it
did not earn."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli import run_arguments, ssebench
from tests.docker.conftest import SESSION_PREFIX, new_run_id
from tests.docker.harbor_dataset import CHECKED, FORGER

pytestmark = pytest.mark.docker


def result_of(run_dir: str | Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path(run_dir) / "result.json").read_text())
    return data


def test_the_reference_solves_each_task_and_the_dummy_none(
    harbor_dataset: Path, tmp_path: Path
) -> None:
    report_path = tmp_path / "check.json"
    checked = ssebench(
        "dataset", "check", str(harbor_dataset), "--tasks", *CHECKED, "--jobs", "2",
        "--results", str(tmp_path / "results"), "--report", str(report_path),
        "--run-id-prefix", f"{SESSION_PREFIX}-harbor", timeout=1500,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
    report = json.loads(report_path.read_text())
    verdicts = {item["task"]: item for item in report["tasks"]}
    assert sorted(verdicts) == sorted(CHECKED)
    for task, verdict in verdicts.items():
        assert verdict["sound"], (task, verdict["problems"])
        reference = result_of(verdict["runs"]["reference"]["run_dir"])
        dummy = result_of(verdict["runs"]["dummy"]["run_dir"])
        assert reference["status"] == "passed" and dummy["status"] == "failed", task
        assert [step["name"] for step in reference["steps"]] == ["verifier"]
    multi = verdicts["cookbook-multi-reward"]["runs"]
    assert result_of(multi["reference"]["run_dir"])["reward"] == {
        "correctness": 1.0,
        "performance": 1.0,
    }
    assert result_of(multi["dummy"]["run_dir"])["reward"] == {
        "correctness": 0.0,
        "performance": 0.0,
    }
    # hello-user's agent ran as the task's own user, which its tests check.
    user_run = Path(verdicts["hello-user"]["runs"]["reference"]["run_dir"])
    assert "+agent" in (user_run / "final.patch").read_text()
    assert "starting the agent as agent:" in (user_run / "entrypoint.log").read_text()


def test_a_hostile_agent_gets_no_reward_it_did_not_earn(
    harbor_dataset: Path, tmp_path: Path
) -> None:
    run_id = new_run_id("harbor-forger")
    arguments = run_arguments(
        harbor_dataset, "hello-world", "reward-forger", run_id, tmp_path / "results"
    )
    done = ssebench(*arguments, "--agents-dir", str(FORGER), timeout=900)
    (run_dir,) = (tmp_path / "results").glob(f"*/*/*/{run_id}")
    result = result_of(run_dir)
    assert (result["status"], result["error_msg"], result["reward"]) == (
        "failed",
        "Reward 0",
        {"reward": 0.0},
    ), done.stdout[-3000:]
    said = (run_dir / "agent.log").read_text()
    for line in [
        "cannot write /logs/verifier/reward.txt",
        "cannot write /logs/verifier/reward.json",
        "cannot link /logs/verifier/reward.txt",
        "cannot read /tests",
        "cannot read /solution",
        "cannot read /ssebench/task",
        "left a process waiting for /tests",
    ]:
        assert f"reward-forger: {line}" in said, said
    # hello-world's [environment] cpus = 1 and memory_mb = 2048 are its container's
    # limits (a CPU is 100000 of cgroup's 100000-microsecond period).
    assert f"reward-forger: limits: cpu 100000 memory {2048 * 2**20}" in said, said
    entrypoint = (run_dir / "entrypoint.log").read_text()
    assert "container limits: 1 CPU, 2048 MiB of memory" in entrypoint
    # The process it left, which would have solved the task during grading (the reward
    # is 1 when it is not swept), was gone before the tests were copied.
    assert re.search(r"killed \d+ leftover process", entrypoint)
