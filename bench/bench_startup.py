"""Start-up: `ssebench --help` vs `python -c pass` (the same interpreter), and
`ssebench runs list --json` vs `docker ps -a` (both list the daemon's containers; the
first reads them through the Engine API, see backends/docker/engine.py). Each pair is
timed in turns, so the noise of a shared machine moves both.

Beside them, what the kubernetes backend's client adds to every process that talks to a
cluster (a run, an evaluation, a listing): its import and the kubeconfig's load, as
backend._api() does them, against the bare interpreter. The client's release decides
most of it (pyproject.toml keeps it below 37 for that reason)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from common import SSEBENCH, Figure, Result, alternate, docker_problem, main, run

ROUNDS = 15
FLOOR_IMPORTS = "import argparse, json, socket"
KUBERNETES_CLIENT = "from ssebench.backends.kubernetes.backend import _api; _api()"
# Enough of a kubeconfig for the client to load; nothing connects to its server.
STUB_KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: u, user: {token: stub}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


def quiet(argv: list[str], env: dict[str, str] | None = None) -> None:
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)


def kubernetes_client() -> Figure:
    with tempfile.TemporaryDirectory() as folder:
        kubeconfig = Path(folder) / "kubeconfig"
        kubeconfig.write_text(STUB_KUBECONFIG)
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        subject, baseline = alternate(
            lambda: quiet([sys.executable, "-c", KUBERNETES_CLIENT], env=env),
            lambda: quiet([sys.executable, "-c", "pass"]),
            ROUNDS,
        )
    return Figure(
        "start-up: the kubernetes backend's client",
        "import and kubeconfig load (backend._api())",
        subject,
        "python -c pass",
        baseline,
        note=f"kubernetes {metadata.version('kubernetes')}; median of {ROUNDS} in turns",
    )


def measure() -> list[Result]:
    subject, baseline = alternate(
        lambda: quiet([*SSEBENCH, "--help"]), lambda: quiet([sys.executable, "-c", "pass"]), ROUNDS
    )
    figures: list[Result] = [
        Figure(
            "start-up: ssebench --help",
            "ssebench --help",
            subject,
            "python -c pass",
            baseline,
            note=f"median of {ROUNDS} in turns; goal <= 3x",
        ),
        kubernetes_client(),
    ]
    problem = docker_problem()
    if problem:
        from common import NotMeasured

        return [*figures, NotMeasured("start-up: runs list", problem)]
    listed = len(json.loads(run([*SSEBENCH, "runs", "list", "--json"]))["runs"])
    subject, baseline = alternate(
        lambda: quiet([*SSEBENCH, "runs", "list", "--json"]),
        lambda: quiet(["docker", "ps", "-a"]),
        ROUNDS,
    )
    figures.append(
        Figure(
            "start-up: runs list --json",
            "ssebench runs list --json",
            subject,
            "docker ps -a",
            baseline,
            note=f"{listed} runs listed; median of {ROUNDS} in turns; goal <= 3x",
        )
    )
    # Python's own floor beside docker's: the interpreter and the standard library a
    # listing over the Engine API needs at least (its options, the socket, the JSON).
    floor, baseline = alternate(
        lambda: quiet([sys.executable, "-c", FLOOR_IMPORTS]),
        lambda: quiet(["docker", "ps", "-a"]),
        ROUNDS,
    )
    figures.append(
        Figure(
            "start-up: Python's floor for a listing",
            f"python -c '{FLOOR_IMPORTS}'",
            floor,
            "docker ps -a",
            baseline,
            note=f"median of {ROUNDS} in turns; what no Python listing goes below",
        )
    )
    return figures


if __name__ == "__main__":
    main(measure)
