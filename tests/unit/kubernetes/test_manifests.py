"""Every field the spec names in the Job, pod, Secret and NetworkPolicy of a run."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from ssebench import labels
from ssebench.backends.kubernetes import manifests
from ssebench.backends.kubernetes.config import KubernetesSettings, is_dns_label
from ssebench.errors import BackendError, UserError
from ssebench.extensions import (
    ARCHIVE_TARGET,
    REFERENCE_PATCH_TARGET,
    RESULTS_TARGET,
    Mount,
    NetworkPolicy,
    RunSpec,
    TaskResources,
)

MODEL_KEY = "sk-unit-test-model-key-4b1d"
RUN_ID = "20250101-120000-abcdef"


def make_spec(tmp_path: Path, **overrides: Any) -> RunSpec:
    run_dir = tmp_path / RUN_ID
    fields: dict[str, Any] = {
        "run_id": RUN_ID,
        "task_name": "py-semver-prerelease",
        "mode": "sandbox",
        "image": "registry.invalid/agent-dummy/py-semver-prerelease:1",
        "results": Mount(target=RESULTS_TARGET, source=str(run_dir)),
        "archive": Mount(target=ARCHIVE_TARGET, source=str(run_dir / "archive")),
        "env": {"SSE_API_KEY": MODEL_KEY, "SSE_MODEL_NAME": "claude-x", "TIMEOUT": "900"},
        "labels": labels.run_labels(
            run_id=RUN_ID,
            task_id="py-semver-prerelease",
            model="openai/gpt-x",
            agent="dummy",
            results=str(run_dir),
            reference_run=False,
        ),
        "timeout": 900,
    }
    fields.update(overrides)
    return RunSpec(**fields)


def render(spec: RunSpec, settings: KubernetesSettings | None = None, patch: bytes | None = None):
    settings = settings or KubernetesSettings()
    name = manifests.object_name(spec.run_id)
    object_labels, annotations = manifests.split_labels(spec.labels)
    return (
        manifests.secret(spec, name, object_labels, annotations, patch),
        manifests.network_policy(spec, name, object_labels, annotations, settings.proxy_settings()),
        manifests.job(
            spec, name, object_labels, annotations, settings, has_reference_patch=patch is not None
        ),
    )


def containers(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in job["spec"]["template"]["spec"]["containers"]}


def test_names_are_dns_labels_and_distinct() -> None:
    assert manifests.object_name("abc-123") == "ssebench-abc-123"
    names = {manifests.object_name(run_id) for run_id in ("Run.1", "run-1", "run.1", "RUN_1")}
    assert len(names) == 4
    for run_id in ("Run.1", "a" * 64, "-x-", "20250101-120000-abcdef", "x_y.z"):
        name = manifests.object_name(run_id)
        assert is_dns_label(name) and name.startswith("ssebench-"), name


def test_all_three_objects_share_name_labels_and_annotations(tmp_path: Path) -> None:
    for obj in render(make_spec(tmp_path)):
        meta = obj["metadata"]
        assert meta["name"] == "ssebench-20250101-120000-abcdef"
        assert meta["labels"]["app.kubernetes.io/managed-by"] == "ssebench"
        for key in (labels.RUN_ID, labels.TASK_ID, labels.AGENT, labels.WEBUI):
            assert key in meta["labels"], key
        # Not valid label values: the run directory always, a model with a slash too.
        assert labels.RESULTS not in meta["labels"]
        assert meta["annotations"][labels.RESULTS] == str(tmp_path / RUN_ID)
        assert meta["annotations"][labels.MODEL] == "openai/gpt-x"


def test_the_model_key_is_in_the_secret_and_nowhere_in_the_job(tmp_path: Path) -> None:
    secret, policy, job = render(make_spec(tmp_path))
    assert secret["kind"] == "Secret" and secret["type"] == "Opaque"
    decoded = {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}
    assert decoded["SSE_API_KEY"] == MODEL_KEY
    for obj in (job, policy):
        assert MODEL_KEY not in json.dumps(obj)
        assert base64.b64encode(MODEL_KEY.encode()).decode() not in json.dumps(obj)
    env = containers(job)["task"]["env"]
    assert {entry["name"] for entry in env} == {"SSE_API_KEY", "SSE_MODEL_NAME", "TIMEOUT"}
    for entry in env:
        assert "value" not in entry
        assert entry["valueFrom"]["secretKeyRef"] == {
            "name": secret["metadata"]["name"],
            "key": entry["name"],
        }


def test_reference_patch_is_in_the_secret_and_mounted_read_only(tmp_path: Path) -> None:
    secret, _, job = render(make_spec(tmp_path), patch=b"--- a\n+++ b\n\xff")
    assert base64.b64decode(secret["data"][manifests.REFERENCE_PATCH_KEY]) == b"--- a\n+++ b\n\xff"
    task = containers(job)["task"]
    mount = next(m for m in task["volumeMounts"] if m["name"] == "reference")
    assert mount["readOnly"] is True
    volume = next(v for v in job["spec"]["template"]["spec"]["volumes"] if v["name"] == "reference")
    assert volume["secret"]["secretName"] == secret["metadata"]["name"]
    folder, _, file_name = REFERENCE_PATCH_TARGET.rpartition("/")
    assert mount["mountPath"] == folder
    assert volume["secret"]["items"] == [{"key": manifests.REFERENCE_PATCH_KEY, "path": file_name}]
    _, _, plain = render(make_spec(tmp_path))
    assert "reference" not in json.dumps(plain["spec"]["template"]["spec"]["volumes"])


def test_job_fields(tmp_path: Path) -> None:
    _, _, job = render(make_spec(tmp_path, timeout=900))
    spec = job["spec"]
    assert job["apiVersion"] == "batch/v1"
    assert spec["backoffLimit"] == 0
    assert spec["activeDeadlineSeconds"] == 900 + 1800
    assert spec["ttlSecondsAfterFinished"] == 3600
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert pod["automountServiceAccountToken"] is False
    assert pod["enableServiceLinks"] is False
    # No grace: the API server removes a deleted pod at once, and frees its node
    assert pod["terminationGracePeriodSeconds"] == 0
    for host in ("hostNetwork", "hostPID", "hostIPC", "shareProcessNamespace"):
        assert pod[host] is False, host
    assert all("hostPath" not in volume for volume in pod["volumes"])
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert spec["template"]["metadata"]["labels"][labels.RUN_ID] == RUN_ID
    assert "runtimeClassName" not in pod and "imagePullSecrets" not in pod


def test_kept_runs_have_no_time_to_live(tmp_path: Path) -> None:
    _, _, job = render(make_spec(tmp_path, keep=True))
    assert "ttlSecondsAfterFinished" not in job["spec"]


def test_kept_runs_keep_their_task_container_running_after_grading(tmp_path: Path) -> None:
    """The spec: the task container of a kept run keeps running after grading."""
    for keep, expected in ((True, [{"name": "SSE_KEEP_ALIVE", "value": "1"}]), (False, [])):
        secret, _, job = render(make_spec(tmp_path, keep=keep))
        env = containers(job)[manifests.TASK_CONTAINER]["env"]
        assert [variable for variable in env if "value" in variable] == expected
        assert "SSE_KEEP_ALIVE" not in secret["data"]


def test_settings_reach_the_job(tmp_path: Path) -> None:
    settings = KubernetesSettings(
        deadline_slack=60,
        ttl_seconds=5,
        resources={"limits": {"cpu": "2"}},
        runtime_class="gvisor",
        image_pull_secrets=("one", "two"),
        image_pull_policy="Never",
    )
    _, _, job = render(make_spec(tmp_path, timeout=100), settings)
    pod = job["spec"]["template"]["spec"]
    assert job["spec"]["activeDeadlineSeconds"] == 160
    assert job["spec"]["ttlSecondsAfterFinished"] == 5
    assert pod["runtimeClassName"] == "gvisor"
    assert pod["imagePullSecrets"] == [{"name": "one"}, {"name": "two"}]
    task = containers(job)["task"]
    assert task["resources"] == {"limits": {"cpu": "2"}}
    assert {c["imagePullPolicy"] for c in containers(job).values()} == {"Never"}


def test_a_tasks_resources_are_its_limits_unless_the_user_set_them(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, resources=TaskResources(cpus=0.5, memory_mb=4096))
    _, _, job = render(spec)
    # The limits are the task's; a default request above a limit comes down to it.
    assert containers(job)["task"]["resources"] == {
        "requests": {"cpu": "0.5", "memory": "2Gi", "ephemeral-storage": "2Gi"},
        "limits": {"cpu": "0.5", "memory": "4096Mi", "ephemeral-storage": "20Gi"},
    }
    users = KubernetesSettings(resources={"limits": {"cpu": "2"}}, resources_set=True)
    _, _, job = render(spec, users)
    assert containers(job)["task"]["resources"] == {"limits": {"cpu": "2"}}


def test_task_container(tmp_path: Path) -> None:
    spec = make_spec(tmp_path)
    _, _, job = render(spec)
    task = containers(job)["task"]
    assert task["image"] == spec.image
    assert "command" not in task and "args" not in task  # the image's own entrypoint
    assert task["resources"] == {
        "requests": {"cpu": "1", "memory": "2Gi", "ephemeral-storage": "2Gi"},
        "limits": {"cpu": "4", "memory": "8Gi", "ephemeral-storage": "20Gi"},
    }
    context = task["securityContext"]
    assert context["runAsUser"] == 0
    assert context["privileged"] is False
    assert context["allowPrivilegeEscalation"] is False
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}
    assert context["capabilities"] == {
        "drop": ["ALL"],
        "add": ["CHOWN", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID", "KILL"],
    }
    assert {(m["name"], m["mountPath"]) for m in task["volumeMounts"]} == {
        ("results", RESULTS_TARGET),
        ("archive", ARCHIVE_TARGET),
    }


def test_collector_container(tmp_path: Path) -> None:
    spec = make_spec(tmp_path)
    _, _, job = render(spec)
    collector = containers(job)["collector"]
    assert collector["image"] == spec.image
    assert collector["command"][:2] == ["sh", "-c"]
    assert collector["command"][-1] == str(job["spec"]["activeDeadlineSeconds"])
    assert "env" not in collector and "envFrom" not in collector
    context = collector["securityContext"]
    assert context["capabilities"] == {"drop": ["ALL"], "add": ["DAC_READ_SEARCH"]}
    assert context["allowPrivilegeEscalation"] is False
    assert context["readOnlyRootFilesystem"] is True
    assert all(mount["readOnly"] is True for mount in collector["volumeMounts"])
    volumes = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
    assert volumes["results"] == {"name": "results", "emptyDir": {"sizeLimit": "2Gi"}}
    assert volumes["archive"] == {"name": "archive", "emptyDir": {"sizeLimit": "2Gi"}}


def test_network_policy_restricted(tmp_path: Path) -> None:
    _, policy, _ = render(make_spec(tmp_path))
    spec = policy["spec"]
    assert policy["apiVersion"] == "networking.k8s.io/v1"
    assert spec["podSelector"] == {"matchLabels": {labels.RUN_ID: RUN_ID}}
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["ingress"] == []
    dns, proxy = spec["egress"]
    assert dns["to"][0]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "kube-system"
    }
    assert dns["to"][0]["podSelector"]["matchLabels"] == {"k8s-app": "kube-dns"}
    assert {(p["protocol"], p["port"]) for p in dns["ports"]} == {("UDP", 53), ("TCP", 53)}
    assert proxy["to"][0]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "ssebench"
    }
    assert proxy["to"][0]["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "litellm"}
    assert proxy["ports"] == [{"protocol": "TCP", "port": 4000}]
    assert "ipBlock" not in json.dumps(spec)


def test_network_policy_open_adds_public_ipv4(tmp_path: Path) -> None:
    _, policy, _ = render(make_spec(tmp_path, network=NetworkPolicy(egress="open")))
    public = policy["spec"]["egress"][2]
    assert public == {
        "to": [
            {
                "ipBlock": {
                    "cidr": "0.0.0.0/0",
                    "except": [
                        "10.0.0.0/8",
                        "172.16.0.0/12",
                        "192.168.0.0/16",
                        "100.64.0.0/10",
                        "169.254.0.0/16",
                    ],
                }
            }
        ]
    }


def test_proxy_settings_shape_the_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSEBENCH_K8S_NAMESPACE", "runs")
    monkeypatch.setenv("SSEBENCH_K8S_PROXY_NAMESPACE", "stack")
    monkeypatch.setenv("SSEBENCH_K8S_PROXY_URL", "http://proxy.stack.svc:8080")
    monkeypatch.setenv("SSEBENCH_K8S_PROXY_SELECTOR", "app=llm,tier=proxy")
    _, policy, _ = render(make_spec(tmp_path), KubernetesSettings.from_environment())
    proxy = policy["spec"]["egress"][1]
    assert proxy["to"][0]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "stack"
    }
    assert proxy["to"][0]["podSelector"]["matchLabels"] == {"app": "llm", "tier": "proxy"}
    assert proxy["ports"] == [{"protocol": "TCP", "port": 8080}]


def test_bad_environment_names_and_run_ids_are_refused(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="not valid"):
        render(make_spec(tmp_path, env={"BAD-NAME": MODEL_KEY}))
    for run_id in ("-x", "a" * 64, "x."):
        with pytest.raises(UserError, match="label value"):
            manifests.check_run_id(run_id)
    manifests.check_run_id("20250101-120000-abcdef")


def test_copy_pod_is_hardened() -> None:
    pod = manifests.copy_pod("image:1", "ssebench-copy-x", KubernetesSettings(), seconds=600)
    spec = pod["spec"]
    assert spec["automountServiceAccountToken"] is False
    assert spec["activeDeadlineSeconds"] == 600
    (container,) = spec["containers"]
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert pod["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "ssebench"


def test_owned_objects_name_the_job_and_keep_their_metadata() -> None:
    references = manifests.owner_references("ssebench-x", "uid-1")
    assert references == [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "ssebench-x", "uid": "uid-1"}
    ]
    body = {"kind": "Secret", "metadata": {"name": "ssebench-x", "labels": {"a": "b"}}}
    owned = manifests.owned(body, references)
    assert owned["metadata"] == {**body["metadata"], "ownerReferences": references}
    assert "ownerReferences" not in body["metadata"], "the body given is left as it was"
