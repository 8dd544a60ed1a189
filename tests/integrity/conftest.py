"""The integrity suite: real runs held in the agent phase, attacked as the agent.

A held run is a run of the sleeper agent (which changes nothing), kept in its agent
phase while the tests act as the agent's user, `model`, from inside it: through
`ssebench runs exec RUN --user model` (sandbox mode, and the Kubernetes pod), or, in
sidecar mode, `docker exec --user model` in the agent container, where the agent
really runs. One held run per backend and mode serves every attempt that leaves it
unchanged; the attempts that need grading (tests/integrity/test_grading.py) plant what
they plant in a run of their own and then let it end.

Every attempt must fail. A test that finds a hole fails, or is marked
xfail(strict=True) with the reason while the hole is open.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.cli import run_arguments, sleeper_started, ssebench, start_ssebench
from tests.conftest import PILOT_DATASET
from tests.docker.conftest import new_run_id as new_docker_run_id

# The Kubernetes session fixture: its own namespace, the RBAC role, the pilot images.
from tests.kubernetes.cluster import Cluster
from tests.kubernetes.cluster import new_run_id as new_kubernetes_run_id
from tests.polling import wait_until

TASK = "py-semver-prerelease"
TASK_DIR = PILOT_DATASET / TASK
SLEEPER_COMMAND = "sleep 3600"
K8S = ("--backend", "kubernetes")
# Words that occur in the reference patch only, and in the hidden tests only: finding
# one where the agent can read is finding the file.
REFERENCE_WORD = "_identifier_key"
HIDDEN_WORD = "NumericPrereleaseOrderTests"
# The runtime's own account names (src/ssebench/runtime/accounts.py).
AGENT_USER = "model"
RUNNER_USER = "sse-runner"
KEEP_ALIVE_MESSAGE = "graded; waiting to be stopped"


@dataclass
class HeldRun:
    """A run of the sleeper agent, in its agent phase until finish()."""

    kind: str  # docker-sandbox, docker-sidecar, kubernetes-sandbox
    run_id: str
    results: Path
    process: subprocess.Popen[str]
    options: tuple[str, ...] = ()
    # Sidecar: the agent's own container (the environment container has the daemon).
    agent_container: str | None = None
    finished: bool = field(default=False)
    # What a probe found, by probe, for the tests that share one (a probe takes time).
    seen: dict[str, dict[str, object]] = field(default_factory=dict)

    @property
    def backend(self) -> str:
        return self.kind.split("-")[0]

    @property
    def run_dir(self) -> Path:
        return self.results / TASK / "none" / "sleeper" / self.run_id

    def as_model(self, script: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run a shell script as the agent's user where the agent runs."""
        assert not self.finished, f"{self.kind}: the run has left its agent phase"
        if self.agent_container is not None:
            return subprocess.run(
                ["docker", "exec", "--user", AGENT_USER, self.agent_container, "sh", "-c", script],
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        return self.as_user(AGENT_USER, script, timeout)

    def as_user(
        self, user: str | None, script: str, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """A shell script in the run's (environment) container; as root without user."""
        who = ("--user", user) if user else ()
        return ssebench(
            "runs", "exec", self.run_id, *self.options, *who, "--", "sh", "-c", script,
            timeout=timeout,
        )  # fmt: skip

    def python_as_model(self, code: str, timeout: float = 120) -> dict[str, object]:
        """Run Python as the agent; its last stdout line is JSON, returned."""
        done = self.as_model(f"python3 -c {shlex.quote(code)}", timeout)
        assert done.returncode == 0, f"{self.kind}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
        result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
        return result

    def probe_once(self, code: str, timeout: float = 600) -> dict[str, object]:
        """python_as_model(code), run once per held run and remembered."""
        if code not in self.seen:
            self.seen[code] = self.python_as_model(code, timeout)
        return self.seen[code]

    def end_agent(self) -> None:
        """Make the agent exit (as the agent could: kill its own sleep), so grading runs."""
        script = (
            "for d in /proc/[0-9]*; do "
            f'[ "$(tr "\\000" " " < $d/cmdline 2>/dev/null)" = "{SLEEPER_COMMAND} " ] '
            "&& kill ${d#/proc/}; done; true"
        )
        done = self.as_model(script)
        # Once the agent has exited, the runtime kills every process left of its user
        # (none may live into grading): this shell too, when it is still running then.
        # SIGKILL: exit 137, with "Killed" on stderr only when the shell outlived its
        # killed `tr` long enough to say so (one CI run had both sweeps without it).
        # Whether the agent did exit, wait_graded_and_kept checks next.
        swept = done.returncode == 137
        assert done.returncode == 0 or swept, done.stderr
        self.finished = True

    def wait_graded_and_kept(self) -> None:
        """With --keep-alive: wait until the runtime has graded and waits to be stopped."""

        def kept() -> bool:
            logs = ssebench("runs", "logs", self.run_id, *self.options)
            return KEEP_ALIVE_MESSAGE in logs.stdout

        wait_until(kept, f"{self.kind}: the run to be graded", 300, 1)

    def stop(self) -> dict[str, object]:
        """Stop the run and wait for its runner; its summary.json."""
        ssebench("runs", "stop", self.run_id, *self.options, timeout=180)
        self.process.wait(timeout=300)
        summary: dict[str, object] = json.loads((self.run_dir / "summary.json").read_text())
        return summary

    def close(self) -> None:
        ssebench("runs", "remove", self.run_id, *self.options, timeout=180)
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=120)


def start_held_run(
    kind: str, results: Path, name: str, *extra: str, keep_alive: bool = False
) -> HeldRun:
    """Start a sleeper run of kind and wait until its agent runs."""
    backend, mode = kind.split("-")
    if backend == "docker":
        run_id, options = new_docker_run_id(name), ()
    else:
        run_id, options = new_kubernetes_run_id(name), K8S
    arguments = run_arguments(
        PILOT_DATASET, TASK, "sleeper", run_id, results, *options, "--mode", mode,
        *(("--keep-alive",) if keep_alive else ()),
        *(("--prebuilt",) if backend == "kubernetes" else ()), *extra,
    )  # fmt: skip
    process = start_ssebench(*arguments, output=subprocess.DEVNULL)
    agent_container = f"ssebench-{run_id}-agent" if mode == "sidecar" else None
    run = HeldRun(kind, run_id, results, process, options, agent_container)
    try:
        wait_until(lambda: sleeper_started(run_id, *options), f"{kind}: the sleeper to start", 300)
    except BaseException:
        run.close()
        raise
    return run


def held_run_fixture(kind: str) -> Callable[..., Iterator[HeldRun]]:
    def fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HeldRun]:
        run = start_held_run(kind, tmp_path_factory.mktemp(f"held-{kind}"), "held")
        try:
            yield run
        finally:
            run.close()

    return fixture


# Package scope: the held runs end with the suite, so they hold no share of the cluster's
# CPU (or the machine's) while the other directories' runs go on.
docker_sandbox = pytest.fixture(scope="package")(held_run_fixture("docker-sandbox"))
docker_sidecar = pytest.fixture(scope="package")(held_run_fixture("docker-sidecar"))


@pytest.fixture(scope="package")
def kubernetes_sandbox(
    cluster: Cluster,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[HeldRun]:
    run = start_held_run("kubernetes-sandbox", tmp_path_factory.mktemp("held-k8s"), "held")
    try:
        yield run
    finally:
        run.close()


KINDS = [
    pytest.param("docker-sandbox", marks=pytest.mark.docker, id="docker-sandbox"),
    pytest.param("docker-sidecar", marks=pytest.mark.docker, id="docker-sidecar"),
    pytest.param("kubernetes-sandbox", marks=pytest.mark.kubernetes, id="kubernetes-sandbox"),
]
FIXTURE_OF_KIND = {
    "docker-sandbox": "docker_sandbox",
    "docker-sidecar": "docker_sidecar",
    "kubernetes-sandbox": "kubernetes_sandbox",
}


@pytest.fixture(params=KINDS)
def held_run(request: pytest.FixtureRequest) -> HeldRun:
    """Each backend and mode's held run (they live for the suite, side by side)."""
    run: HeldRun = request.getfixturevalue(FIXTURE_OF_KIND[request.param])
    return run
