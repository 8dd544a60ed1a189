"""The CPU limits (`--cpus`) of the runs this process has running, sized as they come
and go so that together they never get more than the machine's cores, yet a run left
alone at the end of an evaluation gets the machine (up to DEFAULT_CPUS) instead of the
share it started with.

A fixed share (cores / $SSEBENCH_PARALLEL_RUNS) left a core idle once the other slot
of `eval --jobs 2` had no task left, and the longest task then ran on one core
(docs/performance.md, (c)). Here a run that starts first shrinks the others' limits
(`POST /containers/ID/update`, or `docker update` where the Engine API is not used),
and a run that ends grows them.

The runs counted are this process's own, plus those $SSEBENCH_PARALLEL_RUNS says run
beside it in other processes: that many runs at once less the most this process has
had running together (a user running several `ssebench run` side by side sets it to
their number; `ssebench eval` sets it to --jobs, all of them its own). A limit the user
set (SSEBENCH_DOCKER_CPUS) is never changed. The state is this process's only, as the
`docker run` processes of children.py are.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from ssebench.backends.docker.commands import update_cpus
from ssebench.backends.docker.containers import CPUS_VARIABLE, default_cpus, parallel_runs


@dataclass
class _Run:
    containers: tuple[str, ...]
    cpus: str  # the limit its containers were started with or last updated to
    settled: bool = True  # False: an update failed before its containers existed


class CpuShares:
    """This process's runs and their limits. Thread-safe: `eval --jobs N` starts and
    waits for runs from N threads."""

    def __init__(self, cores: int | None = None) -> None:
        self._cores = cores if cores is not None else os.cpu_count()
        self._lock = threading.Lock()
        self._runs: dict[str, _Run] = {}
        self._most_at_once = 0

    @staticmethod
    def managed() -> bool:
        """Whether the limits are ssebench's to size (the user did not set one)."""
        return not os.environ.get(CPUS_VARIABLE)

    def admit(self, run_id: str, containers: Sequence[str]) -> str:
        """The --cpus of a run about to start its containers. The other runs shrink to
        the new share first, so that the sum stays within the cores (while there are no
        more runs than cores: a run never gets less than one CPU)."""
        with self._lock:
            self._runs[run_id] = _Run(tuple(containers), cpus="")
            self._most_at_once = max(self._most_at_once, len(self._runs))
            share = self._share()
            self._resize(share, skip=run_id)
            self._runs[run_id].cpus = share
            return share

    def started(self, run_id: str) -> None:
        """The run's containers exist: give them the share if it changed meanwhile (a
        run admitted while they were being created could not update them)."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is not None and run.cpus != self._share():
                run.settled = False
                self._resize(self._share())

    def release(self, run_id: str) -> None:
        """The run has ended (or never started): the others grow into its share."""
        with self._lock:
            if self._runs.pop(run_id, None) is None:
                return
            if self._runs:
                self._resize(self._share())

    def limits(self) -> dict[str, str]:
        """Each run's current --cpus, by run ID (for tests and the bench)."""
        with self._lock:
            return {run_id: run.cpus for run_id, run in self._runs.items()}

    def _share(self) -> str:
        elsewhere = max(0, parallel_runs() - self._most_at_once)
        return default_cpus(self._cores, len(self._runs) + elsewhere)

    def _resize(self, share: str, skip: str | None = None) -> None:
        for run_id, run in self._runs.items():
            if run_id == skip or (run.cpus == share and run.settled):
                continue
            # Every container of the run, even when one fails: the next event retries.
            updated = [update_cpus(name, share) for name in run.containers]
            run.settled = all(updated)
            if run.settled:
                run.cpus = share


# This process's runs (module state, as children.py's).
SHARES = CpuShares()
