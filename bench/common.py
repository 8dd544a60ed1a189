"""What the benchmark scripts share: timing, the figure they print, the machine.

Every figure is a ratio of the ssebench operation against a baseline that does the same
work with the platform's own tool, both measured in the same process run, so the noise
of a shared machine moves both. Each is the median of several rounds.
"""

from __future__ import annotations

import compileall
import json
import os
import platform
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ssebench.extensions import (
    ARCHIVE_TARGET,
    IMAGE_REFERENCE_PATCH,
    REFERENCE_PATCH_TARGET,
    RESULTS_TARGET,
)

ROOT = Path(__file__).resolve().parent.parent
PILOT = ROOT / "datasets" / "pilot"
SSEBENCH = [sys.executable, "-m", "ssebench.cli.main"]
# An ssebench command with its backend's calls timed (profiled.py).
PROFILED = [sys.executable, str(ROOT / "bench" / "profiled.py")]
# The backend calls profiled.py times, in the order a run makes them.
RUN_CALLS = ("prepare_images", "copy_from_image", "start", "wait", "collect_results", "cleanup")

# ssebench as its users run it, with its modules' bytecode cached (pip compiles them on
# install): where PYTHONDONTWRITEBYTECODE is set, every timed process would compile
# its modules from source instead (5 to 10 ms of a start-up of 40).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
compileall.compile_dir(ROOT / "src", quiet=1)


@dataclass(frozen=True)
class Figure:
    """One measured ratio: subject_seconds / baseline_seconds (or a count)."""

    name: str
    subject: str
    subject_value: float
    baseline: str
    baseline_value: float | None
    unit: str = "s"
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.baseline_value in (None, 0):
            return None
        assert self.baseline_value is not None
        return self.subject_value / self.baseline_value

    def line(self) -> str:
        ratio = "-" if self.ratio is None else f"{self.ratio:.2f}x"
        baseline = "" if self.baseline_value is None else f"{self.baseline_value:.3f} {self.unit}"
        note = f"  ({self.note})" if self.note else ""
        return (
            f"{self.name}: {ratio}  {self.subject} {self.subject_value:.3f} {self.unit}"
            f" vs {self.baseline} {baseline}{note}"
        )


@dataclass(frozen=True)
class NotMeasured:
    name: str
    reason: str

    def line(self) -> str:
        return f"{self.name}: not measured: {self.reason}"


@dataclass(frozen=True)
class Profile:
    """Where the wall time of one more run of a figure's subject went: its backend's
    calls, as profiled.py timed them, and the rest of the process (the interpreter, the
    imports, the command line, the run's record), the wall time less the calls."""

    name: str
    wall: float
    calls: dict[str, float]
    # Kubernetes: the client's import and kubeconfig load, inside the first call.
    client: float | None = None
    note: str = ""
    # Docker: the main thread's waits on the platform, by kind (profiled.MainThreadWaits).
    waits: dict[str, float] = field(default_factory=dict)

    def parts(self) -> str:
        said = [f"{call} {seconds:.2f} s" for call, seconds in self.calls.items()]
        said.append(f"the rest {self.wall - sum(self.calls.values()):.2f} s")
        if self.client is not None:
            said.append(f"of the calls, the kubernetes client's load {self.client:.2f} s")
        if self.waits:
            kinds = ", ".join(f"{kind} {seconds:.2f} s" for kind, seconds in self.waits.items())
            waited = sum(self.waits.values())
            said.append(
                f"of the whole, waits on the platform {waited:.2f} s ({kinds}) "
                f"and ssebench's own Python {self.wall - waited:.2f} s"
            )
        return ", ".join(said)

    def line(self) -> str:
        note = f"  ({self.note})" if self.note else ""
        return f"{self.name}: {self.wall:.3f} s: {self.parts()}{note}"


Result = Figure | NotMeasured | Profile


def profiled_run(
    name: str, arguments: list[str], *, env: dict[str, str] | None = None, note: str = ""
) -> Profile:
    """One `ssebench run <arguments>` under profiled.py, timed from outside as the
    figures' runs are; raises unless it passed."""
    with tempfile.TemporaryDirectory(prefix="ssebench-bench-profile-") as folder:
        out = Path(folder) / "profile.json"
        started = time.perf_counter()
        said = run([*PROFILED, str(out), "run", *arguments], env=env)
        wall = time.perf_counter() - started
        assert said.strip().splitlines()[-1].startswith("passed\t"), said
        profiled = json.loads(out.read_text())
    seconds = profiled["seconds"]
    calls = {call: seconds[call] for call in RUN_CALLS if call in seconds}
    return Profile(name, wall, calls, seconds.get("client"), note, profiled.get("waits") or {})


def median_seconds(action: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def alternate(
    subject: Callable[[], object], baseline: Callable[[], object], rounds: int
) -> tuple[float, float]:
    """Median seconds of subject and of baseline, measured in turns."""
    subject_seconds, baseline_seconds = in_turns([subject, baseline], rounds)
    return subject_seconds, baseline_seconds


def in_turns(actions: list[Callable[[], object]], rounds: int) -> list[float]:
    """Median seconds of each action, the actions measured in turns, rounds times."""
    times: list[list[float]] = [[] for _ in actions]
    for _ in range(rounds):
        for action, seconds in zip(actions, times, strict=True):
            started = time.perf_counter()
            action()
            seconds.append(time.perf_counter() - started)
    return [statistics.median(seconds) for seconds in times]


def reference_run_env(run_id: str) -> dict[str, str]:
    """The environment the runner gives a reference run's container (runner.py), for
    the baselines that start the same image by hand."""
    return {
        "SSE_MODEL_NAME": "none",
        "SSE_DIFFICULTY": "2",
        "TIMEOUT": "3600",
        "SSE_RESULTS": RESULTS_TARGET,
        "SSE_ARCHIVE": ARCHIVE_TARGET,
        "SSE_RUN_ID": run_id,
    }


def reference_image(task: str, registry: str = "ssebench") -> str:
    """The reference agent's run image of task as the runner names it (spec, "Prebuilt
    images"; a local build has the same name under the registry "ssebench")."""
    from ssebench.agents import release_version
    from ssebench.extensions import ImageRequest, prebuilt_images

    request = ImageRequest(
        task_id=task,
        dataset="",
        agent="reference",
        agent_version=release_version(),
        registry=registry,
    )
    return prebuilt_images(request).run


def publish_locally(registry: str, task: str, *agents: str) -> None:
    """Build the pilot task's sandbox images of agents into this machine's Docker under
    the names `ssebench run --prebuilt` gives them in registry (not timed)."""
    subprocess.run(
        [
            *(*SSEBENCH, "images", "publish", "--registry", registry),
            *("--local", str(PILOT), "--tasks", task, "--agents", *agents),
            *("--mode", "sandbox", "--load", "local"),
        ],
        check=True,
        capture_output=True,
        timeout=1800,
    )


def built_reference_image(task: str) -> str:
    """reference_image(task) of the pilot, built first where this machine's Docker does
    not have it yet: the figures that use it would otherwise fail on a fresh machine,
    where nothing can be pulled."""
    image = reference_image(task)
    present = subprocess.run(["docker", "image", "inspect", image], capture_output=True)
    if present.returncode != 0:
        print(f"bench: building {image}", file=sys.stderr)
        publish_locally("ssebench", task, "reference")
    return image


def bare_reference_run(
    image: str,
    patch: Path,
    run_dir: Path,
    network: str = "none",
    *,
    archive_volume: str | None = None,
    name: str | None = None,
) -> None:
    """The baseline of a reference run: a bare `docker run --rm` of its image with the
    mounts and environment the runner gives it (run_dir, new, holds its results);
    raises unless the grade is passed, so both sides are known to do the same work.
    archive_volume: the archive goes to that volume, not to run_dir/archive; name: the
    container is named so and kept after its exit (for a copy out of it), not removed."""
    run_dir.mkdir(parents=True, exist_ok=True)
    if archive_volume is None:
        (run_dir / "archive").mkdir()
    (run_dir / "result.json").touch()
    copied = run_dir / "reference.patch"
    if patch != copied:
        shutil.copy(patch, copied)
    archive = (
        f"type=volume,source={archive_volume}"
        if archive_volume
        else f"type=bind,source={run_dir / 'archive'}"
    )
    run(
        [
            *("docker", "run", "--pull", "never", "--network", network),
            *(("--name", name) if name else ("--rm",)),
            *("--label", f"ssebench.bench={run_dir.name}"),
            *("--mount", f"type=bind,source={run_dir},target={RESULTS_TARGET}"),
            *("--mount", f"{archive},target={ARCHIVE_TARGET}"),
            *("--mount", f"type=bind,source={copied},target={REFERENCE_PATCH_TARGET},readonly"),
            *(
                argument
                for key, value in reference_run_env(run_dir.name).items()
                for argument in ("-e", f"{key}={value}")
            ),
            image,
        ]
    )
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "passed", result


def reference_run_by_hand(image: str, run_dir: Path) -> None:
    """bare_reference_run with the platform's work that the contract asks of a Docker
    run, done by hand with the docker CLI and iptables, one step after the other as a
    script would do it:

    - the pull attempt of a prebuilt image, and its inspect (spec: the Docker backend
      pulls it, and uses the machine's copy when the pull fails);
    - the reference patch copied out of the image (spec: "a reference run takes the
      reference patch from the image it runs"): create, cp, rm;
    - the archive in a volume of the run's own, copied out after the run (docs/docker.md:
      the agent's archive never reaches a folder of the host before the safe copy);
    - the run's own internal network, with the INPUT rule that keeps the run from this
      host's services (docs/docker.md);
    - all of it removed after the run."""
    name = f"{run_dir.name}-by-hand"
    network, volume = f"{name}-net", f"{name}-archive"
    bridge = f"sseb{secrets.token_hex(5)}"
    host_rule = [
        *("INPUT", "-i", bridge, "-m", "conntrack", "!", "--ctstate", "ESTABLISHED,RELATED"),
        *("-m", "comment", "--comment", f"ssebench-bench:{network}", "-j", "DROP"),
    ]
    run_dir.mkdir(parents=True)
    # No registry answers here: the pull fails, as ssebench's attempt does.
    subprocess.run(["docker", "pull", "-q", image], capture_output=True, check=False)
    run(["docker", "image", "inspect", "--format", "{{.Id}}", image])
    run(["docker", "create", "--pull", "never", "--name", f"{name}-copy", image, "copy"])
    try:
        run(["docker", "cp", f"{name}-copy:{IMAGE_REFERENCE_PATCH}", str(run_dir)])
    finally:
        run(["docker", "rm", f"{name}-copy"])
    run(["docker", "volume", "create", volume])
    try:
        run(
            [
                *("docker", "network", "create", "--internal"),
                *("--opt", f"com.docker.network.bridge.name={bridge}", network),
            ]
        )
        try:
            run(["iptables", "-w", "30", "-I", *host_rule])
            try:
                bare_reference_run(
                    image, run_dir / "reference.patch", run_dir, network,
                    archive_volume=volume, name=name,
                )  # fmt: skip
                run(["docker", "cp", f"{name}:{ARCHIVE_TARGET}", str(run_dir / "archive")])
            finally:
                subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)
                run(["iptables", "-w", "30", "-D", *host_rule])
        finally:
            run(["docker", "network", "rm", network])
    finally:
        run(["docker", "volume", "rm", volume])


def run(argv: list[str], *, timeout: float = 900, env: dict[str, str] | None = None) -> str:
    """Run argv; return its stdout; raise with its output when it fails."""
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv[:6])}... exited {done.returncode}: "
            f"{(done.stderr or done.stdout)[-1500:]}"
        )
    return done.stdout


def docker_problem() -> str | None:
    if shutil.which("docker") is None:
        return "the docker CLI is not installed"
    done = subprocess.run(
        ["docker", "version", "--format", "{{.Server.Version}}"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return None if done.returncode == 0 else f"no Docker daemon: {done.stderr.strip()[:200]}"


def cluster_problem() -> str | None:
    """None when a Kubernetes cluster answers, else why it cannot be measured."""
    config = os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    in_pod = bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
    if not in_pod and not Path(config.split(os.pathsep)[0]).is_file():
        return "no cluster: KUBECONFIG is unset and there is no ~/.kube/config (nor a pod)"
    if shutil.which("kubectl") is None:
        return "kubectl is not installed"
    done = subprocess.run(
        ["kubectl", "version", "--request-timeout=10s", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if done.returncode != 0:
        return f"the cluster does not answer: {done.stderr.strip()[:200]}"
    try:
        import kubernetes  # noqa: F401
    except ImportError:
        return "the kubernetes client is not installed (pip install 'ssebench[kubernetes]')"
    return None


def machine() -> dict[str, str]:
    """What the figures were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    docker = subprocess.run(
        ["docker", "version", "--format", "{{.Server.Version}}"],
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout.strip()
    return {
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "memory": memory,
        "kernel": platform.release(),
        "os": platform.platform(terse=True),
        "python": platform.python_version(),
        "docker": docker or "none",
    }


def main(measure: Callable[[], list[Result]]) -> None:
    for result in measure():
        print(result.line(), flush=True)
