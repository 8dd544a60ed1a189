"""Open-egress runs of the Docker backend against a fake `docker` on PATH: the container
is made on the default bridge, connected to the stack's internal network (where the
proxy is) before it starts, then started attached; a failure on the way leaves nothing."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ssebench.backends.docker import AGENTS_NETWORK, DockerBackend, container_name, create_argv
from ssebench.errors import BackendError
from ssebench.extensions import NetworkPolicy, RunSpec
from tests.unit.test_docker_backend import CONTAINER_ID, SENTINEL, make_spec
from tests.unit.test_images import FakeDocker, fake_docker_on_path
from tests.unit.test_sidecar_docker import AGENT, ENVIRONMENT, a_pair, sidecar_spec

NAME = container_name("20240501-120000-abcdef")
OPEN = NetworkPolicy(egress="open")


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDocker]:
    yield from fake_docker_on_path(tmp_path, monkeypatch)


def open_spec(tmp_path: Path) -> RunSpec:
    return make_spec(tmp_path, network=OPEN)


def a_created_container(fake: FakeDocker, *, connect_status: int = 0) -> FakeDocker:
    """docker create makes the container; docker start --attach runs it, then exits 5."""
    fake.on("network", "inspect", stdout="net-id\n")
    fake.on(
        "network",
        "connect",
        status=connect_status,
        stderr="Error response from daemon: network is gone\n" if connect_status else "",
    )
    fake.on("container", "inspect", "--format", "{{.Id}}", NAME, if_exists="created")
    fake.on("container", "inspect", status=1, stderr="Error: No such container\n")
    fake.on("create", stdout=CONTAINER_ID + "\n", create=("created",))
    fake.on("start", "--attach", NAME, sleep=0.2, status=5)
    fake.on("rm", remove=("created",))
    return fake


def test_create_argv_is_the_run_command_without_starting() -> None:
    run = ["docker", "run", "--name", "n", "--detach", "--rm", "--network", "bridge", "image"]
    assert create_argv(run) == [
        "docker",
        "create",
        "--name",
        "n",
        "--rm",
        "--network",
        "bridge",
        "image",
    ]
    with pytest.raises(ValueError):
        create_argv(["docker", "exec", "n"])


def test_an_open_run_is_connected_to_the_proxy_network_before_it_starts(
    fake_docker: FakeDocker, tmp_path: Path
) -> None:
    a_created_container(fake_docker)
    backend = DockerBackend()
    handle = backend.start(open_spec(tmp_path))
    assert backend.wait(handle, 30) == 5
    steps = [
        argv for argv in fake_docker.calls() if argv[0] in ("create", "network", "start", "run")
    ]
    assert [argv[:2] for argv in steps] == [
        ["network", "inspect"],
        ["create", "--name"],
        ["network", "connect"],
        ["start", "--attach"],
    ]
    create, connect = steps[1], steps[2]
    assert create[create.index("--network") + 1] == "bridge"
    assert "--rm" in create and "--pull" in create
    assert connect == ["network", "connect", AGENTS_NETWORK, NAME]
    record = next(record for record in fake_docker.records() if record["argv"][0] == "create")
    assert SENTINEL not in " ".join(record["argv"])
    assert f"SSE_API_KEY={SENTINEL}\n" in record["env_file"]["content"]
    assert not Path(record["env_file"]["path"]).exists(), "the env file outlived start"
    assert handle.details["network"] == "bridge"
    backend.cleanup(handle)


def test_a_failed_connect_leaves_nothing(fake_docker: FakeDocker, tmp_path: Path) -> None:
    a_created_container(fake_docker, connect_status=1)
    with pytest.raises(
        BackendError, match="to the network ssebench_agents: network is gone"
    ) as raised:
        DockerBackend().start(open_spec(tmp_path))
    assert SENTINEL not in str(raised.value)
    assert fake_docker.calls_of("rm", "--force", "--volumes", NAME)
    assert not fake_docker.calls_of("start")
    assert not (fake_docker.root / "created").exists()


def test_a_failed_create_reports_dockers_reason(fake_docker: FakeDocker, tmp_path: Path) -> None:
    fake_docker.on("network", "inspect", stdout="net-id\n")
    fake_docker.on("create", status=125, stderr="Error response from daemon: No such image\n")
    with pytest.raises(
        BackendError, match=r"docker create failed for the container .*No such image"
    ):
        DockerBackend().start(open_spec(tmp_path))
    assert not fake_docker.calls_of("network", "connect")
    assert fake_docker.calls_of("rm", "--force", "--volumes", NAME)


def test_an_open_sidecar_pair_connects_its_environment_container(
    fake_docker: FakeDocker, tmp_path: Path
) -> None:
    a_pair(fake_docker)
    fake_docker.on("create", "--name", ENVIRONMENT, stdout="env-id\n", create=("env",))
    backend = DockerBackend()
    handle = backend.start(replace(sidecar_spec(tmp_path), network=OPEN))
    assert handle.name == AGENT
    backend.wait(handle, 30)
    steps = [
        argv[:3] for argv in fake_docker.calls() if argv[0] in ("create", "network", "start", "run")
    ]
    assert steps == [
        ["network", "inspect", "--format"],
        ["create", "--name", ENVIRONMENT],
        ["network", "connect", AGENTS_NETWORK],
        ["start", ENVIRONMENT],
        ["run", "--name", AGENT],
    ]
    [create] = fake_docker.calls_of("create")
    assert "--detach" not in create
    assert create[create.index("--network") + 1] == "bridge"
    [agent] = fake_docker.calls_of("run", "--name", AGENT)
    assert agent[agent.index("--network") + 1] == f"container:{ENVIRONMENT}"
    backend.cleanup(handle)


def test_an_open_sidecar_pair_whose_connect_fails_leaves_nothing(
    fake_docker: FakeDocker, tmp_path: Path
) -> None:
    fake_docker.on("network", "connect", status=1, stderr="Error: network is gone\n")
    a_pair(fake_docker)
    with pytest.raises(BackendError, match="network is gone"):
        DockerBackend().start(replace(sidecar_spec(tmp_path), network=OPEN))
    assert not fake_docker.calls_of("start")
    assert not fake_docker.calls_of("run")
    assert fake_docker.calls_of("rm", "--force", "--volumes", ENVIRONMENT)
    assert fake_docker.calls_of("volume", "rm")
