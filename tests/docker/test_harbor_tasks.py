"""Real Harbor and Terminal-Bench tasks (../shared/datasets/harbor-real, unchanged)
imported and run on Docker: the reference solves each, the dummy does not, and a
hostile agent gets no reward it did not earn.

Their base images cannot be pulled here; the import maps them to a local stand-in
(tests/fixtures/harbor-stand-in) that holds uv and the packages their tests fetch."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ssebench.images.layers import add_build_ca
from tests.cli import run_arguments, ssebench
from tests.docker.conftest import SESSION_PREFIX, new_run_id

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT.parent / "shared" / "datasets" / "harbor-real"
STAND_IN = "ssebench-test/harbor-stand-in:1"
STAND_IN_FOLDER = ROOT / "tests" / "fixtures" / "harbor-stand-in"
FORGER = ROOT / "tests" / "fixtures" / "agents" / "reward-forger"
# The base images of the real tasks, each built as the stand-in.
IMAGE_MAP = (
    "ubuntu:24.04",
    "alpine:3.22",
    "ghcr.io/laude-institute/t-bench/python-3-13:20250620",
)
CHECKED = [
    "hello-world",
    "hello-user",
    "hello-alpine",
    "cookbook-simple-task",
    "cookbook-multi-reward",
    "tb1-evoeval-0",
]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("harbor")
    context = work / "stand-in"
    shutil.copytree(STAND_IN_FOLDER, context)
    add_build_ca(context)
    built = subprocess.run(
        ["docker", "build", "-q", "--label", "ssebench.test=harbor-stand-in", "-t", STAND_IN,
         str(context)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    maps = [argument for image in IMAGE_MAP for argument in ("--image-map", f"{image}={STAND_IN}")]
    out = work / "dataset"
    imported = ssebench("dataset", "import", "harbor", str(REAL), "--out", str(out), *maps)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    return out


def result_of(run_dir: str | Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path(run_dir) / "result.json").read_text())
    return data


def test_the_reference_solves_each_task_and_the_dummy_none(dataset: Path, tmp_path: Path) -> None:
    report_path = tmp_path / "check.json"
    checked = ssebench(
        "dataset", "check", str(dataset), "--tasks", *CHECKED, "--jobs", "2",
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


def test_a_hostile_agent_gets_no_reward_it_did_not_earn(dataset: Path, tmp_path: Path) -> None:
    run_id = new_run_id("harbor-forger")
    done = ssebench(
        *run_arguments(dataset, "hello-world", "reward-forger", run_id, tmp_path / "results"),
        "--agents-dir", str(FORGER), timeout=900,
    )  # fmt: skip
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
    # The process it left, which would have solved the task during grading (the reward
    # is 1 when it is not swept), was gone before the tests were copied.
    assert re.search(r"killed \d+ leftover process", (run_dir / "entrypoint.log").read_text())
