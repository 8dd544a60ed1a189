"""Whether the cluster enforces NetworkPolicy (spec, "The cluster must enforce
NetworkPolicy"): a short probe in the runs' namespace.

Kubernetes accepts a NetworkPolicy whether or not a network plugin enforces it, so the
only way to know is to try. Two pods of the probe, a target that listens on a port and
a client that connects to the target's pod address, are both selected by one policy that
admits nothing in and lets nothing out. Where the policy is enforced the client cannot
connect; where it is ignored, it connects. The probe reaches nothing but its own target
pod: no Service, no name, no address outside the cluster.

Bounded: the pods have a short activeDeadlineSeconds and the probe gives up after
PROBE_SECONDS. Its objects carry app.kubernetes.io/managed-by=ssebench,
ssebench.probe and, as a run's do, the process that made them and their deadline; the
policy is owned by the target pod, and the pods are deleted at the end, which removes
the policy with them. Prune removes the probe pods of a process killed during a probe
(remove_leftovers). A known answer (enforced or not) is kept for ANSWER_SECONDS in the
user's cache folder, for each API server and namespace, so that the runs of an
evaluation and the next `ssebench run` do not pay the probe again; doctor always probes
afresh, and writes what it found.

The pods run `python3 -c` in the image they are given: every run image has Python,
since the container's runtime is written in it.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.backends.kubernetes import client, manifests, pods
from ssebench.backends.kubernetes.config import KubernetesSettings
from ssebench.labels import DEADLINE, RUNNER_HOST, RUNNER_PID, abandoned_reason

PROBE_LABEL = "ssebench.probe"
PROBE_PORT = 4264
# How long each pod may live at most, and the target waits for a connection.
POD_SECONDS = 60
# The whole probe, pulling and starting its pods included; then it cannot tell.
PROBE_SECONDS = 45.0
# The client waits this long before its first attempt: a network plugin programs a new
# pod's rules a moment after the pod starts.
SETTLE_SECONDS = 2.0
ATTEMPTS = 3
POLL_SECONDS = 0.5
# How long a probe's answer serves every ssebench process of this user: a cluster's
# network plugin changes rarely, and a probe costs 5-10 s of each run's start.
ANSWER_SECONDS = 3600
PROBE_RESOURCES = {
    "requests": {"cpu": "10m", "memory": "16Mi"},
    "limits": {"cpu": "200m", "memory": "64Mi"},
}
# A probe's container: nobody, no capabilities, nothing to write.
PROBE_SECURITY_CONTEXT = {
    "runAsUser": 65534,
    "runAsGroup": 65534,
    "runAsNonRoot": True,
    "privileged": False,
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}
LISTENING = "listening"
# A probe's pod prints one line, but its image is the user's (--probe-image): its log is
# read up to this much.
PROBE_LOG_BYTES = 64 * 1024
TARGET_SCRIPT = f"""
import socket, sys
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("", int(sys.argv[1])))
server.listen(8)
server.settimeout(float(sys.argv[2]))
print("{LISTENING}", flush=True)
while True:
    try:
        connection, _ = server.accept()
    except OSError:
        break
    connection.close()
"""
CLIENT_SCRIPT = """
import socket, sys, time
host, port, settle, attempts = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
time.sleep(settle)
outcomes = []
for _ in range(attempts):
    try:
        socket.create_connection((host, port), timeout=1.5).close()
        outcomes.append("connected")
    except OSError:
        outcomes.append("blocked")
    time.sleep(0.3)
print("probe:", " ".join(outcomes), flush=True)
"""


@dataclass(frozen=True)
class PolicyCheck:
    """enforced: True, False, or None when the probe could not tell; detail: why."""

    enforced: bool | None
    detail: str


def verdict(outcomes: list[str]) -> PolicyCheck:
    """The answer from the client's attempts, oldest first. The last one decides, since
    a plugin may program the rules while the client tries."""
    if not outcomes or any(item not in ("connected", "blocked") for item in outcomes):
        return PolicyCheck(None, f"the probe's client answered {' '.join(outcomes)!r}")
    if outcomes[-1] == "blocked":
        return PolicyCheck(
            True, "enforced: a pod under a deny-all NetworkPolicy could not reach another pod"
        )
    if all(item == "connected" for item in outcomes):
        return PolicyCheck(
            False,
            "not enforced: a pod under a deny-all NetworkPolicy reached another pod, so "
            "the runs' policies do nothing here",
        )
    return PolicyCheck(None, f"the probe's attempts disagree: {' '.join(outcomes)}")


def probe_labels(probe: str, role: str) -> tuple[dict[str, str], dict[str, str]]:
    """(labels, annotations) of a probe's object: which probe, and, as on a run, the
    process that made it and when it ends, so prune can tell a leftover."""
    return manifests.split_labels(
        {
            PROBE_LABEL: probe,
            f"{PROBE_LABEL}-role": role,
            DEADLINE: str(int(time.time()) + POD_SECONDS),
            RUNNER_HOST: socket.gethostname(),
            RUNNER_PID: str(os.getpid()),
        }
    )


def probe_pod(
    probe: str, role: str, image: str, arguments: list[str], settings: KubernetesSettings
) -> dict[str, Any]:
    """A pod of the probe: python3 -c the role's script, unprivileged, short-lived."""
    script = TARGET_SCRIPT if role == "target" else CLIENT_SCRIPT
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": manifests.metadata(
            f"ssebench-probe-{probe}-{role}", *probe_labels(probe, role)
        ),
        "spec": {
            **manifests.pod_hardening(settings),
            "terminationGracePeriodSeconds": 1,
            "activeDeadlineSeconds": POD_SECONDS,
            "containers": [
                {
                    "name": role,
                    "image": image,
                    "imagePullPolicy": settings.image_pull_policy,
                    "command": ["python3", "-c", script, *arguments],
                    "resources": PROBE_RESOURCES,
                    "securityContext": PROBE_SECURITY_CONTEXT,
                }
            ],
        },
    }


def deny_all_policy(probe: str, target_name: str, target_uid: str) -> dict[str, Any]:
    """Nothing in, nothing out, for every pod of the probe; owned by the target pod."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            **manifests.metadata(f"ssebench-probe-{probe}", *probe_labels(probe, "policy")),
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": target_name, "uid": target_uid}
            ],
        },
        "spec": {
            "podSelector": {"matchLabels": {PROBE_LABEL: probe}},
            "policyTypes": ["Ingress", "Egress"],
        },
    }


def _unpullable(pod: Any) -> bool:
    for status in pod.status.container_statuses or []:
        waiting = status.state.waiting if status.state is not None else None
        if waiting is not None and waiting.reason in pods.PULL_ERRORS:
            return True
    return False


class _Probe:
    """One run of the probe in namespace, through the backend's API client."""

    def __init__(self, settings: KubernetesSettings, image: str) -> None:
        self.api = client.api()
        self.call = client.call
        self.settings = settings
        self.namespace = settings.namespace
        self.image = image
        self.probe = secrets.token_hex(4)
        # The API server's address: what the answer is about, with the namespace.
        self.server = str(self.api.core.api_client.configuration.host)

    def _read(self, name: str) -> Any | None:
        return self.call(
            f"Cannot read the pod {name}",
            self.api.core.read_namespaced_pod,
            name,
            self.namespace,
            missing_ok=True,
        )

    def _log(self, name: str, container: str) -> str:
        log = client.read_log(
            f"Cannot read the output of {name}",
            self.namespace,
            name,
            container,
            limit_bytes=PROBE_LOG_BYTES,
        )
        return log.decode("utf-8", "replace")

    def _create_pod(self, role: str, arguments: list[str]) -> Any:
        body = probe_pod(self.probe, role, self.image, arguments, self.settings)
        return self.call(
            f"Cannot create the probe's pod {body['metadata']['name']}",
            self.api.core.create_namespaced_pod,
            self.namespace,
            body,
        )

    def _until(self, condition: Callable[[], Any], deadline: float) -> Any:
        """condition()'s first answer that is not None, or None at the deadline."""
        while time.monotonic() < deadline:
            found = condition()
            if found is not None:
                return found
            time.sleep(POLL_SECONDS)
        return None

    def run(self) -> PolicyCheck:
        deadline = time.monotonic() + PROBE_SECONDS
        target = self._create_pod("target", [str(PROBE_PORT), str(POD_SECONDS)])
        names = [target.metadata.name]
        try:
            policy = deny_all_policy(self.probe, target.metadata.name, target.metadata.uid)
            self.call(
                "Cannot create the probe's NetworkPolicy",
                self.api.networking.create_namespaced_network_policy,
                self.namespace,
                policy,
            )

            def target_listening() -> str | None:
                """Its address once it listens; "" once it cannot (it ended, or its
                image cannot be pulled); None while it starts."""
                pod = self._read(target.metadata.name)
                if pod is None or pod.status is None:
                    return None
                if pod.status.phase in ("Succeeded", "Failed") or _unpullable(pod):
                    return ""
                if pod.status.phase != "Running":
                    return None
                listening = LISTENING in self._log(target.metadata.name, "target")
                return str(pod.status.pod_ip) if listening and pod.status.pod_ip else None

            address = self._until(target_listening, deadline)
            if not address:
                return PolicyCheck(
                    None,
                    f"the probe's pod did not listen (within {PROBE_SECONDS:.0f} s): its "
                    f"image {self.image} must have python3 and be pullable by the nodes",
                )
            arguments = [address, str(PROBE_PORT), str(SETTLE_SECONDS), str(ATTEMPTS)]
            client = self._create_pod("client", arguments)
            names.append(client.metadata.name)

            def client_done() -> bool | None:
                pod = self._read(client.metadata.name)
                ended = pod and pod.status and pod.status.phase in ("Succeeded", "Failed")
                return True if ended else None

            if not self._until(client_done, deadline):
                return PolicyCheck(None, "the probe's client did not finish in time")
            answer = self._log(client.metadata.name, "client").strip().splitlines()
            outcomes = answer[-1].removeprefix("probe:").split() if answer else []
            return verdict(outcomes)
        finally:
            for name in names:
                self.call(
                    f"Cannot delete the probe's pod {name}",
                    self.api.core.delete_namespaced_pod,
                    name,
                    self.namespace,
                    grace_period_seconds=0,
                    missing_ok=True,
                )
            # Owned by the target, so gone with it; deleted here too for clusters whose
            # garbage collector is slow.
            self.call(
                "Cannot delete the probe's NetworkPolicy",
                self.api.networking.delete_namespaced_network_policy,
                f"ssebench-probe-{self.probe}",
                self.namespace,
                missing_ok=True,
            )


_answers: dict[tuple[str, str], PolicyCheck] = {}
_answers_lock = threading.Lock()


def cluster_enforces(
    settings: KubernetesSettings, image: str, *, fresh: bool = False
) -> PolicyCheck:
    """Whether the cluster of this process's kubeconfig enforces NetworkPolicy in the
    runs' namespace: an answer this process or, within ANSWER_SECONDS, another one
    found, else a probe (concurrent callers wait for one). fresh: probe in any case.

    Raises BackendError when the API refuses the probe's objects (not cached)."""
    key = (os.environ.get("KUBECONFIG", ""), settings.namespace)
    with _answers_lock:
        if not fresh and key in _answers:
            return _answers[key]
        probe = _Probe(settings, image)
        remembered = answer_file(probe.server, settings.namespace)
        answer = None if fresh else read_answer(remembered, time.time())
        if answer is None:
            answer = probe.run()
            if answer.enforced is not None:
                write_answer(remembered, answer, time.time())
        _answers[key] = answer
        return answer


def answer_file(server: str, namespace: str) -> Path:
    """Where the answer for the runs' namespace of the API server at server is kept."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    name = hashlib.sha256(f"{server}\0{namespace}".encode()).hexdigest()[:32]
    return Path(base) / "ssebench" / "network-policy" / f"{name}.json"


def read_answer(path: Path, now: float) -> PolicyCheck | None:
    """The answer kept in path if it is younger than ANSWER_SECONDS; None when there is
    none, it is older, or the file is not one this module wrote."""
    try:
        kept = json.loads(path.read_text())
        enforced, detail, found_at = kept["enforced"], kept["detail"], float(kept["found_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(enforced, bool) or not isinstance(detail, str):
        return None
    if not 0 <= now - found_at < ANSWER_SECONDS:
        return None
    return PolicyCheck(enforced, f"{detail} (found {int(now - found_at)} s ago)")


def write_answer(path: Path, answer: PolicyCheck, now: float) -> None:
    """Keep answer in path (written whole: a reader never sees half of it). A cache that
    cannot be written costs only a probe later."""
    kept = {"enforced": answer.enforced, "detail": answer.detail, "found_at": now}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(json.dumps(kept))
        partial.replace(path)
    except OSError:
        return


def remove_leftovers(settings: KubernetesSettings, now: float, host: str) -> list[str]:
    """Delete the probe pods (and so their policies) that a process killed during a
    probe left: its process is gone (on this host), or the pods' deadline passed. Their
    names."""
    api = client.api()
    probes = client.call(
        "Cannot list pods",
        api.core.list_namespaced_pod,
        settings.namespace,
        label_selector=f"{manifests.MANAGED_BY}={manifests.MANAGED_BY_VALUE},{PROBE_LABEL}",
    ).items
    removed = []
    for pod in probes:
        found = {**(pod.metadata.annotations or {}), **(pod.metadata.labels or {})}
        if abandoned_reason(found, now=now, host=host) is None:
            continue
        client.call(
            f"Cannot delete the pod {pod.metadata.name}",
            api.core.delete_namespaced_pod,
            pod.metadata.name,
            settings.namespace,
            grace_period_seconds=0,
            missing_ok=True,
        )
        removed.append(str(pod.metadata.name))
    return removed
