"""A Docker run's CPU limit at `eval --jobs N`: its share of the machine's cores unless
the user set SSEBENCH_DOCKER_CPUS (issue 16 (c); docs/docker.md, "Hardening and limits")."""

from __future__ import annotations

import os

import pytest

from ssebench.backends.docker.containers import ResourceLimits, default_cpus
from ssebench.cli.eval import runs_at_once
from ssebench.errors import UserError
from ssebench.extensions import PARALLEL_RUNS_VARIABLE


@pytest.mark.parametrize(
    ("cores", "runs", "cpus"),
    [
        (2, 1, "2"),  # one run: the old default, min(2, cores)
        (1, 1, "1"),
        (None, 1, "1"),
        (2, 2, "1"),  # two at once on two cores: one each, not two each
        (3, 2, "1.5"),
        (8, 6, "1.33"),
        (2, 4, "1"),  # never below one core
        (64, 2, "2"),  # one run does not take a large machine
    ],
)
def test_the_default_is_the_runs_share_of_the_cores(
    cores: int | None, runs: int, cpus: str
) -> None:
    assert default_cpus(cores, runs) == cpus


def limits_with(monkeypatch: pytest.MonkeyPatch, **variables: str) -> ResourceLimits:
    for name in ("SSEBENCH_DOCKER_CPUS", PARALLEL_RUNS_VARIABLE):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    return ResourceLimits.from_environment()


def test_the_limit_follows_the_runs_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    assert limits_with(monkeypatch).cpus == "2"
    limits = limits_with(monkeypatch, SSEBENCH_PARALLEL_RUNS="2")
    assert limits.cpus == "1"
    assert limits.argv()[limits.argv().index("--cpus") + 1] == "1"


def test_a_limit_the_user_set_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    assert limits_with(
        monkeypatch, SSEBENCH_DOCKER_CPUS="1.5", SSEBENCH_PARALLEL_RUNS="4"
    ).cpus == ("1.5")


@pytest.mark.parametrize("value", ["0", "two", "-1", "1.5"])
def test_a_bad_number_of_runs_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    with pytest.raises(UserError, match=f"{PARALLEL_RUNS_VARIABLE} must be a positive whole"):
        limits_with(monkeypatch, SSEBENCH_PARALLEL_RUNS=value)


def test_eval_sets_the_runs_at_once_while_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PARALLEL_RUNS_VARIABLE, raising=False)
    with runs_at_once(3):
        assert os.environ[PARALLEL_RUNS_VARIABLE] == "3"
    assert PARALLEL_RUNS_VARIABLE not in os.environ
    monkeypatch.setenv(PARALLEL_RUNS_VARIABLE, "5")
    with runs_at_once(2):
        assert os.environ[PARALLEL_RUNS_VARIABLE] == "2"
    assert os.environ[PARALLEL_RUNS_VARIABLE] == "5"
