"""What a run keeps from its agent on the network: the internet (restricted egress),
this host's services and other runs. Every address tried is this machine's own or a
documentation address that is routed nowhere: nothing outside is ever contacted."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
from collections.abc import Iterator

import pytest

from tests.conftest import CLUSTER_KUBECONFIG
from tests.integrity import probes
from tests.integrity.conftest import HeldRun

# TEST-NET-1 (RFC 5737): stands for an outside address; routed nowhere.
OUTSIDE_ADDRESS = "192.0.2.1"
# A name of the real internet; its lookup must fail inside a restricted run.
OUTSIDE_NAME = "example.com"
K8S_LOCAL_NO_ENFORCEMENT = (
    "the local cluster (k8s-local) stores NetworkPolicies but enforces none "
    "(/work/shared/k8s-local/README.md, Limits): its pods reach this host; the run's "
    "NetworkPolicy is checked instead"
)


@pytest.fixture(scope="module")
def host_listener() -> Iterator[int]:
    """A TCP listener on every address of this host (it stands for the host's own
    services, and, on the Docker bridge's gateway, for an outside address); its port.
    It counts the connections it accepts."""
    server = socket.create_server(("0.0.0.0", 0))
    server.settimeout(0.5)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        server.close()


def docker_addresses(container: str) -> dict[str, str]:
    """The container's address and gateway on each of its networks."""
    done = subprocess.run(
        ["docker", "inspect", "--format", "{{json .NetworkSettings.Networks}}", container],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    found = {}
    for network, settings in json.loads(done.stdout).items():
        found[f"{network} address"] = settings["IPAddress"]
        found[f"{network} gateway"] = settings["Gateway"]
    return found


def docker_bridge_gateway() -> str:
    """The address of Docker's default bridge on this host (docker0's)."""
    done = subprocess.run(
        ["ip", "-4", "-o", "address", "show", "docker0"], capture_output=True, text=True, timeout=10
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()[3].split("/")[0]


def this_hosts_addresses() -> list[str]:
    done = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=10)
    return [address for address in done.stdout.split() if ":" not in address]


def run_policy(run: HeldRun) -> dict[str, object]:
    """The run's NetworkPolicy, read as the cluster's admin."""
    from tests.kubernetes.cluster import NAMESPACE

    done = subprocess.run(
        ["kubectl", "--kubeconfig", CLUSTER_KUBECONFIG, "get", "networkpolicy", "-n", NAMESPACE,
         "-l", f"ssebench.run-id={run.run_id}", "-o", "json"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    items = json.loads(done.stdout)["items"]
    assert len(items) == 1, items
    policy: dict[str, object] = items[0]["spec"]
    return policy


def test_the_internet_with_restricted_egress(held_run: HeldRun, host_listener: int) -> None:
    """Protection: Docker: the run's network, its own, is internal (no route out;
    Docker drops what would leave the bridge; src/ssebench/backends/docker/network.py),
    its name server (Docker's, 127.0.0.11) resolves no outside name, and an INPUT rule
    drops the run's connections to this host (backends/docker/firewall.py). Kubernetes: the
    NetworkPolicy allows egress to the cluster's DNS and the proxy only
    (src/ssebench/backends/kubernetes/manifests.py network_policy); on k8s-local the pod
    network itself has no way out. The attempt: resolve an outside name, connect to a
    documentation address routed nowhere, and to a listener on the Docker bridge's
    gateway, an address of this machine that stands for the outside (nothing outside
    is contacted)."""
    names = held_run.python_as_model(probes.resolves([OUTSIDE_NAME]))
    assert all(isinstance(found, str) for found in names.values()), names
    targets = [(OUTSIDE_ADDRESS, 80), (OUTSIDE_ADDRESS, 443)]
    if held_run.backend == "docker":
        targets.append((docker_bridge_gateway(), host_listener))
    seen = held_run.python_as_model(probes.connects(targets))
    assert "connected" not in seen.values(), seen
    if held_run.backend == "kubernetes":
        policy = run_policy(held_run)
        assert policy["policyTypes"] == ["Ingress", "Egress"]
        blocks = json.dumps(policy["egress"])
        assert "ipBlock" not in blocks, K8S_LOCAL_NO_ENFORCEMENT


def test_this_hosts_services(held_run: HeldRun, host_listener: int) -> None:
    """Protection: Docker: an internal network has no route to other networks, but this
    host owns the bridge's gateway address and would answer there: an INPUT rule keyed
    on the run's bridge drops the run's connections to this host
    (src/ssebench/backends/docker/network.py, firewall.py). Kubernetes: the
    NetworkPolicy allows no egress to this host (only DNS and the proxy). The attempt:
    connect to a listener the test starts on every address of this host, through the
    run's gateway, the Docker bridge's gateway and the host's own addresses."""
    if held_run.backend == "kubernetes":
        policy = run_policy(held_run)
        rules = policy["egress"]
        assert isinstance(rules, list) and len(rules) == 2, rules
        # One rule to the cluster's DNS on port 53, one to the proxy's pods: no host.
        ports = sorted(port["port"] for rule in rules for port in rule["ports"])
        assert ports[:2] == [53, 53] and "ipBlock" not in json.dumps(rules), rules
        return  # K8S_LOCAL_NO_ENFORCEMENT: nothing to try from the pod
    addresses = docker_addresses(f"ssebench-{held_run.run_id}")
    hosts = {value for key, value in addresses.items() if key.endswith("gateway") and value}
    hosts |= {docker_bridge_gateway(), *this_hosts_addresses()}
    assert hosts, addresses
    seen = held_run.python_as_model(probes.connects([(host, host_listener) for host in hosts]))
    assert "connected" not in seen.values(), seen


@pytest.mark.docker
def test_another_run(docker_sandbox: HeldRun, docker_sidecar: HeldRun) -> None:
    """Protection: one network per run (src/ssebench/backends/docker/network.py):
    the only other member of a run's network is the proxy; Docker drops traffic between
    bridges, so another run's container and its unauthenticated daemon (port 4263) are
    out of reach even by address. (When all runs shared one network, ssebench_agents,
    this attempt succeeded.) The attempt: two runs at once (the sandbox and the sidecar
    held runs), each connecting to the other's daemon port and asking it for its diff."""
    for source, target in ((docker_sandbox, docker_sidecar), (docker_sidecar, docker_sandbox)):
        addresses = docker_addresses(f"ssebench-{target.run_id}")
        others = [value for key, value in addresses.items() if key.endswith("address") and value]
        assert others, addresses
        seen = source.python_as_model(probes.connects([(ip, 4263) for ip in others]))
        assert "connected" not in seen.values(), (source.kind, target.kind, seen)


@pytest.mark.kubernetes
def test_another_run_on_kubernetes(kubernetes_sandbox: HeldRun) -> None:
    """Protection: the run's NetworkPolicy selects its pod by run ID and allows no
    ingress at all (manifests.py network_policy), so another run's pod cannot reach its
    daemon; its egress reaches DNS and the proxy only, so it cannot reach another run
    either. k8s-local does not enforce NetworkPolicies: the policy object is checked."""
    policy = run_policy(kubernetes_sandbox)
    assert policy["podSelector"] == {"matchLabels": {"ssebench.run-id": kubernetes_sandbox.run_id}}
    # The API server leaves out an empty rule list: no "ingress" with the Ingress type
    # is a policy that admits nothing.
    assert not policy.get("ingress") and "Ingress" in policy["policyTypes"]  # type: ignore[operator]
    # Nor has its pod a service-account token with which to ask the API for others.
    done = kubernetes_sandbox.as_model("ls /var/run/secrets/kubernetes.io/serviceaccount 2>&1")
    assert "No such file" in done.stdout, done.stdout
