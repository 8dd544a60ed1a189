"""The Docker backend against a fake `docker` on PATH: the commands it runs, how it
keeps the run's environment off them, and how it maps docker's errors."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench import labels
from ssebench.backends.docker import DockerBackend
from ssebench.backends.docker.containers import DEADLINE_SLACK_SECONDS, mount_option, run_argv
from ssebench.backends.docker.names import container_name
from ssebench.errors import BackendError, UserError
from ssebench.extensions import (
    ARCHIVE_TARGET,
    REFERENCE_PATCH_TARGET,
    RESULTS_TARGET,
    Mount,
    NetworkPolicy,
    RunHandle,
    RunSpec,
    TaskResources,
)
from tests.unit.test_images import UNREACHABLE, FakeDocker, fake_docker_on_path

SENTINEL = "sentinel-secret-5d1e8a"
CONTAINER_ID = "c0ffee" * 10 + "abcd"


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDocker]:
    yield from fake_docker_on_path(tmp_path, monkeypatch)


def make_spec(tmp_path: Path, **options: object) -> RunSpec:
    run_dir = tmp_path / "run"
    (run_dir / "archive").mkdir(parents=True, exist_ok=True)
    values: dict[str, object] = {
        "run_id": "20240501-120000-abcdef",
        "task_name": "tiny-add",
        "mode": "sandbox",
        "image": "ssebench/agent-reference/tiny-add:1",
        "env": {"SSE_API_KEY": SENTINEL, "TIMEOUT": "60", "SSE_MODEL_NAME": "none"},
        "results": Mount(target=RESULTS_TARGET, source=str(run_dir)),
        "archive": Mount(target=ARCHIVE_TARGET, source=str(run_dir / "archive")),
        "labels": labels.run_labels(
            run_id="20240501-120000-abcdef",
            task_id="tiny-add",
            model="none",
            agent="reference",
            results=str(run_dir),
            reference_run=True,
        ),
        "timeout": 60,
    }
    values.update(options)
    return RunSpec(**values)  # type: ignore[arg-type]


def a_container(fake: FakeDocker, *, status: int = 0, sleep: float = 0.3) -> FakeDocker:
    """docker run creates the container, runs sleep seconds (or until stopped), exits."""
    name = container_name("20240501-120000-abcdef")
    fake.on("network", "inspect", stdout="net-id\n")
    fake.on(
        "container",
        "inspect",
        "--format",
        "{{.Id}}",
        name,
        if_exists="created",
        stdout=CONTAINER_ID + "\n",
    )
    fake.on("container", "inspect", status=1, stderr=f"Error: No such container: {name}\n")
    fake.on("run", create=("created",), sleep=sleep, until_exists="stopped", status=status)
    fake.on("stop", if_exists="created", create=("stopped",))
    fake.on("stop", status=1, stderr=f"Error response from daemon: No such container: {name}\n")
    return fake


# --- the docker run command ---------------------------------------------------------


def test_run_argv(tmp_path: Path) -> None:
    patch = tmp_path / "reference.patch"
    spec = make_spec(
        tmp_path,
        artifacts=(Mount(target=REFERENCE_PATCH_TARGET, source=str(patch), read_only=True),),
        platform="linux/arm64",
    )
    now = 1_700_000_000.0
    argv = run_argv(spec, name="ssebench-x", network="net", env_file="/dev/fd/9", now=now)
    assert argv[:4] == ["docker", "run", "--name", "ssebench-x"]
    assert "--rm" not in argv  # a stopped run stays until cleanup, runs remove or prune
    assert "--init" not in argv and "--detach" not in argv and "-d" not in argv
    assert argv[argv.index("--env-file") + 1] == "/dev/fd/9"
    assert argv[argv.index("--network") + 1] == "net"
    assert argv[argv.index("--platform") + 1] == "linux/arm64"
    assert argv[-1] == spec.image
    label_values = [argv[index + 1] for index, word in enumerate(argv) if word == "--label"]
    deadline = int(now) + 60 + DEADLINE_SLACK_SECONDS
    assert f"{labels.DEADLINE}={deadline}" in label_values
    assert f"{labels.RUN_ID}=20240501-120000-abcdef" in label_values
    mounts = [argv[index + 1] for index, word in enumerate(argv) if word == "--mount"]
    assert mounts == [
        f"type=bind,source={tmp_path / 'run'},target={RESULTS_TARGET}",
        f"type=bind,source={tmp_path / 'run' / 'archive'},target={ARCHIVE_TARGET}",
        f"type=bind,source={patch},target={REFERENCE_PATCH_TARGET},readonly",
    ]
    assert SENTINEL not in " ".join(argv)


def test_a_tasks_resources_are_its_limits_unless_the_user_set_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def limits(spec: RunSpec) -> tuple[str, str]:
        argv = run_argv(spec, name="n", network="n", env_file="e", now=0)
        return argv[argv.index("--cpus") + 1], argv[argv.index("--memory") + 1]

    monkeypatch.delenv("SSEBENCH_DOCKER_CPUS", raising=False)
    monkeypatch.delenv("SSEBENCH_DOCKER_MEMORY", raising=False)
    asking = make_spec(tmp_path, resources=TaskResources(cpus=1.5, memory_mb=2048))
    assert limits(asking) == ("1.5", "2048m")
    assert limits(make_spec(tmp_path))[1] == "4g"
    # More CPUs than the machine has would be refused by the engine: as many as it has.
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert limits(make_spec(tmp_path, resources=TaskResources(cpus=8)))[0] == "2"
    monkeypatch.setenv("SSEBENCH_DOCKER_CPUS", "3")
    monkeypatch.setenv("SSEBENCH_DOCKER_MEMORY", "6g")
    assert limits(asking) == ("3", "6g")


def test_a_restricted_run_gives_up_lookups_of_outside_names_at_once(tmp_path: Path) -> None:
    def dns_options(spec: RunSpec, network: str) -> list[str]:
        argv = run_argv(spec, name="n", network=network, env_file="e", now=0)
        return [argv[index + 1] for index, word in enumerate(argv) if word == "--dns-opt"]

    restricted = make_spec(tmp_path)
    assert restricted.network.egress == "restricted"
    assert dns_options(restricted, "net") == ["timeout:1", "attempts:1"]
    opened = make_spec(tmp_path, network=NetworkPolicy(egress="open"))
    assert dns_options(opened, "net") == []
    # Docker refuses DNS options for a container in another's network namespace.
    assert dns_options(restricted, "container:ssebench-x-env") == []


def test_no_run_is_removed_on_exit(tmp_path: Path) -> None:
    argv = run_argv(make_spec(tmp_path, keep=True), name="n", network="n", env_file="e", now=0)
    assert "--rm" not in argv


def test_mount_option_quotes_commas() -> None:
    mount = Mount(target="/t", source='/data/a,b "c"')
    assert mount_option(mount) == 'type=bind,"source=/data/a,b ""c""",target=/t'


def test_container_name_follows_docker_rules() -> None:
    assert container_name("20240501-120000-abcdef") == "ssebench-20240501-120000-abcdef"
    assert container_name("a b/c") == "ssebench-a-b-c"


# --- start, wait, stop, cleanup -----------------------------------------------------


def test_start_keeps_the_environment_off_the_command_line(
    fake_docker: FakeDocker, tmp_path: Path
) -> None:
    a_container(fake_docker, status=3)
    backend = DockerBackend()
    handle = backend.start(make_spec(tmp_path))
    run = next(record for record in fake_docker.records() if record["argv"][0] == "run")
    assert SENTINEL not in json.dumps(run["argv"])
    assert f"SSE_API_KEY={SENTINEL}\n" in run["env_file"]["content"]
    assert run["env_file"]["fifo"], "an env file on disk"
    assert handle.name == "ssebench-20240501-120000-abcdef"
    assert handle.backend == "docker"
    assert handle.details["pid"].isdigit()
    assert backend.wait(handle, 30) == 3
    backend.cleanup(handle)
    assert fake_docker.calls_of("rm", "--force", "--volumes", handle.name)


def test_a_failed_docker_run_leaves_nothing(fake_docker: FakeDocker, tmp_path: Path) -> None:
    fake_docker.on("network", "inspect")
    fake_docker.on("container", "inspect", status=1, stderr="Error: No such container\n")
    fake_docker.on("run", stderr="docker: Error response from daemon: No such image\n", status=125)
    with pytest.raises(BackendError) as raised:
        DockerBackend().start(make_spec(tmp_path))
    assert SENTINEL not in str(raised.value)
    assert "status 125" in str(raised.value)
    assert fake_docker.calls_of("rm", "--force")
    run = next(record for record in fake_docker.records() if record["argv"][0] == "run")
    assert run["env_file"]["fifo"], "an env file on disk"


def test_a_quick_container_gone_before_it_was_seen_still_counts(
    fake_docker: FakeDocker, tmp_path: Path
) -> None:
    fake_docker.on("network", "inspect")
    fake_docker.on("container", "inspect", status=1, stderr="Error: No such container\n")
    fake_docker.on("run", status=1)
    backend = DockerBackend()
    handle = backend.start(make_spec(tmp_path))
    assert backend.wait(handle, 30) == 1


def test_an_env_value_docker_cannot_take(fake_docker: FakeDocker, tmp_path: Path) -> None:
    fake_docker.on("network", "inspect")
    spec = make_spec(tmp_path, env={"SSE_API_KEY": f"{SENTINEL}\nmore"})
    with pytest.raises(BackendError, match="SSE_API_KEY") as raised:
        DockerBackend().start(spec)
    assert SENTINEL not in str(raised.value)
    assert not fake_docker.calls_of("run")


def test_sidecar_mode_without_its_pair_is_refused(tmp_path: Path) -> None:
    # The sidecar runs themselves: tests/unit/test_sidecar_docker.py.
    with pytest.raises(UserError, match=r"needs its RunSpec\.sidecar"):
        DockerBackend().start(make_spec(tmp_path, mode="sidecar"))


def test_stop_then_wait_gives_the_containers_status(
    fake_docker: FakeDocker, tmp_path: Path
) -> None:
    a_container(fake_docker, status=143, sleep=20)
    backend = DockerBackend()
    handle = backend.start(make_spec(tmp_path))
    with pytest.raises(TimeoutError):
        backend.wait(handle, 0.2)
    backend.stop(handle, 7.5)
    assert backend.wait(handle, 10) == 143
    assert fake_docker.calls_of("stop", "--time", "8", handle.name)
    backend.stop(handle, 1)  # twice is harmless
    backend.cleanup(handle)
    backend.cleanup(handle)


def test_stop_and_cleanup_of_a_run_that_never_started(fake_docker: FakeDocker) -> None:
    gone = "Error response from daemon: No such container: ssebench-x\n"
    fake_docker.on("stop", status=1, stderr=gone)
    fake_docker.on("rm", status=1, stderr=gone)
    handle = RunHandle(backend="docker", run_id="x", name="ssebench-x")
    DockerBackend().stop(handle, 1)
    DockerBackend().cleanup(handle)


def test_stop_reports_other_failures(fake_docker: FakeDocker) -> None:
    fake_docker.on("stop", status=1, stderr="Error response from daemon: permission denied\n")
    with pytest.raises(BackendError, match="permission denied"):
        DockerBackend().stop(RunHandle(backend="docker", run_id="x", name="ssebench-x"), 1)


def test_cleanup_leaves_a_kept_run(fake_docker: FakeDocker) -> None:
    handle = RunHandle(backend="docker", run_id="x", name="ssebench-x", details={"keep": "true"})
    DockerBackend().cleanup(handle)
    assert fake_docker.calls() == []


def test_wait_on_a_run_started_elsewhere(fake_docker: FakeDocker) -> None:
    fake_docker.on("wait", stdout="143\n")
    handle = RunHandle(backend="docker", run_id="x", name="ssebench-x", details={"pid": "1"})
    assert DockerBackend().wait(handle, 5) == 143


def test_wait_timeout_on_a_run_started_elsewhere(fake_docker: FakeDocker) -> None:
    fake_docker.on("wait", sleep=10, stdout="0\n")
    handle = RunHandle(backend="docker", run_id="x", name="ssebench-x")
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        DockerBackend().wait(handle, 0.3)
    assert time.monotonic() - started < 5


# --- finding runs -------------------------------------------------------------------


def inspected_container(name: str, status: str, exit_code: int) -> dict[str, object]:
    return {
        "Id": CONTAINER_ID,
        "Name": f"/{name}",
        "Created": "2024-05-01T12:00:00.123456789Z",
        "State": {"Status": status, "ExitCode": exit_code},
        "Config": {
            "Image": "ssebench/agent-reference/tiny-add:1",
            "Labels": {
                labels.RUN_ID: name.removeprefix("ssebench-"),
                labels.WEBUI: "true",
                labels.RESULTS: "/r/a,b",
            },
        },
        "HostConfig": {"AutoRemove": True},
    }


def test_list_runs_asks_docker_twice(fake_docker: FakeDocker) -> None:
    fake_docker.on("ps", stdout="id1\nid2\n")
    fake_docker.on(
        "container",
        "inspect",
        stdout=json.dumps(
            [
                inspected_container("ssebench-one", "running", 0),
                inspected_container("ssebench-two", "exited", 143),
            ]
        ),
    )
    runs = DockerBackend().list_runs({labels.WEBUI: "true", "ssebench.agent": "reference"})
    ps, inspect = fake_docker.calls()
    assert ps == [
        "ps", "--all", "--no-trunc", "--format", "{{.ID}}",
        "--filter", "label=ssebench.webui=true", "--filter", "label=ssebench.agent=reference",
    ]  # fmt: skip
    assert inspect == ["container", "inspect", "id1", "id2"]
    one, two = runs
    assert (one.run_id, one.state, one.exit_code) == ("one", "running", None)
    assert (two.run_id, two.state, two.exit_code) == ("two", "exited", 143)
    assert two.created_at == "2024-05-01T12:00:00Z"
    assert two.labels[labels.RESULTS] == "/r/a,b"
    assert two.image == "ssebench/agent-reference/tiny-add:1"
    assert two.handle == RunHandle(backend="docker", run_id="two", name="ssebench-two")


def test_list_runs_through_the_cli_leaves_out_kubernetes_pods(fake_docker: FakeDocker) -> None:
    """A pod's sandbox container on a dockershim node carries the pod's labels."""
    sandbox = inspected_container("k8s_POD_ssebench-two-x_ns_0000_0", "running", 0)
    sandbox["Config"]["Labels"]["io.kubernetes.pod.uid"] = "0000"  # type: ignore[index]
    fake_docker.on("ps", stdout="id1\nid2\n")
    fake_docker.on(
        "container",
        "inspect",
        stdout=json.dumps([inspected_container("ssebench-one", "running", 0), sandbox]),
    )
    runs = DockerBackend().list_runs({labels.WEBUI: "true"})
    assert [run.name for run in runs] == ["ssebench-one"]


def test_list_runs_with_none(fake_docker: FakeDocker) -> None:
    assert DockerBackend().list_runs({labels.RUN_ID: "nothing"}) == []
    assert len(fake_docker.calls()) == 1
    assert DockerBackend().inspect_run("nothing") is None


def test_logs(fake_docker: FakeDocker) -> None:
    fake_docker.on("logs", stdout="one\ntwo\n", stderr="three\n")
    handle = RunHandle(backend="docker", run_id="x", name="ssebench-x")
    assert sorted(DockerBackend().logs(handle, follow=True)) == ["one", "three", "two"]
    assert fake_docker.calls() == [["logs", "--follow", "ssebench-x"]]


def test_logs_reader_that_stops_early_ends_docker_logs(fake_docker: FakeDocker) -> None:
    fake_docker.on("logs", stdout="first\n", sleep=30)
    handle = RunHandle(backend="docker", run_id="x", name="ssebench-x")
    started = time.monotonic()
    lines = DockerBackend().logs(handle, follow=True)
    assert next(lines) == "first"
    lines.close()
    assert time.monotonic() - started < 10


def test_logs_of_a_missing_container(fake_docker: FakeDocker) -> None:
    fake_docker.on("logs", stderr="Error response from daemon: No such container: x\n", status=1)
    handle = RunHandle(backend="docker", run_id="x", name="ssebench-x")
    with pytest.raises(BackendError, match="No such container"):
        list(DockerBackend().logs(handle))


# --- reaching a run -----------------------------------------------------------------


def test_endpoint_is_the_address_on_the_runs_network(fake_docker: FakeDocker) -> None:
    networks = {"bridge": {"IPAddress": "172.17.0.2"}, "other": {"IPAddress": "10.0.0.9"}}
    fake_docker.on("container", "inspect", stdout=f"true {json.dumps(networks)}\n")
    handle = RunHandle(
        backend="docker", run_id="x", name="ssebench-x", details={"network": "other"}
    )
    assert DockerBackend().endpoint(handle, 4263) == "http://10.0.0.9:4263"


def test_endpoint_of_a_finished_run(fake_docker: FakeDocker) -> None:
    fake_docker.on("container", "inspect", stdout="false {}\n")
    with pytest.raises(BackendError, match="not running"):
        DockerBackend().endpoint(RunHandle(backend="docker", run_id="x", name="n"), 4263)


def test_exec_argv_passes_names_only() -> None:
    handle = RunHandle(backend="docker", run_id="x", name="ssebench-x")
    argv = DockerBackend().exec_argv(
        handle,
        ["sh", "-c", "echo $HOME; ls"],
        user="model",
        workdir="/src/tiny",
        tty=True,
        stdin=True,
        env_names=["SSE_API_KEY"],
    )
    assert argv == [
        "docker", "exec", "--interactive", "--tty", "--user", "model", "--workdir", "/src/tiny",
        "--env", "SSE_API_KEY", "ssebench-x", "sh", "-c", "echo $HOME; ls",
    ]  # fmt: skip
    with pytest.raises(BackendError):
        DockerBackend().exec_argv(handle, ["true"], env_names=[f"SSE_API_KEY={SENTINEL}"])


# --- copying out of an image --------------------------------------------------------


def test_copy_from_image(fake_docker: FakeDocker, tmp_path: Path) -> None:
    fake_docker.on("create", stdout=CONTAINER_ID + "\n")
    dest = tmp_path / "reference.patch"
    DockerBackend().copy_from_image("img:1", "/ssebench/task/reference.patch", dest, "linux/amd64")
    create, copy, remove = fake_docker.calls()
    assert create[:5] == ["create", "--pull", "never", "--platform", "linux/amd64"]
    assert copy == ["cp", f"{CONTAINER_ID}:/ssebench/task/reference.patch", str(dest)]
    assert remove[:2] == ["rm", "--force"] and remove[-1] == CONTAINER_ID


def test_copy_from_image_failure_still_removes_the_container(
    fake_docker: FakeDocker, tmp_path: Path
) -> None:
    fake_docker.on("create", stdout=CONTAINER_ID + "\n")
    fake_docker.on("cp", status=1, stderr="Error: Could not find the file /nope\n")
    with pytest.raises(RuntimeError, match="Could not find the file"):
        DockerBackend().copy_from_image("img:1", "/nope", tmp_path / "x", None)
    assert fake_docker.calls()[-1][:2] == ["rm", "--force"]


# --- docker missing or unreachable --------------------------------------------------


def test_unreachable_daemon_is_one_clear_line(fake_docker: FakeDocker) -> None:
    fake_docker.on("ps", stderr=UNREACHABLE + "\n", status=1)
    with pytest.raises(UserError) as raised:
        DockerBackend().list_runs({})
    assert str(raised.value) == (
        "Docker is not reachable: Cannot connect to the Docker daemon at "
        "unix:///var/run/docker.sock. Is the docker daemon running? Start the Docker daemon "
        "(sudo dockerd, or systemctl start docker) or set DOCKER_HOST."
    )


def test_docker_not_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    # No daemon either: with one, the Engine API would make the volume and network first.
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    with pytest.raises(UserError, match="Docker is not reachable: the docker command is not"):
        DockerBackend().start(make_spec(tmp_path, network=NetworkPolicy(egress="open")))
