"""Rewards of tasks graded by one (docs/harbor.md) in an evaluation's report: taken
from each run's grade only as a map of finite numbers, kept per attempt, averaged per
task and key, and shown as a column only when there are any."""

from __future__ import annotations

from typing import Any

import pytest

from ssebench.evaluation.recorded import REWARD_KEYS, reward_of
from ssebench.reports.summary import summarize_entries
from ssebench.reports.tables import results_table


def run(task: str, attempt: int, status: str, reward: dict[str, float] | None) -> dict[str, Any]:
    found = {"task": task, "agent": "a", "model": "m", "attempt": attempt, "status": status}
    return found | ({"reward": reward} if reward is not None else {})


def test_rewards_are_averaged_per_task_then_over_tasks() -> None:
    runs = [
        run("t1", 1, "passed", {"correctness": 1.0, "performance": 1.0}),
        run("t1", 2, "failed", {"correctness": 1.0, "performance": 0.0}),
        run("t2", 1, "failed", {"correctness": 0.0, "performance": 0.0}),
        run("t2", 2, "failed", {"correctness": 0.0, "performance": 0.0}),
    ]
    (entry,) = summarize_entries(runs, [("a", "m")], attempts=2)
    means = entry["mean_reward_per_task"]
    assert means["correctness"]["value"] == pytest.approx(0.5)  # t1 1.0, t2 0.0
    assert means["performance"]["value"] == pytest.approx(0.25)  # t1 0.5, t2 0.0
    first = entry["tasks"][0]["attempts"][1]
    assert first["reward"] == {"correctness": 1.0, "performance": 0.0}
    table = results_table({"attempts": 2, "entries": [entry]})
    assert table.headers[-1] == "Reward / task"
    assert table.rows[0][-1] == "correctness 0.50, performance 0.25"


def test_without_rewards_there_is_no_reward_column() -> None:
    (entry,) = summarize_entries([run("t1", 1, "passed", None)], [("a", "m")], attempts=1)
    assert "mean_reward_per_task" not in entry
    table = results_table({"attempts": 1, "entries": [entry]})
    assert "Reward / task" not in table.headers


def test_a_single_reward_shows_as_its_number() -> None:
    runs = [run("t1", 1, "passed", {"reward": 1.0}), run("t2", 1, "failed", {"reward": 0.0})]
    (entry,) = summarize_entries(runs, [("a", "m")], attempts=1)
    assert results_table({"attempts": 1, "entries": [entry]}).rows[0][-1] == "0.50"


@pytest.mark.parametrize(
    "reward",
    [
        None,
        "1",
        {},
        {"reward": True},
        {"reward": "1"},
        {"reward": float("nan")},
        {f"k{index}": 1 for index in range(REWARD_KEYS + 1)},
    ],
)
def test_a_reward_that_is_no_map_of_finite_numbers_is_not_taken(reward: Any) -> None:
    assert reward_of({"grade": {"reward": reward}}) is None


def test_a_reward_is_taken_from_the_summarys_grade() -> None:
    assert reward_of({"grade": {"reward": {"a": 1, "b": 0.5}}}) == {"a": 1.0, "b": 0.5}
    assert reward_of({"status": "passed"}) is None
