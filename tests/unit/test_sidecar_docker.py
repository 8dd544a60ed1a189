"""The Docker backend's sidecar runs against a fake `docker` on PATH: the two containers'
commands and labels, the volumes, and how wait, stop, cleanup, logs and list_runs treat
the pair."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ssebench import labels
from ssebench.backends.docker import DockerBackend
from ssebench.backends.docker.containers import sidecar_argvs
from ssebench.backends.docker.names import (
    agent_container_name,
    archive_volume_name,
    container_name,
)
from ssebench.errors import BackendError
from ssebench.extensions import (
    ARCHIVE_TARGET,
    REFERENCE_PATCH_TARGET,
    SOCKETS_TARGET,
    Mount,
    RunHandle,
    RunSpec,
    SidecarPair,
)
from tests.unit.test_docker_backend import SENTINEL, make_spec
from tests.unit.test_images import FakeDocker, fake_docker_on_path

PAIR_ID = "20240501-120000-abcdef"
ENVIRONMENT = container_name(PAIR_ID)
AGENT = agent_container_name(PAIR_ID)
VOLUMES = (f"ssebench-{PAIR_ID}-source", f"ssebench-{PAIR_ID}-sockets")


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDocker]:
    yield from fake_docker_on_path(tmp_path, monkeypatch)


def sidecar_spec(tmp_path: Path, **options: object) -> RunSpec:
    spec = make_spec(tmp_path, mode="sidecar", image="ssebench/agent-reference/sidecar:1")
    pair = SidecarPair(
        run_id=PAIR_ID,
        environment_image="ssebench/tool/tiny-add:1",
        source_dir="/src/tiny",
        volumes=VOLUMES,
        env=dict(spec.env),
    )
    return replace(spec, sidecar=pair, **options)  # type: ignore[arg-type]


def words_after(argv: list[str], option: str) -> list[str]:
    return [argv[index + 1] for index, word in enumerate(argv) if word == option]


def test_the_two_containers(tmp_path: Path) -> None:
    patch = tmp_path / "reference.patch"
    artifact = Mount(target=REFERENCE_PATCH_TARGET, source=str(patch), read_only=True)
    spec = sidecar_spec(tmp_path, artifacts=(artifact,))
    assert spec.sidecar is not None
    environment, agent = sidecar_argvs(
        spec,
        spec.sidecar,
        network="net",
        env_files=("/dev/fd/8", "/dev/fd/9"),
        now=1_700_000_000,
    )
    # The environment container: detached, first, with the run's labels and the pair's.
    assert environment[:5] == ["docker", "run", "--name", ENVIRONMENT, "--detach"]
    assert environment[-1] == "ssebench/tool/tiny-add:1"
    assert words_after(environment, "--network") == ["net"]
    assert words_after(environment, "--env-file") == ["/dev/fd/8"]
    environment_labels = dict(label.split("=", 1) for label in words_after(environment, "--label"))
    assert environment_labels[labels.RUN_ID] == PAIR_ID
    assert environment_labels[labels.WEBUI] == "true"
    assert environment_labels[labels.PAIR] == PAIR_ID
    assert labels.DEADLINE in environment_labels
    run_dir = tmp_path / "run"
    shared = [
        f"type=volume,source={VOLUMES[0]},target=/src/tiny",
        f"type=volume,source={VOLUMES[1]},target={SOCKETS_TARGET}",
        f"type=bind,source={run_dir},target=/var/lib/ssebench/results",
        f"type=bind,source={run_dir / 'archive'},target=/tmp/sse-archive",
    ]
    assert words_after(environment, "--mount") == shared
    # The agent container: in the foreground, in the environment's network namespace,
    # with the pair's label only, and the artifacts; nothing of the task.
    assert agent[:4] == ["docker", "run", "--name", AGENT]
    assert "--detach" not in agent
    assert agent[-1] == "ssebench/agent-reference/sidecar:1"
    assert words_after(agent, "--network") == [f"container:{ENVIRONMENT}"]
    assert words_after(agent, "--env-file") == ["/dev/fd/9"]
    assert words_after(agent, "--label") == [f"{labels.PAIR}={PAIR_ID}"]
    assert words_after(agent, "--mount") == [
        *shared,
        f"type=bind,source={patch},target={REFERENCE_PATCH_TARGET},readonly",
    ]
    for argv in (environment, agent):
        assert "--rm" not in argv and words_after(argv, "--cap-drop") == ["ALL"]
        assert words_after(argv, "--security-opt") == ["no-new-privileges"]
        assert SENTINEL not in " ".join(argv)


def test_no_pair_is_removed_on_exit(tmp_path: Path) -> None:
    spec = sidecar_spec(tmp_path, keep=True)
    assert spec.sidecar is not None
    both = sidecar_argvs(spec, spec.sidecar, network="n", env_files=("e", "a"), now=0)
    assert all("--rm" not in argv for argv in both)


def a_pair(fake: FakeDocker, *, agent_status: int = 0) -> FakeDocker:
    fake.on("network", "inspect", stdout="net-id\n")
    fake.on("run", "--name", ENVIRONMENT, "--detach", stdout="env-id\n", create=("env",))
    fake.on("logs", "--follow", ENVIRONMENT)
    fake.on("container", "inspect", "--format", "{{.Id}}", AGENT, if_exists="agent")
    fake.on("container", "inspect", status=1, stderr="Error: No such container\n")
    fake.on("run", "--name", AGENT, create=("agent",), sleep=0.3, status=agent_status)
    fake.on("wait", ENVIRONMENT, stdout="0\n")
    fake.on(
        "volume",
        "ls",
        "--quiet",
        "--filter",
        f"label={labels.PAIR}={PAIR_ID}",
        unless_exists="volumes-gone",
        stdout="\n".join(VOLUMES) + "\n",
    )
    fake.on("volume", "rm", create=("volumes-gone",))
    return fake


def test_start_wait_and_cleanup_of_a_pair(fake_docker: FakeDocker, tmp_path: Path) -> None:
    a_pair(fake_docker, agent_status=3)
    backend = DockerBackend()
    handle = backend.start(sidecar_spec(tmp_path))
    assert handle.name == AGENT
    assert handle.details["pair"] == PAIR_ID and handle.details["environment"] == ENVIRONMENT
    # In this order; the follower of the environment's output runs beside the agent's.
    commands = [
        argv[:4]
        for argv in fake_docker.calls()
        if argv[0] == "run" or argv[:2] == ["volume", "create"]
    ]
    assert commands == [
        ["volume", "create", "--label", f"{labels.ARCHIVE_OF}={PAIR_ID}"],
        ["volume", "create", "--label", f"{labels.PAIR}={PAIR_ID}"],
        ["volume", "create", "--label", f"{labels.PAIR}={PAIR_ID}"],
        ["run", "--name", ENVIRONMENT, "--detach"],
        ["run", "--name", AGENT, "--pull"],
    ]
    archive_create, *pair_creates = fake_docker.calls_of("volume", "create")
    assert archive_create[-1] == archive_volume_name(PAIR_ID)
    for volume, create in zip(VOLUMES, pair_creates, strict=True):
        assert create[:4] == ["volume", "create", "--label", f"{labels.PAIR}={PAIR_ID}"]
        assert create[-1] == volume
        # The runner's labels: prune removes volumes whose runner died before the
        # environment container existed.
        assert f"{labels.RUNNER_PID}={os.getpid()}" in create
    # Both containers mount the run's archive volume, never a folder of the host.
    archive_mount = f"type=volume,source={archive_volume_name(PAIR_ID)},target={ARCHIVE_TARGET}"
    for argv in fake_docker.calls_of("run"):
        assert archive_mount in argv
        assert not any(str(tmp_path / "run" / "archive") in word for word in argv)
    # By container: the environment's `docker run` has --detach.
    env_files = {
        ("environment.env" if "--detach" in record["argv"] else "agent.env"): record["env_file"]
        for record in fake_docker.records()
        if "env_file" in record
    }
    assert set(env_files) == {"environment.env", "agent.env"}
    for env_file in env_files.values():
        assert f"SSE_API_KEY={SENTINEL}\n" in env_file["content"]
        assert "SSE_MODE=sidecar\n" in env_file["content"]
        assert env_file["fifo"] and env_file["path"].startswith("/dev/fd/"), "an env file on disk"
    assert "SSE_SIDECAR_ROLE=environment\n" in env_files["environment.env"]["content"]
    assert "SSE_SIDECAR_ROLE" not in env_files["agent.env"]["content"]

    # The agent container's status is the run's, once the environment has ended too.
    assert backend.wait(handle, 30) == 3
    assert fake_docker.calls_of("wait", ENVIRONMENT)
    # The follower is a process of its own: its call is on record once wait reaped it.
    assert fake_docker.calls_of("logs", "--follow", ENVIRONMENT)
    backend.cleanup(handle)
    removed = [argv[-1] for argv in fake_docker.calls_of("rm", "--force")]
    assert removed[:2] == [AGENT, ENVIRONMENT]
    assert fake_docker.calls_of("volume", "rm", "--force", *VOLUMES)


def test_a_failed_agent_container_leaves_nothing(fake_docker: FakeDocker, tmp_path: Path) -> None:
    fake_docker.on("run", "--name", AGENT, status=125, stderr="docker: No such image\n")
    a_pair(fake_docker)
    with pytest.raises(BackendError, match="status 125") as raised:
        DockerBackend().start(sidecar_spec(tmp_path, keep=True))
    assert SENTINEL not in str(raised.value)
    removed = [argv[-1] for argv in fake_docker.calls_of("rm", "--force")]
    assert removed[:2] == [AGENT, ENVIRONMENT]
    assert fake_docker.calls_of("volume", "rm")


def test_a_failed_volume_leaves_nothing(fake_docker: FakeDocker, tmp_path: Path) -> None:
    fake_docker.on(
        "volume",
        "create",
        "--label",
        f"{labels.PAIR}={PAIR_ID}",
        status=1,
        stderr="Error response from daemon: no space\n",
    )
    a_pair(fake_docker)
    with pytest.raises(BackendError, match=r"Cannot create the volume .*: no space"):
        DockerBackend().start(sidecar_spec(tmp_path))
    assert not fake_docker.calls_of("run")
    assert fake_docker.calls_of("volume", "rm")


def pair_handle(**details: str) -> RunHandle:
    return RunHandle(
        backend="docker",
        run_id=PAIR_ID,
        name=AGENT,
        details={"pair": PAIR_ID, "environment": ENVIRONMENT, **details},
    )


def test_stop_stops_the_agent_then_the_environment(fake_docker: FakeDocker) -> None:
    DockerBackend().stop(pair_handle(), 10)
    assert fake_docker.calls_of("stop") == [
        ["stop", "--time", "10", AGENT],
        ["stop", "--time", "10", ENVIRONMENT],
    ]


def test_cleanup_leaves_a_kept_pair(fake_docker: FakeDocker) -> None:
    DockerBackend().cleanup(pair_handle(keep="true"))
    assert fake_docker.calls() == []


def test_list_runs_names_the_pair(fake_docker: FakeDocker) -> None:
    container = {
        "Name": f"/{ENVIRONMENT}",
        "State": {"Status": "running", "ExitCode": 0},
        "Config": {
            "Image": "ssebench/tool/tiny-add:1",
            "Labels": {labels.RUN_ID: PAIR_ID, labels.WEBUI: "true", labels.PAIR: PAIR_ID},
        },
    }
    fake_docker.on("ps", stdout="id1\n")
    fake_docker.on("container", "inspect", stdout=json.dumps([container]))
    [run] = DockerBackend().list_runs({labels.RUN_ID: PAIR_ID})
    assert run.name == ENVIRONMENT
    assert run.handle == pair_handle()
    # Reaching the run: the environment container's address and shell.
    argv = DockerBackend().exec_argv(run.handle, ["id"])
    assert argv == ["docker", "exec", ENVIRONMENT, "id"]


def test_logs_of_a_pair_in_the_order_written(fake_docker: FakeDocker) -> None:
    fake_docker.on(
        "logs",
        "--timestamps",
        ENVIRONMENT,
        stdout="2024-05-01T12:00:00.000000001Z one\n2024-05-01T12:00:00.000000003Z three\n",
    )
    fake_docker.on("logs", "--timestamps", AGENT, stdout="2024-05-01T12:00:00.000000002Z two\n")
    assert list(DockerBackend().logs(pair_handle())) == ["one", "two", "three"]


def test_logs_of_a_pair_whose_agent_container_is_gone(fake_docker: FakeDocker) -> None:
    fake_docker.on("logs", "--timestamps", ENVIRONMENT, stdout="2024-05-01T12:00:00Z one\n")
    fake_docker.on("logs", status=1, stderr="Error response from daemon: No such container\n")
    assert list(DockerBackend().logs(pair_handle())) == ["one"]
    # Neither container there: that is an error.
    with pytest.raises(BackendError):
        list(DockerBackend().logs(replace(pair_handle(), details={"environment": "x"})))
