"""Label keys that tools use to find runs (spec, "Labels").

Every run the runner starts carries WEBUI=true, which is what `ssebench runs list`
selects on; the sidecar pair's containers and volumes also carry PAIR.
"""

from __future__ import annotations

from collections.abc import Mapping

from ssebench.processes import process_exists

RUN_ID = "ssebench.run-id"
WEBUI = "ssebench.webui"
TASK_ID = "ssebench.task-id"
MODEL = "ssebench.model"
AGENT = "ssebench.agent"
RESULTS = "ssebench.results"
REFERENCE_RUN = "ssebench.reference-run"
PAIR = "ssebench.run"
# When the run must end by itself even if its runner died (Unix time, seconds).
DEADLINE = "ssebench.deadline"
# Which process started the run, so `ssebench runs prune` can tell an abandoned run.
RUNNER_HOST = "ssebench.runner-host"
RUNNER_PID = "ssebench.runner-pid"
# A short-lived container of a run that is not the run itself (the reference patch's
# copy): it carries the run's labels so prune finds it, and this one says what it is.
HELPER = "ssebench.helper"
# uid:gid of a runner that is not root: while the run's container runs, the run
# directory is root's; whoever removes the run gives it back to this owner.
RESULTS_OWNER = "ssebench.results-owner"
# The SHA-256 of a run's model key (the form the proxy's admin API accepts with the
# master key only): `ssebench runs prune` revokes the key of a run whose runner died.
KEY_SHA256 = "ssebench.key-sha256"
# A run started with --keep-container: prune leaves it to `ssebench runs remove`.
KEEP = "ssebench.keep"
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
