"""The CPU limits of the runs one process has running (backends/docker/cpu_shares.py):
a starting run shrinks the others first, an ending run lets them grow, the sum stays
within the cores, and runs of other processes ($SSEBENCH_PARALLEL_RUNS) are counted.
The update requests are recorded here; tests/docker/test_eval_cpu_shares.py sees a real
container's limit grow."""

from __future__ import annotations

import pytest

from ssebench.backends.docker import cpu_shares
from ssebench.backends.docker.cpu_shares import CpuShares
from ssebench.extensions import PARALLEL_RUNS_VARIABLE


class Containers:
    """The limit each container has, as updates set it; updates to missing fail."""

    def __init__(self) -> None:
        self.cpus: dict[str, float] = {}
        self.updates: list[tuple[str, str]] = []

    def create(self, name: str, cpus: str) -> None:
        self.cpus[name] = float(cpus)

    def update(self, name: str, cpus: str) -> bool:
        self.updates.append((name, cpus))
        if name not in self.cpus:
            return False
        self.cpus[name] = float(cpus)
        return True


@pytest.fixture
def containers(monkeypatch: pytest.MonkeyPatch) -> Containers:
    found = Containers()
    monkeypatch.setattr(cpu_shares, "update_cpus", found.update)
    monkeypatch.delenv(PARALLEL_RUNS_VARIABLE, raising=False)
    monkeypatch.delenv("SSEBENCH_DOCKER_CPUS", raising=False)
    return found


def start(shares: CpuShares, containers: Containers, run_id: str) -> None:
    cpus = shares.admit(run_id, [run_id])
    # Before the new container exists the others already fit beside it.
    assert sum(containers.cpus.values()) + float(cpus) <= 4
    containers.create(run_id, cpus)
    shares.started(run_id)


def test_runs_share_the_cores_and_the_last_one_gets_them(containers: Containers) -> None:
    shares = CpuShares(cores=4)
    start(shares, containers, "a")
    assert containers.cpus == {"a": 2.0}  # alone: at most DEFAULT_CPUS
    start(shares, containers, "b")
    start(shares, containers, "c")
    assert containers.cpus == {"a": 1.33, "b": 1.33, "c": 1.33}
    shares.release("b")
    assert containers.cpus["a"] == containers.cpus["c"] == 2.0
    shares.release("a")
    assert containers.cpus["c"] == 2.0 and shares.limits() == {"c": "2"}
    shares.release("c")
    shares.release("c")  # twice (wait, then cleanup): nothing more
    assert shares.limits() == {}


def test_a_run_admitted_while_another_is_being_created_is_settled(
    containers: Containers,
) -> None:
    """b is admitted before a's container exists: a's update fails, and a gets the
    share once it has started."""
    shares = CpuShares(cores=2)
    a_cpus = shares.admit("a", ["a"])
    b_cpus = shares.admit("b", ["b"])
    assert (a_cpus, b_cpus) == ("2", "1") and ("a", "1") in containers.updates
    containers.create("a", a_cpus)
    containers.create("b", b_cpus)
    shares.started("a")
    shares.started("b")
    assert containers.cpus == {"a": 1.0, "b": 1.0}


def test_runs_of_other_processes_are_counted(
    containers: Containers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Several `ssebench run` side by side with SSEBENCH_PARALLEL_RUNS=2: each process
    has one run, and leaves the other its share."""
    monkeypatch.setenv(PARALLEL_RUNS_VARIABLE, "2")
    shares = CpuShares(cores=2)
    start(shares, containers, "a")
    assert containers.cpus == {"a": 1.0}
    # `eval --jobs 2` sets the same: once it has had two runs, both are its own, and
    # the one left at the end gets the machine.
    start(shares, containers, "b")
    shares.release("a")
    assert containers.cpus["b"] == 2.0


def test_a_container_of_several_is_retried(containers: Containers) -> None:
    """A sidecar run has two containers: both get the share, and one that failed is
    updated again on the next event."""
    shares = CpuShares(cores=2)
    shares.admit("pair", ["env", "agent"])
    containers.create("env", "2")
    start(shares, containers, "single")
    assert containers.cpus["env"] == 1.0 and "agent" not in containers.cpus
    containers.create("agent", "2")
    shares.release("single")
    assert containers.cpus == {"env": 2.0, "agent": 2.0, "single": 1.0}
