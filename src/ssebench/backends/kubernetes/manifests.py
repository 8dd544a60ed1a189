"""The objects of a run, as plain dictionaries the API accepts (spec: kubernetes.txt,
"What a run creates"): a Secret with the run's environment, a NetworkPolicy, and a Job
whose pod has the task container and the collector.

Rendering needs no client and no cluster, so every field is checked by unit tests. The
run's environment appears in the Secret only: the Job names the variables and refers to
the Secret for their values.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping
from typing import Any

from ssebench.backends.kubernetes.config import (
    KubernetesSettings,
    ProxySettings,
    is_label_key,
    is_label_value,
)
from ssebench.backends.network_ranges import PRIVATE_IPV4_RANGES
from ssebench.errors import BackendError, UserError
from ssebench.extensions import (
    ARCHIVE_TARGET,
    REFERENCE_PATCH_TARGET,
    RESULTS_TARGET,
    RunSpec,
    TaskResources,
)
from ssebench.labels import RESULTS, RUN_ID

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "ssebench"
TASK_CONTAINER = "task"
COLLECTOR_CONTAINER = "collector"
RESULTS_VOLUME = "results"
ARCHIVE_VOLUME = "archive"
REFERENCE_VOLUME = "reference"
# The Secret key of the reference patch: not a valid variable name, so it can never be
# mistaken for one of the environment's keys.
REFERENCE_PATCH_KEY = "reference.patch"
VOLUME_SIZE_LIMIT = "2Gi"
KEEP_ALIVE_VARIABLE = "SSE_KEEP_ALIVE"
# Entrypoint capabilities (same as Docker's): prepare and enter the users' directories,
# become them, and clear their leftover processes.
TASK_CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID", "KILL")
COLLECTOR_CAPABILITIES = ("DAC_READ_SEARCH",)
COLLECTOR_RESOURCES = {
    "requests": {"cpu": "10m", "memory": "32Mi"},
    "limits": {"cpu": "500m", "memory": "128Mi"},
}
# None: a run's pod is deleted once its results are read (or, still running, its results
# die with it), so nothing is worth waiting for. The API server removes a pod whose grace
# is 0 at once, where a graceful one stays until its kubelet confirms its containers
# gone (2 to 3 s here): a full node can take the next run's pod that much sooner
# (docs/performance.md, "A full node"). The kubelet still sends SIGTERM and gives
# each container 2 s before SIGKILL.
TERMINATION_GRACE_SECONDS = 0
KUBE_DNS = {
    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
    "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
}
# The collector's only job is to be alive while the results are read. It exits 0 on a
# SIGTERM (the pod's deletion, or collect_results of a kept run), or when its sleep (the
# Job's deadline) ends.
COLLECTOR_SCRIPT = "trap 'exit 0' TERM; sleep \"$0\" & wait $!"
SIDECAR_REFUSED = (
    "The kubernetes backend does not support --mode sidecar: its two containers would "
    "need the project's files copied between them before they start; use --mode sandbox"
)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NOT_IN_DNS_LABEL = re.compile(r"[^a-z0-9-]+")
_NAME_PREFIX = "ssebench-"
_MAX_DNS_LABEL = 63


def object_name(run_id: str) -> str:
    """ssebench-<run id as a DNS label>: the name of the Job, its Secret and its policy.

    A run ID that is already a lowercase DNS label is kept as it is; any other gets a
    hash of the exact ID, so "Run.1" and "run-1" never share a name.
    """
    room = _MAX_DNS_LABEL - len(_NAME_PREFIX)
    cleaned = _NOT_IN_DNS_LABEL.sub("-", run_id.lower()).strip("-")
    if cleaned == run_id and len(cleaned) <= room:
        return _NAME_PREFIX + cleaned
    digest = hashlib.sha256(run_id.encode()).hexdigest()[:8]
    stem = cleaned[: room - len(digest) - 1].strip("-")
    return f"{_NAME_PREFIX}{stem}-{digest}" if stem else f"{_NAME_PREFIX}{digest}"


def check_run_id(run_id: str) -> None:
    """The run ID is the pod's label, which the NetworkPolicy selects: it must be one."""
    if not is_label_value(run_id) or not run_id:
        raise UserError(
            f"The run ID {run_id!r} cannot be a Kubernetes label value (at most 63 "
            "characters, starting and ending with a letter or digit); pick another --run-id"
        )


def split_labels(labels: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(labels, annotations): what Kubernetes accepts as a label, and the rest.

    The run directory (ssebench.results) is always an annotation, as the spec says; any
    other value that is no valid label value (a model name with a slash) joins it.
    """
    as_labels: dict[str, str] = {MANAGED_BY: MANAGED_BY_VALUE}
    as_annotations: dict[str, str] = {}
    for key, value in labels.items():
        if key != RESULTS and is_label_key(key) and is_label_value(value):
            as_labels[key] = value
        else:
            as_annotations[key] = value
    as_labels[MANAGED_BY] = MANAGED_BY_VALUE
    return as_labels, as_annotations


def metadata(
    name: str, labels: Mapping[str, str], annotations: Mapping[str, str]
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(labels)}
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def check_env_names(env: Mapping[str, str]) -> None:
    for name in env:
        if not _ENV_NAME.match(name):
            raise BackendError(f"The environment variable name {name!r} is not valid")


def secret(
    spec: RunSpec,
    name: str,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    reference_patch: bytes | None,
) -> dict[str, Any]:
    """The run's environment and, for a reference run, the reference patch."""
    check_env_names(spec.env)
    data = {key: _b64(value.encode()) for key, value in spec.env.items()}
    if reference_patch is not None:
        data[REFERENCE_PATCH_KEY] = _b64(reference_patch)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata(name, labels, annotations),
        "type": "Opaque",
        "immutable": True,
        "data": data,
    }


def network_policy(
    spec: RunSpec,
    name: str,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    proxy: ProxySettings,
) -> dict[str, Any]:
    """No ingress; egress to the cluster's DNS and the proxy pods, and for open egress
    every IPv4 address outside the private ranges."""
    egress: list[dict[str, Any]] = [
        {
            "to": [KUBE_DNS],
            "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
        },
        {
            "to": [
                {
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": proxy.namespace}
                    },
                    "podSelector": {"matchLabels": dict(proxy.selector)},
                }
            ],
            "ports": [{"protocol": "TCP", "port": proxy.port}],
        },
    ]
    if spec.network.egress == "open":
        egress.append(
            {"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": list(PRIVATE_IPV4_RANGES)}}]}
        )
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata(name, labels, annotations),
        "spec": {
            "podSelector": {"matchLabels": {RUN_ID: spec.run_id}},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [],
            "egress": egress,
        },
    }


def task_resources(settings: KubernetesSettings, task: TaskResources) -> dict[str, dict[str, str]]:
    """The task container's requests and limits: SSEBENCH_K8S_RESOURCES when the user
    set it; else the defaults, with the task's cpus and memory as the limits (and the
    requests, where the default request is more)."""
    resources = {key: dict(value) for key, value in settings.resources.items()}
    if settings.resources_set or task == TaskResources():
        return resources
    asked = {
        "cpu": f"{task.cpus:g}" if task.cpus else None,
        "memory": f"{task.memory_mb}Mi" if task.memory_mb else None,
    }
    requests, limits = resources.setdefault("requests", {}), resources.setdefault("limits", {})
    for name, quantity in asked.items():
        if quantity is None:
            continue
        limits[name] = quantity
        if name in requests and _quantity(requests[name]) > _quantity(quantity):
            requests[name] = quantity
    return resources


# Two-letter suffixes before one-letter ones: "Mi" is not "i" of "M".
_SUFFIXES = {
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
    "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
}  # fmt: skip


def _quantity(text: str) -> float:
    """A Kubernetes quantity as a number ("500m" 0.5, "2Gi" 2**31), for comparing."""
    for suffix, factor in _SUFFIXES.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    return float(text)


def _security_context(capabilities: tuple[str, ...], *, read_only_root: bool) -> dict[str, Any]:
    return {
        "runAsUser": 0,
        "runAsGroup": 0,
        "runAsNonRoot": False,
        "privileged": False,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": read_only_root,
        "capabilities": {"drop": ["ALL"], "add": list(capabilities)},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def pod_hardening(settings: KubernetesSettings) -> dict[str, Any]:
    """The pod-level fields every pod of ours has: no token, no host, no service links."""
    fields: dict[str, Any] = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "hostNetwork": False,
        "hostPID": False,
        "hostIPC": False,
        "shareProcessNamespace": False,
        "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
    }
    if settings.runtime_class:
        fields["runtimeClassName"] = settings.runtime_class
    if settings.image_pull_secrets:
        fields["imagePullSecrets"] = [{"name": secret} for secret in settings.image_pull_secrets]
    return fields


def active_deadline(spec: RunSpec, settings: KubernetesSettings) -> int:
    return spec.timeout + settings.deadline_slack


def job(
    spec: RunSpec,
    name: str,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    settings: KubernetesSettings,
    *,
    has_reference_patch: bool,
) -> dict[str, Any]:
    deadline = active_deadline(spec, settings)
    check_env_names(spec.env)
    env = [
        {"name": key, "valueFrom": {"secretKeyRef": {"name": name, "key": key}}} for key in spec.env
    ]
    if spec.keep and KEEP_ALIVE_VARIABLE not in spec.env:
        # A kept run's task container stays up after grading, as the spec says: an
        # exited container cannot be reached (kubectl exec) on Kubernetes.
        env.append({"name": KEEP_ALIVE_VARIABLE, "value": "1"})
    task_mounts: list[dict[str, Any]] = [
        {"name": RESULTS_VOLUME, "mountPath": RESULTS_TARGET},
        {"name": ARCHIVE_VOLUME, "mountPath": ARCHIVE_TARGET},
    ]
    volumes: list[dict[str, Any]] = [
        {"name": RESULTS_VOLUME, "emptyDir": {"sizeLimit": VOLUME_SIZE_LIMIT}},
        {"name": ARCHIVE_VOLUME, "emptyDir": {"sizeLimit": VOLUME_SIZE_LIMIT}},
    ]
    if has_reference_patch:
        folder, _, file_name = REFERENCE_PATCH_TARGET.rpartition("/")
        task_mounts.append({"name": REFERENCE_VOLUME, "mountPath": folder, "readOnly": True})
        volumes.append(
            {
                "name": REFERENCE_VOLUME,
                "secret": {
                    "secretName": name,
                    "items": [{"key": REFERENCE_PATCH_KEY, "path": file_name}],
                    "defaultMode": 0o444,
                },
            }
        )
    task = {
        "name": TASK_CONTAINER,
        "image": spec.image,
        "imagePullPolicy": settings.image_pull_policy,
        "env": env,
        "volumeMounts": task_mounts,
        "resources": task_resources(settings, spec.resources),
        "securityContext": _security_context(TASK_CAPABILITIES, read_only_root=False),
    }
    collector = {
        "name": COLLECTOR_CONTAINER,
        "image": spec.image,
        "imagePullPolicy": settings.image_pull_policy,
        "command": ["sh", "-c", COLLECTOR_SCRIPT, str(deadline)],
        "volumeMounts": [
            {"name": RESULTS_VOLUME, "mountPath": RESULTS_TARGET, "readOnly": True},
            {"name": ARCHIVE_VOLUME, "mountPath": ARCHIVE_TARGET, "readOnly": True},
        ],
        "resources": COLLECTOR_RESOURCES,
        "securityContext": _security_context(COLLECTOR_CAPABILITIES, read_only_root=True),
    }
    job_spec: dict[str, Any] = {
        "backoffLimit": 0,
        "activeDeadlineSeconds": deadline,
        "template": {
            "metadata": {
                key: value
                for key, value in metadata(name, labels, annotations).items()
                if key != "name"  # the Job controller names its pods
            },
            "spec": {
                **pod_hardening(settings),
                "containers": [task, collector],
                "volumes": volumes,
            },
        },
    }
    if not spec.keep:
        job_spec["ttlSecondsAfterFinished"] = settings.ttl_seconds
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(name, labels, annotations),
        "spec": job_spec,
    }


def copy_pod(
    image: str, name: str, settings: KubernetesSettings, *, seconds: int
) -> dict[str, Any]:
    """A short pod that only sleeps, so a file can be read out of its image by exec."""
    labels = {MANAGED_BY: MANAGED_BY_VALUE, "ssebench.copy": "true"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata(name, labels, {}),
        "spec": {
            **pod_hardening(settings),
            "terminationGracePeriodSeconds": 1,
            "activeDeadlineSeconds": seconds,
            "containers": [
                {
                    "name": "copy",
                    "image": image,
                    "imagePullPolicy": settings.image_pull_policy,
                    "command": ["sh", "-c", COLLECTOR_SCRIPT, str(seconds)],
                    "resources": COLLECTOR_RESOURCES,
                    "securityContext": copy_security_context(),
                }
            ],
        },
    }


def copy_security_context() -> dict[str, Any]:
    """A container that reads a file out of its image: root, allowed to read what only
    root may (the reference patch), nothing to write."""
    return _security_context(COLLECTOR_CAPABILITIES, read_only_root=True)


def owner_references(job_name: str, job_uid: str) -> list[dict[str, Any]]:
    """The ownerReferences that make an object the Job's, so the cluster removes it
    with the Job (and at once, should the Job be gone already)."""
    return [{"apiVersion": "batch/v1", "kind": "Job", "name": job_name, "uid": job_uid}]


def owned(body: Mapping[str, Any], references: list[dict[str, Any]]) -> dict[str, Any]:
    """body (a Secret, a NetworkPolicy) created owned by the Job of references."""
    return {**body, "metadata": {**body["metadata"], "ownerReferences": references}}
