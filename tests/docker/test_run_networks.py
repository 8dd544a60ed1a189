"""One network per run and open egress without the inside, on the real daemon.

Run A and run B at once: from A, as the agent's user, B's container and daemon are out
of reach, and the proxy answers both at the same URL. An open run reaches a stand-in
for the internet (a network namespace on this machine, at a documentation address,
198.51.100.0/24, which is not in any excluded range), and not a link-local address,
a container on another network, nor this host (its gateway address, its own address).
Networks and firewall rules are gone after the run, and after prune of a killed run.
No test contacts an address outside this machine.
"""

from __future__ import annotations

import json
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ssebench.backends.docker import firewall as docker_firewall
from ssebench.backends.docker import network as docker_network
from ssebench.proxy.stack_service import SERVICE_URL
from tests.cli import sleeper_started, ssebench
from tests.docker.conftest import SESSION_PREFIX, docker_lines, new_run_id
from tests.docker.model_stack import ModelStack
from tests.docker.test_docker_backend_runs import TASK, listed, start_run
from tests.polling import wait_until

pytestmark = pytest.mark.docker

# Run inside a run as the agent's user: which targets (host:port) it can open.
PROBE = """
import json, socket, sys, urllib.request
out = {}
for target in sys.argv[1:]:
    if target.startswith("http"):
        try:
            out[target] = urllib.request.urlopen(target, timeout=5).status
        except OSError as error:
            out[target] = type(error).__name__
        continue
    host, port = target.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
        out[target] = "open"
    except OSError as error:
        out[target] = type(error).__name__
print(json.dumps(out))
"""
HEALTH = f"{SERVICE_URL}/health/liveliness"
# An address in the link-local range that is not a cloud's metadata service.
LINK_LOCAL_STAND_IN = "169.254.77.77"


def probe(run_id: str, *targets: str, env: dict[str, str] | None = None) -> dict[str, object]:
    done = ssebench(
        "runs", "exec", run_id, "--user", "model", "--", "python3", "-c", PROBE, *targets,
        env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def resolver_options(run_id: str) -> set[str]:
    done = ssebench("runs", "exec", run_id, "--", "cat", "/etc/resolv.conf", timeout=120)
    assert done.returncode == 0, done.stderr
    options: set[str] = set()
    for line in done.stdout.splitlines():
        if line.startswith("options "):
            options.update(line.split()[1:])
    return options


def network_exists(run_id: str) -> bool:
    name = docker_network.network_name(run_id)
    return (
        subprocess.run(["docker", "network", "inspect", name], capture_output=True).returncode == 0
    )


def rules_exist(run_id: str) -> bool:
    return docker_network.network_name(run_id) in docker_firewall.networks_with_rules()


def container_address(run_id: str) -> str:
    url = ssebench("runs", "endpoint", run_id, "4263").stdout.strip()
    return url.removeprefix("http://").rsplit(":", 1)[0]


def stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=180)


@dataclass
class Outside:
    """A stand-in for the internet, and for a link-local service: a network namespace
    behind a veth pair, its listener on every address of the namespace."""

    address: str
    port: int


def answers(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError:
        return False
    return True


def _ip(*arguments: str) -> None:
    subprocess.run(["ip", *arguments], check=True, capture_output=True, timeout=30)


@pytest.fixture
def outside() -> Iterator[Outside]:
    tag = secrets.token_hex(3)
    namespace, host_end, far_end = f"ssbt-out-{tag}", f"ssbh{tag}", f"ssbo{tag}"
    block = 4 * secrets.randbelow(60)  # a /30 of 198.51.100.0/24 (documentation)
    near, far = f"198.51.100.{block + 1}", f"198.51.100.{block + 2}"
    listener: subprocess.Popen[bytes] | None = None
    _ip("netns", "add", namespace)
    try:
        _ip("link", "add", host_end, "type", "veth", "peer", "name", far_end)
        _ip("link", "set", far_end, "netns", namespace)
        _ip("addr", "add", f"{near}/30", "dev", host_end)
        _ip("link", "set", host_end, "up")
        inside = ["netns", "exec", namespace, "ip"]
        _ip(*inside, "addr", "add", f"{far}/30", "dev", far_end)
        _ip(*inside, "addr", "add", f"{LINK_LOCAL_STAND_IN}/32", "dev", far_end)
        _ip(*inside, "link", "set", far_end, "up")
        _ip(*inside, "link", "set", "lo", "up")
        _ip(*inside, "route", "add", "default", "via", near)
        _ip("route", "add", f"{LINK_LOCAL_STAND_IN}/32", "via", far)
        port = 20000 + secrets.randbelow(20000)
        listener = subprocess.Popen(
            ["ip", "netns", "exec", namespace, sys.executable, "-m", "http.server", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(lambda: answers(far, port), what="the outside listener", seconds=30)
        yield Outside(address=far, port=port)
    finally:
        if listener is not None:
            listener.kill()
            listener.wait()
        subprocess.run(["ip", "route", "del", f"{LINK_LOCAL_STAND_IN}/32"], capture_output=True)
        subprocess.run(["ip", "link", "del", host_end], capture_output=True)
        subprocess.run(["ip", "netns", "del", namespace], capture_output=True)


@pytest.fixture
def other_network_listener() -> Iterator[str]:
    """An HTTP server on port 8000 in a container on a network of its own: its address."""
    image = docker_lines(
        "images", "--format", "{{.Repository}}:{{.Tag}}", f"ssebench/agent-sleeper/{TASK}"
    )[0]
    name = f"ssebench-test-other-{SESSION_PREFIX}-{secrets.token_hex(2)}"
    docker_lines("network", "create", "--label", "ssebench.test=true", name)
    try:
        docker_lines(
            "run", "-d", "--rm", "--name", name, "--network", name, "--label",
            "ssebench.test=true", "--entrypoint", "python3", image, "-m", "http.server", "8000",
        )  # fmt: skip
        address = docker_lines(
            "inspect", "--format", f'{{{{(index .NetworkSettings.Networks "{name}").IPAddress}}}}',
            name,
        )[0]  # fmt: skip
        wait_until(lambda: answers(address, 8000), what="the other network's listener", seconds=30)
        yield address
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
        subprocess.run(["docker", "network", "rm", name], capture_output=True)


@pytest.fixture
def host_listener() -> Iterator[int]:
    """A listener of this host on every address: its port."""
    with socket.socket() as listener:
        listener.bind(("0.0.0.0", 0))
        listener.listen(64)
        yield listener.getsockname()[1]


def host_address() -> str:
    """An address of this host outside Docker's bridges (the one its default route uses)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe_socket:
        probe_socket.connect(("198.51.100.1", 9))  # UDP: picks a route, sends nothing
        return str(probe_socket.getsockname()[0])


def gateway(run_id: str) -> str:
    return docker_lines(
        "network", "inspect", "--format", "{{(index .IPAM.Config 0).Gateway}}",
        docker_network.network_name(run_id),
    )[0]  # fmt: skip


def test_two_runs_reach_the_proxy_at_one_url_and_not_each_other(
    model_stack: ModelStack, tmp_path: Path
) -> None:
    """A (sandbox, restricted) and B (sidecar, open) at once, both with a model."""
    up = ssebench("proxy", "up", "--no-database", env=model_stack.env, timeout=600)
    assert up.returncode == 0, up.stderr[-3000:]
    model = model_stack.script("mini-gives-up", [])
    run_a, run_b = new_run_id("net-a"), new_run_id("net-b")
    env = model_stack.env
    a = start_run(tmp_path, run_a, "--model", model, env=env)
    b = start_run(
        tmp_path, run_b, "--model", model, "--mode", "sidecar", "--egress", "open", env=env
    )
    try:
        for run_id in (run_a, run_b):
            wait_until(lambda run_id=run_id: sleeper_started(run_id), what=f"{run_id} to start")
        address_a, address_b = container_address(run_a), container_address(run_b)
        assert address_a != address_b
        # The daemons listen: this host reaches both.
        for address in (address_a, address_b):
            with socket.create_connection((address, 4263), timeout=5):
                pass
        from_a = probe(run_a, HEALTH, f"{address_b}:4263", env=env)
        from_b = probe(run_b, HEALTH, f"{address_a}:4263", env=env)
        assert from_a == {HEALTH: 200, f"{address_b}:4263": "TimeoutError"}
        assert from_b == {HEALTH: 200, f"{address_a}:4263": "TimeoutError"}
        # A has no way out, so its resolver gives up on an outside name after one try
        # of a second (the proxy's name was answered above); B's is Docker's default.
        assert resolver_options(run_a) == {"timeout:1", "attempts:1", "ndots:0"}
        assert not {"timeout:1", "attempts:1"} & resolver_options(run_b)
        assert network_exists(run_a) and network_exists(run_b)
        assert rules_exist(run_b)
    finally:
        stop(a)
        stop(b)
    for run_id in (run_a, run_b):
        assert listed(run_id) is None
        assert not network_exists(run_id) and not rules_exist(run_id)
    proxy = docker_network.proxy_container()
    assert proxy is not None
    networks = docker_lines("inspect", "--format", "{{json .NetworkSettings.Networks}}", proxy)
    assert not [name for name in json.loads(networks[0]) if SESSION_PREFIX in name]
    forwarding = docker_lines("exec", proxy, "cat", "/proc/sys/net/ipv4/ip_forward")
    assert forwarding == ["0"], "the proxy, on every run's network, must not route"


@pytest.mark.parametrize("mode", ["sandbox", "sidecar"])
def test_open_egress_reaches_the_outside_and_not_the_inside(
    tmp_path: Path,
    mode: str,
    outside: Outside,
    other_network_listener: str,
    host_listener: int,
) -> None:
    outside_target = f"{outside.address}:{outside.port}"
    inside_targets = {
        "link-local stand-in": f"{LINK_LOCAL_STAND_IN}:{outside.port}",
        "metadata": "169.254.169.254:80",
        "container on another network": f"{other_network_listener}:8000",
        "this host's address": f"{host_address()}:{host_listener}",
    }
    # From this host, every target but the metadata address answers: the walls are
    # what the runs meet, not absent listeners.
    for what, target in {**inside_targets, "outside": outside_target}.items():
        if what != "metadata":
            host, port = target.rsplit(":", 1)
            try:
                socket.create_connection((host, int(port)), timeout=5).close()
            except OSError as error:
                raise AssertionError(f"this host cannot reach the {what} ({target})") from error
    outcomes = {}
    for egress in ("open", "restricted"):
        run_id = new_run_id(f"egress-{egress}-{mode}")
        process = start_run(tmp_path, run_id, "--egress", egress, "--mode", mode)
        try:
            wait_until(lambda run_id=run_id: sleeper_started(run_id), what="the agent to start")
            targets = {
                **inside_targets,
                "gateway": f"{gateway(run_id)}:{host_listener}",
                "outside": outside_target,
            }
            reached = probe(run_id, *targets.values())
            outcomes[egress] = {what: reached[target] for what, target in targets.items()}
            ipv6 = ssebench("runs", "exec", run_id, "--", "cat", "/proc/net/if_inet6")
            assert ipv6.returncode == 0 and ipv6.stdout.strip() == "", "a run has no IPv6"
            assert rules_exist(run_id)
        finally:
            stop(process)
        assert not network_exists(run_id) and not rules_exist(run_id)
    blocked = {what: outcomes["open"][what] for what in inside_targets}
    assert set(blocked.values()) == {"TimeoutError"}, outcomes
    assert outcomes["open"]["gateway"] == "TimeoutError", outcomes
    assert outcomes["open"]["outside"] == "open", outcomes
    assert "open" not in outcomes["restricted"].values(), outcomes


def test_a_killed_run_leaves_its_network_and_rules_to_prune(tmp_path: Path) -> None:
    run_id = new_run_id("net-kill")
    process = start_run(tmp_path, run_id, "--egress", "open")
    wait_until(lambda: sleeper_started(run_id), what="the sleeper agent to start")
    process.kill()
    process.wait()
    assert network_exists(run_id) and rules_exist(run_id)
    pruned = json.loads(ssebench("runs", "prune", "--json").stdout)
    assert run_id in [run["run_id"] for run in pruned["removed"]]
    assert not network_exists(run_id) and not rules_exist(run_id)


def test_prune_removes_a_network_whose_runner_died_before_its_container() -> None:
    """The window between the network and the container, made real: the network and
    its rules exist, labelled with a runner that is gone, and no container."""
    run_id = new_run_id("net-orphan")
    gone = subprocess.Popen(["true"])
    gone.wait()
    network = docker_network.RunNetwork(
        run_id,
        open_egress=True,
        needs_proxy=False,
        labels={
            "ssebench.runner-host": socket.gethostname(),
            "ssebench.runner-pid": str(gone.pid),
            "ssebench.deadline": str(int(time.time()) + 3600),
        },
    )
    docker_network.create(network)
    assert network_exists(run_id) and rules_exist(run_id)
    pruned = json.loads(ssebench("runs", "prune", "--json").stdout)
    assert f"network {network.name}" in [entry["name"] for entry in pruned["removed"]]
    assert not network_exists(run_id) and not rules_exist(run_id)


def test_doctor_says_open_egress_is_enforced_here() -> None:
    done = ssebench("doctor", "--backend", "docker", "--json")
    checks = {check["name"]: check for check in json.loads(done.stdout)["checks"]}
    assert checks["open egress"]["ok"] is True, checks["open egress"]
    assert "DOCKER-USER" in checks["open egress"]["detail"]
