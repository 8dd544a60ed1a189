"""A Docker run's own network and its firewall rules, against a fake `docker` and a
fake `iptables` on PATH: what is made, with which arguments and rules, what a failure
leaves (nothing), and what cleanup and prune remove."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ssebench import labels
from ssebench.backends.docker import DockerBackend
from ssebench.backends.docker import cleanup as docker_cleanup
from ssebench.backends.docker import firewall as docker_firewall
from ssebench.backends.docker import network as docker_network
from ssebench.backends.docker.names import container_name
from ssebench.backends.docker.network import RunNetwork, bridge_name, network_name
from ssebench.backends.kubernetes.manifests import network_policy
from ssebench.backends.network_ranges import PRIVATE_IPV4_RANGES
from ssebench.errors import BackendError
from ssebench.extensions import NetworkPolicy, RunHandle
from ssebench.proxy.stack_service import SERVICE_URL
from tests.unit.test_docker_backend import SENTINEL, a_container, make_spec
from tests.unit.test_images import FakeDocker, fake_docker_on_path
from tests.unit.test_sidecar_docker import AGENT, ENVIRONMENT, PAIR_ID, a_pair, sidecar_spec

RUN_ID = "20240501-120000-abcdef"
NETWORK = network_name(RUN_ID)
BRIDGE = bridge_name(NETWORK)
OPEN = NetworkPolicy(egress="open")
PROXY_ID = "feed" * 16


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDocker]:
    yield from fake_docker_on_path(tmp_path, monkeypatch)


def option_values(argv: list[str], option: str) -> list[str]:
    return [argv[index + 1] for index, word in enumerate(argv) if word == option]


# --- names, arguments, rules ---------------------------------------------------------


def test_names_are_per_run_and_bridges_fit_linux() -> None:
    assert network_name("a b/c") == "ssebench-net-a-b-c"
    bridges = {bridge_name(network_name(f"run-{index}")) for index in range(1000)}
    assert len(bridges) == 1000
    assert all(len(bridge) <= 15 and bridge.startswith("sse-") for bridge in bridges)


@pytest.mark.parametrize("open_egress", [False, True])
def test_the_network_is_internal_unless_open(open_egress: bool) -> None:
    network = RunNetwork(RUN_ID, open_egress, needs_proxy=False, labels={"k": "v"})
    arguments = network.create_arguments()
    assert arguments[:4] == ["network", "create", "--driver", "bridge"]
    assert ("--internal" in arguments) is not open_egress
    assert option_values(arguments, "--opt") == [f"com.docker.network.bridge.name={BRIDGE}"]
    assert option_values(arguments, "--label") == ["k=v", f"{labels.PAIR}={RUN_ID}"]
    assert arguments[-1] == NETWORK


def test_a_restricted_run_has_only_the_host_rule() -> None:
    [rule] = RunNetwork(RUN_ID, False, needs_proxy=True, labels={}).rules()
    assert rule.argv("-I") == [
        "iptables", "-w", "30", "-I", "INPUT", "-i", BRIDGE,
        "-m", "conntrack", "!", "--ctstate", "ESTABLISHED,RELATED",
        "-m", "comment", "--comment", f"ssebench:{NETWORK}", "-j", "DROP",
    ]  # fmt: skip


def test_an_open_run_drops_every_private_range_leaving_its_bridge() -> None:
    rules = RunNetwork(RUN_ID, True, needs_proxy=True, labels={}).rules()
    forward = [rule for rule in rules if rule.chain == "DOCKER-USER"]
    assert [option_values(list(rule.spec), "-d")[0] for rule in forward] == list(
        PRIVATE_IPV4_RANGES
    )
    for rule in forward:
        words = list(rule.spec)
        # Leaving the bridge only: the run and the proxy on it still talk.
        assert words[:5] == ["-i", BRIDGE, "!", "-o", BRIDGE]
        assert words[-2:] == ["-j", "DROP"]
        assert docker_firewall.network_of(rule) == NETWORK
    assert [rule.chain for rule in rules].count("INPUT") == 1


def test_kubernetes_excludes_the_same_ranges() -> None:
    spec = make_spec(Path("/nowhere"), network=OPEN)
    proxy = type("Proxy", (), {"namespace": "p", "selector": {"a": "b"}, "port": 4000})()
    policy = network_policy(spec, "n", {}, {}, proxy)  # type: ignore[arg-type]
    [open_block] = [rule for rule in policy["spec"]["egress"] if "ports" not in rule]
    assert open_block["to"][0]["ipBlock"]["except"] == list(PRIVATE_IPV4_RANGES)


LISTING = f"""-N DOCKER-USER
-A DOCKER-USER -d 10.0.0.0/8 -i {BRIDGE} ! -o {BRIDGE} -m comment --comment "ssebench:{NETWORK}" -j DROP
-A DOCKER-USER -d 10.0.0.0/8 -i sse-other ! -o sse-other -m comment --comment "ssebench:ssebench-net-other" -j DROP
-A DOCKER-USER -s 1.2.3.4/32 -j DROP
-A DOCKER-USER -j RETURN
"""  # noqa: E501


def test_remove_deletes_only_the_networks_own_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def fake(argv: list[str]) -> subprocess.CompletedProcess[str]:
        calls.append(list(argv))
        listing = LISTING if argv[-1] == "DOCKER-USER" and "-S" in argv else ""
        return subprocess.CompletedProcess(argv, 0, listing, "")

    monkeypatch.setattr(docker_firewall, "_iptables", fake)
    assert docker_firewall.networks_with_rules() == {NETWORK, "ssebench-net-other"}
    calls.clear()
    docker_firewall.remove(NETWORK)
    deletions = [argv for argv in calls if "-D" in argv]
    assert deletions == [
        [
            "iptables", "-w", "30", "-D", "DOCKER-USER", "-d", "10.0.0.0/8", "-i", BRIDGE,
            "!", "-o", BRIDGE, "-m", "comment", "--comment", f"ssebench:{NETWORK}", "-j", "DROP",
        ]
    ]  # fmt: skip


@pytest.mark.parametrize("containers_gone", [False, True])
def test_the_rules_go_beside_the_network_only_once_the_containers_are_gone(
    monkeypatch: pytest.MonkeyPatch, containers_gone: bool
) -> None:
    """With a run's container on it, a network must not be left without its rules; once
    the containers are gone, the rules' deletion (15 to 35 ms of iptables) need not
    wait for dockerd's teardown of the bridge."""
    steps: list[str] = []
    rules_removed = threading.Event()

    def remove_network(run_id: str, name: str) -> None:
        if containers_gone:
            assert rules_removed.wait(10), "the rules were not removed beside the network"
        steps.append(f"network {name}")

    def remove_rules(name: str) -> None:
        steps.append(f"rules {name}")
        rules_removed.set()

    monkeypatch.setattr(docker_network, "_remove_network_and_proxy", remove_network)
    monkeypatch.setattr(docker_firewall, "remove", remove_rules)
    docker_network.remove(RUN_ID, containers_gone=containers_gone)
    expected = [f"network {NETWORK}", f"rules {NETWORK}"]
    assert steps == (expected[::-1] if containers_gone else expected)


def test_a_runs_cleanup_removes_its_rules_beside_its_network(
    fake_docker: FakeDocker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    removed: list[tuple[str, bool]] = []
    monkeypatch.setattr(
        docker_network,
        "remove",
        lambda run_id, containers_gone=False: removed.append((run_id, containers_gone)),
    )
    a_container(fake_docker)
    backend = DockerBackend()
    handle = backend.start(make_spec(tmp_path))
    backend.wait(handle, 30)
    backend.cleanup(handle)
    assert removed == [(RUN_ID, True)]
    steps = [argv[:2] for argv in fake_docker.calls() if argv[0] == "rm"]
    assert steps and steps[0] == ["rm", "--force"], "the container went first"


def test_a_failed_install_takes_back_what_it_inserted(fake_docker: FakeDocker) -> None:
    rules = RunNetwork(RUN_ID, True, needs_proxy=False, labels={}).rules()
    answers = iter([0, 0, 1])

    def fake(argv: list[str]) -> subprocess.CompletedProcess[str]:
        status = next(answers, 0) if "-I" in argv else 0
        return subprocess.CompletedProcess(argv, status, "", "iptables: No chain by that name.")

    with pytest.MonkeyPatch.context() as patch:
        seen: list[list[str]] = []
        patch.setattr(docker_firewall, "_iptables", lambda argv: (seen.append(argv), fake(argv))[1])
        with pytest.raises(docker_firewall.FirewallError, match="No chain by that name"):
            docker_firewall.install(rules)
    inserted = [argv[4:] for argv in seen if argv[3] == "-I"]
    deleted = [argv[4:] for argv in seen if argv[3] == "-D"]
    assert deleted == inserted[:2]


# --- the backend --------------------------------------------------------------------


def a_proxy(fake: FakeDocker) -> FakeDocker:
    fake.on("ps", "--quiet", "--no-trunc", "--filter", stdout=PROXY_ID + "\n")
    return fake


def model_spec(tmp_path: Path, **options: object):  # type: ignore[no-untyped-def]
    spec = make_spec(tmp_path, **options)
    return replace(spec, env={**spec.env, "SSE_BASE_URL": SERVICE_URL})


def test_a_restricted_reference_run_gets_an_internal_network_and_no_proxy(
    fake_docker: FakeDocker, tmp_path: Path
) -> None:
    a_container(fake_docker, status=3)
    backend = DockerBackend()
    handle = backend.start(make_spec(tmp_path))
    [create] = fake_docker.calls_of("network", "create")
    assert "--internal" in create and create[-1] == NETWORK
    created_labels = option_values(create, "--label")
    assert f"{labels.PAIR}={RUN_ID}" in created_labels
    assert f"{labels.RUNNER_PID}={os.getpid()}" in created_labels
    assert any(label.startswith(f"{labels.DEADLINE}=") for label in created_labels)
    [run] = fake_docker.calls_of("run")
    assert option_values(run, "--network") == [NETWORK]
    assert not fake_docker.calls_of("network", "connect")
    assert handle.details["network"] == NETWORK
    [host_rule] = fake_docker.iptables_calls()
    assert host_rule[2:4] == ["-I", "INPUT"] and BRIDGE in host_rule
    assert backend.wait(handle, 30) == 3
    backend.cleanup(handle)
    steps = [argv[:2] for argv in fake_docker.calls() if argv[0] in ("rm", "network")]
    # The network after the container, which holds an endpoint on it.
    assert steps.index(["rm", "--force"]) < steps.index(["network", "rm"])


def test_wait_begins_the_removal_of_the_network_that_cleanup_then_waits_for(
    fake_docker: FakeDocker, tmp_path: Path
) -> None:
    """Once the container has ended its network goes (dockerd tearing the bridge down,
    most of a clean-up) while the runner reads the archive out; cleanup removes it once."""
    a_container(fake_docker)
    backend = DockerBackend()
    handle = backend.start(make_spec(tmp_path))
    assert backend.wait(handle, 30) == 0
    deadline = time.monotonic() + 30
    while not fake_docker.calls_of("network", "rm", NETWORK):
        assert time.monotonic() < deadline, "wait began no removal of the network"
        time.sleep(0.05)
    backend.cleanup(handle)
    assert len(fake_docker.calls_of("network", "rm", NETWORK)) == 1
    steps = [argv[:2] for argv in fake_docker.calls() if argv[0] in ("rm", "network")]
    assert steps.index(["rm", "--force"]) < steps.index(["network", "rm"])


def test_a_kept_run_keeps_its_network_after_wait(fake_docker: FakeDocker, tmp_path: Path) -> None:
    a_container(fake_docker)
    backend = DockerBackend()
    handle = backend.start(make_spec(tmp_path, keep=True))
    backend.wait(handle, 30)
    backend.cleanup(handle)
    assert RUN_ID not in docker_cleanup._removals, "no removal was begun"
    assert not fake_docker.calls_of("network", "rm")


def test_a_wait_on_a_run_of_another_process_removes_nothing(fake_docker: FakeDocker) -> None:
    """A run found by its labels (`ssebench runs`, the web UI) is its own runner's to
    clean up: waiting for it must not take its container or network away."""
    fake_docker.on("wait", stdout="0\n")
    handle = RunHandle(backend="docker", run_id=RUN_ID, name=container_name(RUN_ID))
    assert DockerBackend().wait(handle, 30) == 0
    assert RUN_ID not in docker_cleanup._removals, "no removal was begun"
    assert not fake_docker.calls_of("network", "rm") and not fake_docker.calls_of("rm")


def test_a_removal_that_failed_beside_the_read_out_is_tried_again_and_said(
    fake_docker: FakeDocker, tmp_path: Path
) -> None:
    a_container(fake_docker)
    fake_docker.on("network", "rm", status=1, stderr="Error response from daemon: it is busy\n")
    backend = DockerBackend()
    handle = backend.start(make_spec(tmp_path))
    backend.wait(handle, 30)
    with pytest.raises(BackendError, match=r"Cannot remove the network .*it is busy"):
        backend.cleanup(handle)
    assert len(fake_docker.calls_of("network", "rm", NETWORK)) == 2


def test_a_model_run_gets_the_proxy_as_litellm(fake_docker: FakeDocker, tmp_path: Path) -> None:
    a_proxy(a_container(fake_docker))
    backend = DockerBackend()
    handle = backend.start(model_spec(tmp_path, network=OPEN))
    [create] = fake_docker.calls_of("network", "create")
    assert "--internal" not in create
    assert fake_docker.calls_of("network", "connect") == [
        ["network", "connect", "--alias", "litellm", NETWORK, PROXY_ID]
    ]
    [ps] = fake_docker.calls_of("ps", "--quiet")
    assert "label=com.docker.compose.service=litellm" in ps
    chains = [argv[3] for argv in fake_docker.iptables_calls()]
    assert chains.count("DOCKER-USER") == len(PRIVATE_IPV4_RANGES) and "INPUT" in chains
    # The run starts only once its network, its rules and the proxy are in place.
    order = [argv[0] if argv[0] != "network" else argv[1] for argv in fake_docker.calls()]
    assert order.index("connect") < order.index("run")
    backend.wait(handle, 30)
    backend.cleanup(handle)


def test_a_model_run_without_a_running_proxy_fails_and_leaves_nothing(
    fake_docker: FakeDocker, tmp_path: Path
) -> None:
    a_container(fake_docker)
    with pytest.raises(BackendError, match="proxy up"):
        DockerBackend().start(model_spec(tmp_path))
    assert fake_docker.calls_of("network", "rm", NETWORK)
    assert not fake_docker.calls_of("run")


def test_open_egress_is_refused_when_its_rules_cannot_be_installed(
    fake_docker: FakeDocker, tmp_path: Path
) -> None:
    a_container(fake_docker)
    (fake_docker.root / "iptables-fails").write_text("iptables: Permission denied\n")
    with pytest.raises(BackendError, match=r"Permission denied.*--egress restricted") as raised:
        DockerBackend().start(make_spec(tmp_path, network=OPEN))
    assert SENTINEL not in str(raised.value)
    assert fake_docker.calls_of("network", "rm", NETWORK)
    assert not fake_docker.calls_of("run")


def test_a_restricted_run_goes_without_the_host_rule_when_iptables_fails(
    fake_docker: FakeDocker, tmp_path: Path
) -> None:
    a_container(fake_docker)
    (fake_docker.root / "iptables-fails").write_text("iptables: Permission denied\n")
    backend = DockerBackend()
    handle = backend.start(make_spec(tmp_path))
    assert fake_docker.calls_of("run")
    backend.wait(handle, 30)
    backend.cleanup(handle)


def test_a_failed_docker_run_removes_the_network(fake_docker: FakeDocker, tmp_path: Path) -> None:
    fake_docker.on("network", "inspect", stdout="")
    fake_docker.on("container", "inspect", status=1, stderr="Error: No such container\n")
    fake_docker.on("run", stderr="docker: Error response from daemon: No such image\n", status=125)
    with pytest.raises(BackendError):
        DockerBackend().start(make_spec(tmp_path, network=OPEN))
    assert fake_docker.calls_of("network", "rm", NETWORK)
    deleted = [argv for argv in fake_docker.iptables_calls() if "-S" in argv]
    assert deleted, "the rules were looked up for removal"


def test_used_up_address_pools_name_the_fix(fake_docker: FakeDocker, tmp_path: Path) -> None:
    fake_docker.on(
        "network",
        "create",
        status=1,
        stderr="Error response from daemon: could not find an available, non-overlapping "
        "IPv4 address pool among the defaults to assign to the network\n",
    )
    with pytest.raises(BackendError, match="default-address-pools"):
        DockerBackend().start(make_spec(tmp_path))
    assert not fake_docker.calls_of("run")


def test_a_sidecar_pair_shares_one_network(fake_docker: FakeDocker, tmp_path: Path) -> None:
    a_proxy(a_pair(fake_docker))
    backend = DockerBackend()
    spec = replace(sidecar_spec(tmp_path), env={"SSE_BASE_URL": SERVICE_URL})
    handle = backend.start(spec)
    pair_network = network_name(PAIR_ID)
    [environment] = fake_docker.calls_of("run", "--name", ENVIRONMENT)
    [agent] = fake_docker.calls_of("run", "--name", AGENT)
    assert option_values(environment, "--network") == [pair_network]
    assert option_values(agent, "--network") == [f"container:{ENVIRONMENT}"]
    assert fake_docker.calls_of("network", "connect", "--alias", "litellm", pair_network)
    backend.wait(handle, 30)
    backend.cleanup(handle)
    assert fake_docker.calls_of("network", "rm", pair_network)


def test_a_network_given_to_the_backend_is_used_as_it_is(
    fake_docker: FakeDocker, tmp_path: Path
) -> None:
    a_container(fake_docker)
    backend = DockerBackend(network="mine")
    handle = backend.start(make_spec(tmp_path, network=OPEN))
    [run] = fake_docker.calls_of("run")
    assert option_values(run, "--network") == ["mine"]
    assert not fake_docker.calls_of("network", "create")
    assert fake_docker.iptables_calls() == []
    backend.wait(handle, 30)


# --- prune --------------------------------------------------------------------------


def a_left_network(fake: FakeDocker, runner_pid: int, deadline: int) -> FakeDocker:
    labels_json = (
        f'{{"{labels.PAIR}": "{RUN_ID}", "{labels.RUNNER_HOST}": "h", '
        f'"{labels.RUNNER_PID}": "{runner_pid}", "{labels.DEADLINE}": "{deadline}"}}'
    )
    fake.on("network", "ls", stdout="abc123\n")
    fake.on(
        "network", "inspect", "abc123", stdout=f'[{{"Name": "{NETWORK}", "Labels": {labels_json}}}]'
    )
    fake.on("network", "inspect", stdout="")
    return fake


def dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_prune_removes_a_network_whose_runner_died_before_its_container(
    fake_docker: FakeDocker,
) -> None:
    a_left_network(fake_docker, dead_pid(), deadline=2**40)
    fake_docker.on("container", "inspect", status=1, stderr="Error: No such container\n")
    removed = DockerBackend().remove_abandoned(now=1000, host="h")
    assert removed == [f"network {NETWORK}"]
    assert fake_docker.calls_of("network", "rm", NETWORK)


def test_prune_leaves_the_network_of_a_live_runner_or_an_existing_container(
    fake_docker: FakeDocker,
) -> None:
    a_left_network(fake_docker, os.getpid(), deadline=2**40)
    fake_docker.on("container", "inspect", status=1, stderr="Error: No such container\n")
    assert DockerBackend().remove_abandoned(now=1000, host="h") == []
    past = FakeDocker(fake_docker.root.parent / "second")
    os.environ["FAKE_DOCKER_ROOT"] = str(past.root)
    a_left_network(past, dead_pid(), deadline=1)
    past.on("container", "inspect", "--format", "{{.Id}}", container_name(RUN_ID), stdout="x\n")
    assert DockerBackend().remove_abandoned(now=1000, host="h") == []
    assert not fake_docker.calls_of("network", "rm") and not past.calls_of("network", "rm")
