"""Label keys that tools use to find runs (spec, "Labels"), and how prune judges them.

The strings are here, and ssebench.extensions gives them to extension authors as
*_LABEL, with what each means and who sets it. They are here and not there so that
`ssebench runs list` reads them without importing the extension API, whose dataclasses
cost a third of that command's start-up (docs/performance.md).

Every run the runner starts carries WEBUI=true, which is what `ssebench runs list`
selects on; the sidecar pair's containers and volumes also carry PAIR.
"""

from __future__ import annotations

from collections.abc import Mapping

from ssebench.host.processes import process_exists

RUN_ID = "ssebench.run-id"
WEBUI = "ssebench.webui"
TASK_ID = "ssebench.task-id"
MODEL = "ssebench.model"
AGENT = "ssebench.agent"
RESULTS = "ssebench.results"
REFERENCE_RUN = "ssebench.reference-run"
PAIR = "ssebench.run"
DEADLINE = "ssebench.deadline"
RUNNER_HOST = "ssebench.runner-host"
RUNNER_PID = "ssebench.runner-pid"
KEEP = "ssebench.keep"
HELPER = "ssebench.helper"
RESULTS_OWNER = "ssebench.results-owner"
# The SHA-256 of a run's model key (the form the proxy's admin API accepts with the
# master key only): `ssebench runs prune` revokes the key of a run whose runner died.
KEY_SHA256 = "ssebench.key-sha256"
# A Docker run's archive volume and the helper container that copies it out: the run ID.
ARCHIVE_OF = "ssebench.archive-of"

LISTED_RUNS = {WEBUI: "true"}


def run_labels(
    *, run_id: str, task_id: str, model: str, agent: str, results: str, reference_run: bool
) -> dict[str, str]:
    """The labels of the container the web UI lists."""
    labels = {
        RUN_ID: run_id,
        WEBUI: "true",
        TASK_ID: task_id,
        MODEL: model,
        AGENT: agent,
        RESULTS: results,
    }
    if reference_run:
        labels[REFERENCE_RUN] = "true"
    return labels


def matches(labels: dict[str, str] | None, selector: dict[str, str]) -> bool:
    """True when labels carry every key of selector with the same value."""
    labels = labels or {}
    return all(labels.get(key) == value for key, value in selector.items())


def abandoned_reason(run_labels: Mapping[str, str], *, now: float, host: str) -> str | None:
    """Why what carries run_labels (a run's container, or another object of the run)
    may be removed by prune, or None. Kept runs are never pruned: the user asked for
    them (ssebench runs remove ends them)."""
    if run_labels.get(KEEP) == "true":
        return None
    deadline = run_labels.get(DEADLINE, "")
    if deadline.isdigit() and int(deadline) < now:
        return "its deadline passed"
    pid = run_labels.get(RUNNER_PID, "")
    same_host = run_labels.get(RUNNER_HOST) == host
    if same_host and pid.isdigit() and not process_exists(int(pid)):
        return f"its runner (process {pid}) is gone"
    return None
