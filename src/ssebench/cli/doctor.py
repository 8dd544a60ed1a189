"""`ssebench doctor`: what runs need on this machine, for the selected backend.

One line per check, with the fix; exit 1 when a required check fails.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ssebench.backends import load_backend, selected_backend_name
from ssebench.backends.docker import firewall as docker_firewall
from ssebench.backends.network_ranges import PRIVATE_IPV4_RANGES
from ssebench.cli.output import print_json
from ssebench.errors import SsebenchError

# The state column of /proc/net/tcp for a listening socket.
LISTEN_STATE = "0A"


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    required: bool
    detail: str
    fix: str = ""


def _command(argv: list[str], timeout: float = 15) -> tuple[bool, str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, type(error).__name__
    output = (done.stdout.strip() or done.stderr.strip()).splitlines()
    return done.returncode == 0, output[-1] if output else ""


def docker_checks() -> list[Check]:
    if shutil.which("docker") is None:
        return [
            Check(
                "docker CLI",
                False,
                True,
                "not on PATH",
                "install Docker: sudo apt-get install docker.io",
            )
        ]
    checks = [Check("docker CLI", True, True, shutil.which("docker") or "")]
    ok, detail = _command(["docker", "version", "--format", "{{.Server.Version}}"])
    checks.append(
        Check(
            "docker daemon",
            ok,
            True,
            f"server {detail}" if ok else detail,
            "" if ok else "start it: sudo dockerd (or systemctl start docker), or set DOCKER_HOST",
        )
    )
    buildx, detail = _command(["docker", "buildx", "version"])
    checks.append(
        Check(
            "docker buildx",
            buildx,
            False,
            detail if buildx else "not installed",
            ""
            if buildx
            else "optional: ssebench falls back to the classic "
            "docker build; install the buildx plugin for BuildKit builds",
        )
    )
    return checks


def network_policy_check(probe_image: str | None) -> Check:
    """Whether the cluster enforces NetworkPolicy, by a short probe in the runs'
    namespace (backends/kubernetes/policy_check.py)."""
    name = "network policy"
    if not probe_image:
        return Check(
            name,
            False,
            False,
            "not checked: the probe needs an image with python3 that the nodes can pull",
            "ssebench doctor --backend kubernetes --probe-image IMAGE (any run image)",
        )
    from ssebench.backends.kubernetes import policy_check
    from ssebench.backends.kubernetes.config import KubernetesSettings

    try:
        settings = KubernetesSettings.from_environment()
        found = policy_check.cluster_enforces(settings, probe_image, fresh=True)
    except SsebenchError as error:
        return Check(name, False, False, f"the probe failed: {error}")
    where = f"namespace {settings.namespace}: "
    if found.enforced:
        return Check(name, True, False, where + found.detail)
    return Check(
        name,
        False,
        False,
        where + found.detail,
        "install a network plugin that enforces NetworkPolicy (Calico, Cilium, your cloud's)"
        if found.enforced is False
        else "",
    )


def kubernetes_checks(arguments: argparse.Namespace) -> list[Check]:
    kubectl = shutil.which("kubectl")
    client = importlib.util.find_spec("kubernetes") is not None
    checks = [
        Check(
            "kubectl",
            kubectl is not None,
            False,
            kubectl or "not on PATH",
            "" if kubectl else "install kubectl to use runs exec",
        ),
        Check(
            "kubernetes client",
            client,
            True,
            "installed" if client else "missing",
            "" if client else "pip install 'ssebench[kubernetes]'",
        ),
    ]
    if client:
        checks.append(network_policy_check(arguments.probe_image))
    return checks


def ports_open_to_all(
    tables: Sequence[Path] = (Path("/proc/net/tcp"), Path("/proc/net/tcp6")),
) -> list[int]:
    """TCP ports this host listens on at every address (0.0.0.0 or ::).

    The internal network a restricted run joins has the host as its gateway, so such a
    listener is reachable from the run; one bound to 127.0.0.1 is not.
    """
    ports = set()
    for table in tables:
        try:
            rows = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) < 4 or fields[3] != LISTEN_STATE:
                continue
            address, _, port = fields[1].partition(":")
            if set(address) == {"0"}:
                ports.add(int(port, 16))
    return sorted(ports)


def host_listener_check(firewall_usable: bool) -> Check:
    if firewall_usable:
        return Check(
            "host listeners",
            True,
            False,
            "runs cannot reach this host's services: each run's network has a rule "
            "that drops connections from it to this host",
        )
    ports = ports_open_to_all()
    if not ports:
        return Check("host listeners", True, False, "none on all addresses")
    shown = ", ".join(str(port) for port in ports)
    return Check(
        "host listeners",
        False,
        False,
        f"runs can reach this host's ports {shown} (listening on all addresses) through "
        "their network's gateway, since no firewall rule can be installed",
        "bind those services to 127.0.0.1, or run ssebench as root with iptables",
    )


def open_egress_check(status: docker_firewall.FirewallStatus) -> Check:
    """How open egress is kept off the inside on Docker, and whether that holds here."""
    ranges = ", ".join(PRIVATE_IPV4_RANGES)
    if status.usable:
        return Check(
            "open egress",
            True,
            False,
            f"enforced by iptables rules on each open run's bridge (chain "
            f"{docker_firewall.FORWARD_CHAIN}: no {ranges}; chain "
            f"{docker_firewall.HOST_CHAIN}: not this host); IPv6 is off in runs; "
            f"{status.detail}",
        )
    return Check(
        "open egress",
        False,
        False,
        f"--egress open is refused on this machine: {status.detail}",
        "run ssebench as root on a host whose iptables Docker uses (chain "
        f"{docker_firewall.FORWARD_CHAIN}); --egress restricted works without",
    )


def docker_and_egress_checks() -> list[Check]:
    checks = docker_checks()
    if not all(check.ok for check in checks if check.required):
        return checks
    status = docker_firewall.status()
    return [*checks, open_egress_check(status), host_listener_check(status.usable)]


BACKEND_CHECKS: dict[str, Callable[[argparse.Namespace], list[Check]]] = {
    "docker": lambda arguments: docker_and_egress_checks(),
    "kubernetes": kubernetes_checks,
}


def model_checks() -> list[Check]:
    """What runs with --model need: the model lists, the master key, the provider keys
    (by name; values are never shown), docker compose and the local proxy."""
    from ssebench.proxy import MASTER_KEY_VARIABLE, LocalStack, ModelCatalog
    from ssebench.proxy.stack import compose_command

    checks = []
    try:
        catalog = ModelCatalog.load()
        checks.append(Check("models", True, True, f"{len(catalog.names)} models"))
        variables = sorted(
            {
                variable
                for variable in (catalog.get(name).key_variable for name in catalog.names)
                if variable  # a keyless list (a server of the user's own) needs none
            }
        )
    except SsebenchError as error:
        checks.append(Check("models", False, True, str(error), "fix the file it names"))
        variables = []
    master = bool(os.environ.get(MASTER_KEY_VARIABLE))
    checks.append(
        Check(
            MASTER_KEY_VARIABLE,
            master,
            True,
            "set" if master else "not set",
            "" if master else f"export {MASTER_KEY_VARIABLE}=sk-... (the proxy's master key)",
        )
    )
    for variable in variables:
        found = bool(os.environ.get(variable))
        checks.append(
            Check(
                variable,
                found,
                False,
                "set" if found else "not set",
                "" if found else f"export {variable}=... to use its models with the local proxy",
            )
        )
    try:
        checks.append(Check("docker compose", True, False, " ".join(compose_command())))
    except SsebenchError as error:
        checks.append(
            Check("docker compose", False, False, str(error), "apt-get install docker-compose")
        )
    try:
        status = LocalStack().status()
        detail = f"ready at {status.host_url}" if status.healthy else "not running"
        checks.append(
            Check(
                "local proxy",
                status.healthy,
                False,
                detail,
                "" if status.healthy else "ssebench proxy up (ssebench run starts it too)",
            )
        )
    except SsebenchError as error:
        checks.append(Check("local proxy", False, False, str(error)))
    return checks


def register(commands: Any) -> None:
    parser = commands.add_parser("doctor", help="check what runs need on this machine")
    parser.add_argument("--backend", help="as for ssebench run; also $SSEBENCH_BACKEND")
    parser.add_argument("--model", action="store_true", help="also check what model runs need")
    parser.add_argument(
        "--probe-image",
        metavar="IMAGE",
        help="kubernetes: the image (with python3, pullable by the nodes; any run image) "
        "of the short probe that checks whether the cluster enforces NetworkPolicy",
    )
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(handler=doctor_command)


def doctor_command(arguments: argparse.Namespace) -> int:
    name = selected_backend_name(arguments.backend)
    checks: list[Check] = []
    try:
        load_backend(name)
        checks.append(Check("backend", True, True, name))
    except SsebenchError as error:
        checks.append(Check("backend", False, True, str(error), "ssebench doctor --backend NAME"))
    backend_checks = BACKEND_CHECKS.get(name)
    if backend_checks is not None:
        checks += backend_checks(arguments)
    if arguments.model:
        checks += model_checks()
    failed = any(check.required and not check.ok for check in checks)
    if arguments.json:
        print_json({"backend": name, "ok": not failed, "checks": [asdict(c) for c in checks]})
    else:
        for check in checks:
            mark = "ok  " if check.ok else ("FAIL" if check.required else "warn")
            fix = f"  -> {check.fix}" if check.fix else ""
            print(f"{mark}  {check.name}: {check.detail}{fix}")
    return 1 if failed else 0
