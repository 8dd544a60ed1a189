"""Faults on Docker: runners killed at random phases and in the narrow windows where a
kill used to leave something behind; then `ssebench runs prune`, and a count of what is
left: containers, volumes, networks, scratch folders and env files. Zero.

The narrow windows are forced with a slowed platform call, not a hook in ssebench: the
runner's PATH starts with a `docker` of this test (SLOW_DOCKER) that, for the one
subcommand a test names, leaves a marker file and sleeps before it runs the real docker.
The test waits for the marker, so it kills the runner inside that window every time.
ssebench makes most of its Docker calls through the Engine API (engine.py), which a
`docker` on PATH cannot slow: a runner with a slowed subcommand is given a docker
context of its own (CLI_CONTEXT, the same daemon), with which ssebench makes every call
through the CLI, as it does for a user whose CLI is set up for another context. Those
runners take the CLI path; the signal handling, records and prune they check are the
same on both.
Each runner gets a TMPDIR of its own, so every scratch or env file it could leave is
counted there. Bounded: about three minutes on a laptop.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ssebench.results.unrecorded import KILLED_REASON
from tests.cli import (
    grading_tests,
    prune_records_the_killed_run,
    run_arguments,
    sleeper_started,
    ssebench,
    start_ssebench,
)
from tests.conftest import PILOT_DATASET, SLOW_GRADING
from tests.docker.conftest import leftovers, new_run_id
from tests.polling import wait_until

pytestmark = pytest.mark.docker
TASK = "py-semver-prerelease"
SLOW_SECONDS = 6
CLI_CONTEXT = "ssebench-faults"

# The `docker` first on the runner's PATH: slows one subcommand, after a marker file.
SLOW_DOCKER = """#!/bin/sh
if [ -n "$FAULT_SLOW" ] && [ "$1" = "$FAULT_SLOW" ]; then
    touch "$FAULT_MARKERS/$1.$$"
    sleep "$FAULT_SLOW_SECONDS"
fi
exec {real} "$@"
"""


@dataclass
class Runner:
    process: subprocess.Popen[str]
    log: Path

    def ended(self, seconds: float = 120) -> str:
        """Its output, once it has ended."""
        try:
            self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            tail = self.log.read_text(errors="replace")[-2000:]
            raise AssertionError(f"the runner did not end within {seconds} s: {tail}") from None
        return self.log.read_text(errors="replace")


@dataclass
class Faults:
    """Where the runners of one test keep their scratch files, and the slow docker."""

    root: Path
    results: Path
    tmp: Path
    markers: Path
    bin: Path
    docker_config: Path

    def env(self, slow: str | None = None) -> dict[str, str]:
        cli_only = {"DOCKER_CONFIG": str(self.docker_config), "DOCKER_CONTEXT": CLI_CONTEXT}
        return {
            "TMPDIR": str(self.tmp),
            "PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}",
            "FAULT_SLOW": slow or "",
            "FAULT_MARKERS": str(self.markers),
            "FAULT_SLOW_SECONDS": str(SLOW_SECONDS),
            **(cli_only if slow else {}),
        }

    def start(
        self, run_id: str, agent: str = "sleeper", *extra: str, slow: str | None = None
    ) -> Runner:
        """A runner whose output goes to a file: a pipe would stay open as long as a
        `docker run` orphaned by a SIGKILL holds it."""
        arguments = run_arguments(PILOT_DATASET, TASK, agent, run_id, self.results, *extra)
        log = self.root / f"{run_id}.log"
        with log.open("w") as output:
            process = start_ssebench(
                *arguments, "--timeout", "60", env=self.env(slow), output=output
            )
        return Runner(process, log)

    def entered(self, subcommand: str) -> bool:
        return any(self.markers.glob(f"{subcommand}.*"))

    def run_dir(self, run_id: str, agent: str = "sleeper") -> Path:
        return self.results / TASK / "none" / agent / run_id

    def prune(self) -> dict[str, object]:
        done = ssebench("runs", "prune", "--json", "--results", str(self.results), env=self.env())
        assert done.returncode == 0, done.stderr
        report: dict[str, object] = json.loads(done.stdout)
        return report

    def left_on_disk(self) -> list[str]:
        """Scratch folders and env files the runners left in their TMPDIR."""
        return sorted(str(path) for path in self.tmp.iterdir())


@pytest.fixture
def faults(tmp_path: Path) -> Iterator[Faults]:
    real = shutil.which("docker")
    assert real, "no docker"
    found = Faults(
        root=tmp_path,
        results=tmp_path / "results",
        tmp=tmp_path / "tmp",
        markers=tmp_path / "markers",
        bin=tmp_path / "bin",
        docker_config=tmp_path / "docker-config",
    )
    for folder in (found.results, found.tmp, found.markers, found.bin, found.docker_config):
        folder.mkdir()
    wrapper = found.bin / "docker"
    wrapper.write_text(SLOW_DOCKER.format(real=real))
    wrapper.chmod(0o755)
    socket = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    made = subprocess.run(
        [real, "context", "create", CLI_CONTEXT, "--docker", f"host={socket}"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "DOCKER_CONFIG": str(found.docker_config)},
    )
    assert made.returncode == 0, made.stderr
    yield found


def mine(run_ids: list[str]) -> list[str]:
    """What is left of these runs: containers, volumes, networks."""
    return [entry for entry in leftovers() if any(run_id in entry for run_id in run_ids)]


def containers_of(run_ids: list[str]) -> list[str]:
    return [entry for entry in mine(run_ids) if entry.startswith("container ")]


def test_sigkill_before_the_container_exists_leaves_no_env_file(faults: Faults) -> None:
    """The container is made by a `docker run` still on its way: the runner dies with
    the environment (a model run's key) handed over, and nothing of it is on disk."""
    run_id = new_run_id("envkill")
    runner = faults.start(run_id, slow="run")
    wait_until(lambda: faults.entered("run"), what="docker run", seconds=120)
    runner.process.kill()
    runner.ended()
    assert faults.left_on_disk() == []
    # The orphaned docker run creates its container after the pause: prune finds it.
    wait_until(
        lambda: containers_of([run_id]), what="the orphaned container", seconds=SLOW_SECONDS * 3
    )
    removed = faults.prune()["removed"]
    assert run_id in [run["run_id"] for run in removed]  # type: ignore[union-attr,index]
    assert mine([run_id]) == [] and faults.left_on_disk() == []


def test_sigkill_during_the_patch_copy_leaves_a_container_prune_removes(
    faults: Faults,
) -> None:
    run_id = new_run_id("copykill")
    runner = faults.start(run_id, "reference", slow="cp")
    wait_until(lambda: faults.entered("cp"), what="docker cp", seconds=180)
    runner.process.kill()
    runner.ended()
    listed = json.loads(ssebench("runs", "list", "--json").stdout)["runs"]
    helper = [run for run in listed if run["run_id"] == run_id]
    assert helper and helper[0]["labels"]["ssebench.helper"] == "copy"
    faults.prune()
    assert mine([run_id]) == [] and faults.left_on_disk() == []


def test_sigkill_during_the_archive_copy_leaves_a_helper_prune_removes(faults: Faults) -> None:
    """The dummy's first `docker cp` reads its archive out through a helper container
    that holds the archive's volume: killed there, the runner leaves both, and prune
    must remove the helper before the volume (it once left both behind)."""
    run_id = new_run_id("archkill")
    runner = faults.start(run_id, "dummy", slow="cp")
    wait_until(lambda: faults.entered("cp"), what="docker cp", seconds=180)
    runner.process.kill()
    runner.ended()
    left = mine([run_id])
    assert f"container ssebench-{run_id}-archive-copy" in left, left
    assert f"volume ssebench-{run_id}-archive" in left, left
    faults.prune()
    assert mine([run_id]) == [] and faults.left_on_disk() == []


def test_a_second_signal_during_removal_ends_at_once_and_records_the_run(
    faults: Faults,
) -> None:
    """ssebench exits without waiting for the slowed removal, the run is recorded, and
    prune removes what the runner left."""
    run_id = new_run_id("rmsignal")
    runner = faults.start(run_id, slow="rm")
    wait_until(lambda: sleeper_started(run_id), what="the sleeper agent to start")
    runner.process.send_signal(signal.SIGTERM)
    wait_until(lambda: faults.entered("rm"), what="docker rm", seconds=120)
    signalled = time.monotonic()
    runner.process.send_signal(signal.SIGINT)
    output = runner.ended()
    assert time.monotonic() - signalled < SLOW_SECONDS  # not after the slowed docker rm
    assert runner.process.returncode == 128 + signal.SIGINT, output
    summary = json.loads((faults.run_dir(run_id) / "summary.json").read_text())
    assert summary["stopped"] is True and summary["exit_code"] == 143
    # Ended while the archive was read out (its helper's docker rm): not read out
    # whole, so no grade, whatever the run directory holds.
    assert "ended by a second SIGINT" in summary["error_msg"]
    time.sleep(SLOW_SECONDS)  # the orphaned docker rm ends
    faults.prune()
    assert mine([run_id]) == [] and faults.left_on_disk() == []


@pytest.mark.parametrize("way", ["sigterm", "sigkill"])
def test_a_signal_during_a_layer_build_leaves_no_build_folder(faults: Faults, way: str) -> None:
    run_id = new_run_id(f"build{way}")
    runner = faults.start(run_id, "sleeper", "--build", slow="build")
    wait_until(lambda: faults.entered("build"), what="docker build", seconds=120)
    assert any(path.name.startswith("ssebench-") for path in faults.tmp.iterdir())
    if way == "sigterm":
        runner.process.send_signal(signal.SIGTERM)
        output = runner.ended(60)
        assert runner.process.returncode == 128 + signal.SIGTERM, output
        assert "Traceback" not in output and "terminated" in output
        assert faults.left_on_disk() == []
    else:
        runner.process.kill()
        runner.ended()
        assert faults.left_on_disk() != [], "SIGKILL skips every finally"
        folders = faults.prune()["folders"]
        assert folders and faults.left_on_disk() == []
    assert mine([run_id]) == []


def making(run_ids: list[str]) -> list[str]:
    """The runs for which a process (a `docker run` whose runner was SIGKILLed) still
    works while no container of the run exists yet: it may still make one."""
    busy = set()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        busy |= {run_id for run_id in run_ids if any(run_id.encode() in w for w in words)}
    return [run_id for run_id in sorted(busy) if not containers_of([run_id])]


def test_runners_killed_at_random_phases_leave_nothing_after_prune(faults: Faults) -> None:
    """Runs of both modes and both kinds of agent, each ended at a random moment of its
    life in a random way; then prune. Every run that was not SIGKILLed is recorded.
    (The moments start once the CLI runs: a signal while Python itself starts up is
    Python's to report.)"""
    seed = int(time.time())
    generator = random.Random(seed)
    run_ids: list[str] = []
    ways: dict[str, str] = {}
    recorded_expected: list[tuple[str, str]] = []
    try:
        for index in range(8):
            run_id = new_run_id(f"fault{index}")
            run_ids.append(run_id)
            agent = generator.choice(["sleeper", "reference"])
            mode = generator.choice(["sandbox", "sidecar"])
            runner = faults.start(run_id, agent, "--mode", mode)
            wait_until(lambda runner=runner: runner.log.stat().st_size > 0, "the CLI", 60, 0.05)
            time.sleep(generator.uniform(0.0, 6.0))
            way = generator.choice(["sigkill", "sigterm", "sigint", "twice"])
            ways[run_id] = f"{way} {agent} {mode}"
            if way == "sigkill":
                runner.process.kill()
            elif way == "twice":
                runner.process.send_signal(signal.SIGTERM)
                time.sleep(generator.uniform(0.0, 1.5))
                runner.process.send_signal(signal.SIGINT)
            else:
                runner.process.send_signal(signal.SIGTERM if way == "sigterm" else signal.SIGINT)
            output = runner.ended()
            assert "Traceback" not in output, f"seed {seed}, {ways[run_id]}: {output[-3000:]}"
            if way != "sigkill" and faults.run_dir(run_id, agent).exists():
                recorded_expected.append((run_id, agent))
    finally:
        # A docker run orphaned by a SIGKILL may still be making its container.
        wait_until(lambda: not making(run_ids), "orphaned docker commands", 120)
        faults.prune()
    left = mine(run_ids)
    assert left == [], f"seed {seed}: {left}, {ways}"
    assert faults.left_on_disk() == [], f"seed {seed}: {ways}"
    for run_id, agent in recorded_expected:
        summary = faults.run_dir(run_id, agent) / "summary.json"
        assert summary.is_file(), f"seed {seed}: {ways[run_id]}"
    # A SIGKILLed runner's run is recorded by that prune, with the reason; every run
    # directory made shows in `runs results`.
    listed = ssebench("runs", "results", "--results", str(faults.results), "--json")
    assert listed.returncode == 0, listed.stderr
    by_id = {run["run_id"]: run for run in json.loads(listed.stdout)["runs"]}
    for run_id in run_ids:
        agent = ways[run_id].split()[1]
        if not faults.run_dir(run_id, agent).exists():
            continue  # killed before it made its run directory: there is no run
        assert run_id in by_id, f"seed {seed}: {ways[run_id]}"
        summary = json.loads((faults.run_dir(run_id, agent) / "summary.json").read_text())
        if ways[run_id].startswith("sigkill") and summary.get("runner_killed"):
            # Killed before it recorded the run (a quick run may be recorded first).
            listed_run = by_id[run_id]
            assert listed_run["status"] == "error", f"seed {seed}: {ways[run_id]}"
            assert listed_run["error_msg"] == KILLED_REASON, f"seed {seed}: {ways[run_id]}"
        else:
            assert summary.get("runner_killed") is None, f"seed {seed}: {ways[run_id]}"


def test_sigkill_during_grading_leaves_a_run_prune_records(faults: Faults) -> None:
    """The moment a random kill rarely hits: the agent's patch makes grading's tests
    sleep (tests/fixtures/agents/slow-grading), the runner is killed in them, and one
    prune removes the container and records the run with the reason."""
    run_id, alive_id = new_run_id("gradekill"), new_run_id("alive")
    alive = faults.start(alive_id)  # a run alive meanwhile, which the prune leaves alone
    runner = faults.start(run_id, "slow-grading", "--agents-dir", str(SLOW_GRADING))
    try:
        wait_until(lambda: grading_tests(run_id), what="grading's tests", seconds=180)
        runner.process.kill()
        runner.ended()
        wait_until(lambda: sleeper_started(alive_id), what="the sleeper agent to start")
        run_dir = faults.run_dir(run_id, "slow-grading")
        prune_records_the_killed_run(run_dir, faults.results, env=faults.env())
        assert mine([run_id]) == []
        assert containers_of([alive_id]) != []
        assert not (faults.run_dir(alive_id) / "summary.json").exists()
    finally:
        alive.process.send_signal(signal.SIGTERM)
        alive.ended()
    assert (faults.run_dir(alive_id) / "summary.json").is_file()
    assert mine([alive_id]) == [] and faults.left_on_disk() == []
