"""One Docker network per run, and the proxy on it under the same name for every run.

Each run gets a bridge network of its own, ssebench-net-<run id>, whose only members
are the run's container (in sidecar mode the environment container; the agent
container shares its network namespace) and, for a run with a model, the LiteLLM
proxy's container, connected with the alias `litellm`: every run reaches the proxy at
the same SSE_BASE_URL (http://litellm:4000), and no run shares a network with another.

- Restricted egress: the network is internal (no route out; Docker drops what would
  leave it).
- Open egress: the network is an ordinary bridge (the internet through the host's
  NAT), and the firewall rules of firewall.py drop what would reach a private
  range or this host. Open egress is refused when those rules cannot be installed.
- Every run: a rule drops connections from the run to this host itself, installed
  when the firewall can be used (for a restricted run it is a second wall, so a
  runner without iptables rights still runs it).

The network carries the labels ssebench.run=<run id>, the runner's host and process
and the run's deadline, so that `ssebench runs prune` removes it (and its rules) once
no container of the run is left and its runner is gone or its deadline passed. The
bridge interface is named from the network (sse-<hash>), so the rules can name it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from ssebench.backends.docker import firewall
from ssebench.backends.docker.commands import docker_call
from ssebench.errors import BackendError
from ssebench.host.docker_cli import failure_reason, run_docker
from ssebench.labels import PAIR, abandoned_reason
from ssebench.proxy.stack_service import PROJECT as PROXY_PROJECT
from ssebench.proxy.stack_service import SERVICE as PROXY_SERVICE
from ssebench.proxy.stack_service import SERVICE_URL

NETWORK_PREFIX = "ssebench-net-"
BRIDGE_PREFIX = "sse-"
# The name under which runs reach the Compose stack's proxy (SERVICE_URL's host).
PROXY_ALIAS = PROXY_SERVICE
BRIDGE_NAME_OPTION = "com.docker.network.bridge.name"
# docker network create's message when the daemon's default-address-pools are used up.
POOLS_EXHAUSTED_MARKER = "could not find an available, non-overlapping"
ACTIVE_ENDPOINTS_MARKER = "active endpoints"
REMOVE_SECONDS = 15.0
_GONE_MARKERS = ("not found", "No such network")
_NAME_FORBIDDEN = re.compile(r"[^a-zA-Z0-9_.-]")


def network_name(run_id: str) -> str:
    """The run's network: ssebench-net-<run id>, within docker's name rules."""
    return NETWORK_PREFIX + _NAME_FORBIDDEN.sub("-", run_id)


def bridge_name(network: str) -> str:
    """The network's bridge interface: 15 characters at most (Linux's limit)."""
    return BRIDGE_PREFIX + hashlib.sha256(network.encode()).hexdigest()[:11]


@dataclass(frozen=True)
class RunNetwork:
    """What the run's network is made of: the caller's labels are the run's own."""

    run_id: str
    open_egress: bool
    needs_proxy: bool
    labels: Mapping[str, str]

    @property
    def name(self) -> str:
        return network_name(self.run_id)

    @property
    def bridge(self) -> str:
        return bridge_name(self.name)

    def create_arguments(self) -> list[str]:
        """The arguments of `docker network create` (after `docker`)."""
        arguments = ["network", "create", "--driver", "bridge"]
        if not self.open_egress:
            arguments.append("--internal")
        arguments += ["--opt", f"{BRIDGE_NAME_OPTION}={self.bridge}"]
        for key, value in {**self.labels, PAIR: self.run_id}.items():
            arguments += ["--label", f"{key}={value}"]
        return [*arguments, self.name]

    def create_body(self) -> dict[str, Any]:
        """The same as a body of the Engine API's POST /networks/create."""
        return {
            "Name": self.name,
            "CheckDuplicate": True,
            "Driver": "bridge",
            "Internal": not self.open_egress,
            "Options": {BRIDGE_NAME_OPTION: self.bridge},
            "Labels": {**self.labels, PAIR: self.run_id},
        }

    def rules(self) -> list[firewall.Rule]:
        return firewall.run_rules(self.name, self.bridge, open_egress=self.open_egress)


def _error(message: str, run_id: str) -> BackendError:
    return BackendError(message, backend="docker", run_id=run_id)


def create(network: RunNetwork) -> str:
    """Make the run's network, its rules and the proxy's place on it; return its name.

    Raises BackendError, and then nothing of it is left.
    """
    completed = docker_call(
        "POST", "/networks/create", network.create_arguments(), body=network.create_body()
    )
    if completed.returncode != 0:
        reason = failure_reason(completed)
        if POOLS_EXHAUSTED_MARKER in completed.stderr:
            reason = (
                "Docker has no address range left for another network (every run has "
                "one; the daemon's default-address-pools are used up): run fewer at once, "
                "remove unused networks, or widen default-address-pools in "
                "/etc/docker/daemon.json (docs/docker.md, 'Networks')"
            )
        raise _error(f"Cannot create the run's network {network.name}: {reason}", network.run_id)
    try:
        _install_rules(network)
        if network.needs_proxy:
            _connect_proxy(network)
    except BaseException:
        with contextlib.suppress(BackendError, OSError):
            remove(network.run_id)
        raise
    return network.name


def _install_rules(network: RunNetwork) -> None:
    try:
        firewall.install(network.rules())
    except firewall.FirewallError as error:
        if network.open_egress:
            raise _error(
                "Open egress on Docker needs firewall rules that keep the run off private "
                f"ranges and this host, and they cannot be installed: {error}. Run "
                "ssebench as root with iptables (see `ssebench doctor`), or use "
                "--egress restricted",
                network.run_id,
            ) from None
        # Restricted: the internal network already keeps the run in; the host rule is a
        # second wall that a runner without iptables rights goes without.


def proxy_container() -> str | None:
    """The running container of the local stack's proxy, or None."""
    completed = run_docker(
        [
            "ps",
            "--quiet",
            "--no-trunc",
            "--filter",
            f"label=com.docker.compose.project={PROXY_PROJECT}",
            "--filter",
            f"label=com.docker.compose.service={PROXY_SERVICE}",
            "--filter",
            "status=running",
        ]
    )
    found = completed.stdout.split() if completed.returncode == 0 else []
    return found[0] if found else None


def _connect_proxy(network: RunNetwork) -> None:
    container = proxy_container()
    if container is None:
        raise _error(
            "The run needs the LiteLLM proxy, and its container (Compose project "
            f"{PROXY_PROJECT}, service {PROXY_SERVICE}) is not running: ssebench proxy up",
            network.run_id,
        )
    completed = run_docker(["network", "connect", "--alias", PROXY_ALIAS, network.name, container])
    if completed.returncode != 0:
        raise _error(
            f"Cannot connect the proxy to the run's network {network.name}: "
            f"{failure_reason(completed)}",
            network.run_id,
        )


def needs_proxy(env: Mapping[str, str]) -> bool:
    """Whether a run with env uses the local stack's proxy (a run with a model)."""
    return env.get("SSE_BASE_URL") == SERVICE_URL


def _is_gone(completed_stderr: str) -> bool:
    return any(marker in completed_stderr for marker in _GONE_MARKERS)


def remove(run_id: str, *, containers_gone: bool = False) -> None:
    """Remove the run's network (disconnecting the proxy first) and its rules. Nothing
    to do when it has none. Raises BackendError.

    containers_gone: the caller has removed the run's containers, so nothing of the run
    is left on the network, and its rules go while dockerd tears the bridge down rather
    than after it (deleting a rule takes iptables 15 to 35 ms here). Otherwise the rules
    go after the network."""
    name = network_name(run_id)
    if not containers_gone:
        _remove_network_and_proxy(run_id, name)
        # After the network: a rule without its network matches nothing, the reverse
        # (a network without its rules) would be open while a run's container is on it.
        _remove_rules(name)
        return
    rules = threading.Thread(target=_remove_rules, args=(name,), name=f"ssebench-rules-{name}")
    rules.start()
    try:
        _remove_network_and_proxy(run_id, name)
    finally:
        rules.join()


def _remove_rules(name: str) -> None:
    with contextlib.suppress(firewall.FirewallError):
        firewall.remove(name)


def _remove_network_and_proxy(run_id: str, name: str) -> None:
    inspected = _attached_containers(name)
    if inspected.returncode == 0:
        for container in inspected.stdout.split():
            completed = docker_call(
                "POST",
                f"/networks/{quote(name, safe='')}/disconnect",
                ["network", "disconnect", "--force", name, container],
                body={"Container": container, "Force": True},
            )
            if completed.returncode != 0 and not _is_gone(completed.stderr):
                raise _error(
                    f"Cannot disconnect {container[:12]} from {name}: {failure_reason(completed)}",
                    run_id,
                )
        completed = _remove_network(name)
        if completed.returncode != 0 and not _is_gone(completed.stderr):
            raise _error(f"Cannot remove the network {name}: {failure_reason(completed)}", run_id)
    elif not _is_gone(inspected.stderr):
        raise _error(f"Cannot inspect the network {name}: {failure_reason(inspected)}", run_id)


def _attached_containers(name: str) -> subprocess.CompletedProcess[str]:
    """The IDs of the containers on the network name, on stdout, as `docker network
    inspect --format` gives them: one Engine API request where the API is at hand."""
    argv = ["network", "inspect", "--format", "{{range $id, $c := .Containers}}{{$id}} {{end}}"]
    return docker_call(
        "GET", f"/networks/{quote(name, safe='')}", [*argv, name], output=_container_ids
    )


def _container_ids(answer: bytes) -> str:
    try:
        attached = json.loads(answer).get("Containers") or {}
    except (ValueError, AttributeError):
        attached = {}
    return " ".join(str(key) for key in attached)


def _remove_network(name: str) -> subprocess.CompletedProcess[str]:
    # A container that docker is still removing (--rm) holds its endpoint a moment.
    deadline = time.monotonic() + REMOVE_SECONDS
    while True:
        completed = docker_call(
            "DELETE", f"/networks/{quote(name, safe='')}", ["network", "rm", name]
        )
        if completed.returncode == 0 or ACTIVE_ENDPOINTS_MARKER not in completed.stderr:
            return completed
        if time.monotonic() > deadline:
            return completed
        time.sleep(0.25)


def _run_networks() -> list[dict[str, Any]]:
    listed = run_docker(["network", "ls", "--quiet", "--filter", f"label={PAIR}"])
    if listed.returncode != 0:
        raise BackendError(f"Cannot list networks: {failure_reason(listed)}")
    ids = listed.stdout.split()
    if not ids:
        return []
    inspected = run_docker(["network", "inspect", *ids])
    try:
        networks = json.loads(inspected.stdout or "[]")
    except json.JSONDecodeError:
        raise BackendError(f"Cannot inspect networks: {failure_reason(inspected)}") from None
    return [
        network
        for network in networks
        if isinstance(network, dict) and str(network.get("Name", "")).startswith(NETWORK_PREFIX)
    ]


def prune(
    *, now: float, host: str, run_container_exists: Callable[[str], bool]
) -> list[dict[str, str]]:
    """Remove the run networks that no container of their run is left on and whose
    runner is gone or deadline passed, and the rules of networks that are gone; return
    what was removed (kind, name, reason).

    run_container_exists(run_id) says whether the run's container still exists (then
    the run itself is pruned, or kept, and its network goes with it).
    """
    # Rules first: a run makes its network before its rules, so a rule whose network
    # is missing from the later listing belongs to a network that is really gone.
    with_rules = firewall.networks_with_rules()
    removed = []
    existing = set()
    for network in _run_networks():
        name = str(network.get("Name", ""))
        existing.add(name)
        labels = {str(key): str(value) for key, value in (network.get("Labels") or {}).items()}
        run_id = labels.get(PAIR, "")
        if not run_id or network_name(run_id) != name:
            continue
        reason = abandoned_reason(labels, now=now, host=host)
        if reason is None or run_container_exists(run_id):
            continue
        remove(run_id)
        removed.append({"kind": "network", "name": name, "reason": reason})
    for name in sorted(with_rules - existing):
        if not name.startswith(NETWORK_PREFIX):
            continue
        with contextlib.suppress(firewall.FirewallError):
            firewall.remove(name)
            removed.append({"kind": "rules", "name": name, "reason": "their network is gone"})
    return removed
