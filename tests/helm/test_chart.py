"""The chart: lint, the scenarios of docs/helm.md, and one test per value of the
spec's table that says where the value lands in the rendered objects."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helm.conftest import CHART, RenderFunction, helm

REPO = CHART.parents[2]
WEBUI = ("Deployment", "ssebench-webui")
PROXY = ("Deployment", "ssebench-litellm")
CATALOG = ("Deployment", "ssebench-catalog")
POSTGRES = ("StatefulSet", "ssebench-postgres")

SCENARIOS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "launcher with terminal": {"webui": {"hosted": False, "terminal": True}},
    "ingress with tls": {
        "ingress": {
            "enabled": True,
            "className": "nginx",
            "hosts": [{"host": "ssebench.example.com", "path": "/", "pathType": "Prefix"}],
            "tls": [{"secretName": "ssebench-tls", "hosts": ["ssebench.example.com"]}],
        }
    },
    "external database": {"postgres": {"enabled": False, "externalSecret": "my-database"}},
    "existing secret": {"auth": {"existingSecret": "my-auth"}},
}


@pytest.mark.parametrize("values", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_lints_clean_in_strict_mode(values: dict[str, Any]) -> None:
    report = helm.lint(CHART, values, strict=True, namespace="ssebench")
    problems = [m for m in report["messages"] if m["severity"] >= 2] + report["errors"]
    assert not problems, problems


@pytest.mark.parametrize("values", SCENARIOS.values(), ids=SCENARIOS.keys())
@pytest.mark.parametrize("release", ["ssebench", "eval"])
def test_renders_every_scenario(
    render: RenderFunction, values: dict[str, Any], release: str
) -> None:
    rendered = render(values, name=release)
    prefix = "ssebench" if release == "ssebench" else "eval-ssebench"
    for item in rendered.objects:
        assert item["metadata"]["name"].startswith(prefix), item["metadata"]["name"]
        assert len(item["metadata"]["name"]) <= 63
    assert rendered.has("Deployment", f"{prefix}-webui")
    assert rendered.has("Deployment", f"{prefix}-catalog")
    assert rendered.has("Deployment", f"{prefix}-litellm")


# --- names -----------------------------------------------------------------------


def test_release_named_after_the_chart_is_not_doubled(render: RenderFunction) -> None:
    names = {o["metadata"]["name"] for o in render(name="ssebench").objects}
    assert {"ssebench-auth", "ssebench-webui", "ssebench-litellm", "ssebench"} <= names
    assert not any("ssebench-ssebench" in name for name in names)


def test_other_release_gets_the_suffix(render: RenderFunction) -> None:
    names = {o["metadata"]["name"] for o in render(name="eval").objects}
    assert {"eval-ssebench-auth", "eval-ssebench-webui", "eval-ssebench-postgres"} <= names


def test_name_override(render: RenderFunction) -> None:
    rendered = render({"nameOverride": "bench"}, name="eval")
    assert rendered.has("Deployment", "eval-bench-webui")


def test_fullname_override(render: RenderFunction) -> None:
    rendered = render({"fullnameOverride": "sb"}, name="eval")
    assert rendered.has("Secret", "sb-auth")
    assert rendered.has("Service", "sb-litellm")


# --- image -----------------------------------------------------------------------


def test_image_tag_defaults_to_app_version(render: RenderFunction) -> None:
    app_version = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
    rendered = render({"image": {"registry": "registry.test/sse"}})
    for kind, name, image in (
        (*WEBUI, "webui"),
        (*PROXY, "litellm"),
        (*CATALOG, "catalog"),
    ):
        assert rendered.container(kind, name)["image"] == f"registry.test/sse/{image}:{app_version}"


def test_image_tag_and_digest(render: RenderFunction) -> None:
    digest = "sha256:" + "a" * 64
    rendered = render({"image": {"tag": f"1.2.3@{digest}"}})
    assert rendered.container(*CATALOG)["image"].endswith(f"/catalog:1.2.3@{digest}")


def test_image_pull_policy_and_secrets(render: RenderFunction) -> None:
    rendered = render({"image": {"pullPolicy": "Never", "pullSecrets": ["regcred"]}})
    for kind, name in (WEBUI, PROXY, CATALOG, POSTGRES):
        assert rendered.container(kind, name)["imagePullPolicy"] == "Never"
        assert rendered.pod(kind, name)["imagePullSecrets"] == [{"name": "regcred"}]


@pytest.mark.parametrize("part", ["litellm", "catalog", "webui"])
def test_part_image_name_and_tag(render: RenderFunction, part: str) -> None:
    rendered = render({part: {"image": {"name": f"my-{part}", "tag": "9.9"}}})
    assert (
        rendered.container("Deployment", f"ssebench-{part}")["image"] == f"ssebench/my-{part}:9.9"
    )


# --- auth ------------------------------------------------------------------------


def test_auth_secret_is_random_and_well_formed(render: RenderFunction) -> None:
    first = render().get("Secret", "ssebench-auth")["data"]
    second = render().get("Secret", "ssebench-auth")["data"]
    values = {key: base64.b64decode(value).decode() for key, value in first.items()}
    assert values["LITELLM_MASTER_KEY"].startswith("sk-")
    assert re.fullmatch(r"[A-Za-z0-9]+", values["POSTGRES_PASSWORD"])
    assert re.fullmatch(r"\S{16,}", values["SSEBENCH_WEBUI_TOKEN"])
    assert first != second  # made anew without a cluster to read them back from


def test_auth_existing_secret(render: RenderFunction) -> None:
    rendered = render({"auth": {"existingSecret": "my-auth"}, "webui": {"hosted": False}})
    assert not rendered.kinds("Secret")
    env = rendered.env(*WEBUI)
    assert env["SSEBENCH_WEBUI_TOKEN"]["secretKeyRef"]["name"] == "my-auth"
    assert env["LITELLM_MASTER_KEY"]["secretKeyRef"]["name"] == "my-auth"
    assert rendered.env(*PROXY)["LITELLM_MASTER_KEY"]["secretKeyRef"]["name"] == "my-auth"
    assert rendered.env(*POSTGRES)["POSTGRES_PASSWORD"]["secretKeyRef"]["name"] == "my-auth"


def test_secrets_never_in_notes_or_plain_env(render: RenderFunction) -> None:
    rendered = render({"webui": {"hosted": False}})
    data = rendered.get("Secret", "ssebench-auth")["data"]
    secrets = [base64.b64decode(value).decode() for value in data.values()]
    text = rendered.notes + yaml.safe_dump_all(
        [o for o in rendered.objects if o["kind"] != "Secret"]
    )
    assert not [secret for secret in secrets if secret in text]


# --- litellm ---------------------------------------------------------------------


def test_litellm_provider_key_secrets(render: RenderFunction) -> None:
    rendered = render({"litellm": {"providerKeySecrets": ["provider-keys", "more-keys"]}})
    env_from = rendered.container(*PROXY)["envFrom"]
    assert [item["secretRef"]["name"] for item in env_from] == ["provider-keys", "more-keys"]


def test_litellm_image_config_by_default(render: RenderFunction) -> None:
    rendered = render()
    assert "args" not in rendered.container(*PROXY)
    assert not rendered.kinds("ConfigMap")


def test_litellm_config_replaces_the_image_one(render: RenderFunction) -> None:
    config = {
        "model_list": [{"model_name": "m", "litellm_params": {"model": "openai/m"}}],
        "general_settings": {"master_key": "os.environ/LITELLM_MASTER_KEY"},
    }
    rendered = render({"litellm": {"config": config}})
    assert yaml.safe_load(rendered.get("ConfigMap", "ssebench-litellm")["data"]["config.yaml"]) == (
        config
    )
    container = rendered.container(*PROXY)
    assert container["args"] == ["--config", "/etc/ssebench-litellm/config.yaml"]
    assert container["volumeMounts"][0]["mountPath"] == "/etc/ssebench-litellm"


def test_litellm_config_must_use_the_master_key_variable(chart: Any) -> None:
    with pytest.raises(helm.HelmError, match="master_key"):
        chart.render({"litellm": {"config": {"model_list": []}}}, name="ssebench")


def test_litellm_resources_default_and_override(render: RenderFunction) -> None:
    assert render().container(*PROXY)["resources"] == {
        "requests": {"cpu": "100m", "memory": "512Mi"},
        "limits": {"memory": "2Gi"},
    }
    # Helm merges a mapping into the default one: the keys given replace theirs.
    custom = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "4Gi"}}
    assert render({"litellm": {"resources": custom}}).container(*PROXY)["resources"] == custom


def test_proxy_reaches_the_database_of_the_release(render: RenderFunction) -> None:
    env = render().env(*PROXY)
    assert env["DATABASE_URL"] == (
        "postgresql://litellm:$(POSTGRES_PASSWORD)@ssebench-postgres:5432/litellm"
    )


# --- postgres --------------------------------------------------------------------


def test_postgres_defaults(render: RenderFunction) -> None:
    rendered = render()
    statefulset = rendered.get(*POSTGRES)
    assert rendered.container(*POSTGRES)["image"] == "postgres:16"
    claim = statefulset["spec"]["volumeClaimTemplates"][0]
    assert claim["spec"]["resources"]["requests"]["storage"] == "5Gi"
    assert "storageClassName" not in claim["spec"]
    assert rendered.container(*POSTGRES)["resources"] == {
        "requests": {"cpu": "50m", "memory": "128Mi"},
        "limits": {"memory": "1Gi"},
    }


def test_postgres_image_and_persistence(render: RenderFunction) -> None:
    rendered = render(
        {
            "postgres": {
                "image": "postgres:17",
                "persistence": {"size": "20Gi", "storageClass": "fast"},
                "resources": {"requests": {"cpu": "1"}},
            }
        }
    )
    claim = rendered.get(*POSTGRES)["spec"]["volumeClaimTemplates"][0]["spec"]
    assert claim["storageClassName"] == "fast"
    assert claim["resources"]["requests"]["storage"] == "20Gi"
    assert rendered.container(*POSTGRES)["image"] == "postgres:17"
    assert rendered.container(*POSTGRES)["resources"] == {
        "requests": {"cpu": "1", "memory": "128Mi"},
        "limits": {"memory": "1Gi"},
    }


def test_postgres_without_persistence_uses_empty_dir(render: RenderFunction) -> None:
    rendered = render({"postgres": {"persistence": {"enabled": False}}})
    assert "volumeClaimTemplates" not in rendered.get(*POSTGRES)["spec"]
    volumes = {v["name"]: v for v in rendered.pod(*POSTGRES)["volumes"]}
    assert volumes["data"] == {"name": "data", "emptyDir": {}}


def test_postgres_disabled_with_external_secret(render: RenderFunction) -> None:
    rendered = render({"postgres": {"enabled": False, "externalSecret": "my-database"}})
    assert not rendered.kinds("StatefulSet")
    assert not rendered.has("NetworkPolicy", "ssebench-postgres")
    env = rendered.env(*PROXY)
    assert env["DATABASE_URL"] == {"secretKeyRef": {"name": "my-database", "key": "DATABASE_URL"}}
    assert "POSTGRES_PASSWORD" not in env


def test_postgres_disabled_needs_external_secret(chart: Any) -> None:
    with pytest.raises(helm.HelmError, match=r"postgres\.externalSecret"):
        chart.render({"postgres": {"enabled": False}}, name="ssebench")


def test_litellm_without_database(render: RenderFunction) -> None:
    """litellm.database=false: no DATABASE_URL (LiteLLM then starts without its
    database layer); Postgres stays as postgres.* says, and NOTES say what is lost."""
    rendered = render({"litellm": {"database": False}})
    env = rendered.env(*PROXY)
    assert "DATABASE_URL" not in env
    assert "POSTGRES_PASSWORD" not in env
    assert rendered.has(*POSTGRES)
    assert "cannot make the runs' keys" in rendered.notes
    assert "cannot make the runs' keys" not in render().notes


def test_litellm_without_database_needs_no_external_secret(render: RenderFunction) -> None:
    rendered = render({"litellm": {"database": False}, "postgres": {"enabled": False}})
    assert not rendered.kinds("StatefulSet")
    assert "DATABASE_URL" not in rendered.env(*PROXY)


# --- catalog ---------------------------------------------------------------------


def test_catalog_resources_and_service(render: RenderFunction) -> None:
    rendered = render()
    assert rendered.container(*CATALOG)["resources"] == {
        "requests": {"cpu": "10m", "memory": "32Mi"},
        "limits": {"memory": "128Mi"},
    }
    assert rendered.get("Service", "ssebench-catalog")["spec"]["ports"][0]["port"] == 8080
    assert rendered.env(*WEBUI)["SSEBENCH_CATALOG"] == "http://ssebench-catalog.ssebench.svc:8080"


# --- webui -----------------------------------------------------------------------


def test_webui_hosted_by_default_holds_no_proxy_key(render: RenderFunction) -> None:
    env = render().env(*WEBUI)
    assert env["SSEBENCH_WEBUI_HOSTED"] == "1"
    assert env["SSEBENCH_WEBUI_TERMINAL"] == "0"
    assert "LITELLM_MASTER_KEY" not in env


def test_webui_launcher_with_terminal(render: RenderFunction) -> None:
    env = render({"webui": {"hosted": False, "terminal": True}}).env(*WEBUI)
    assert env["SSEBENCH_WEBUI_HOSTED"] == "0"
    assert env["SSEBENCH_WEBUI_TERMINAL"] == "1"
    assert env["LITELLM_MASTER_KEY"]["secretKeyRef"] == {
        "name": "ssebench-auth",
        "key": "LITELLM_MASTER_KEY",
    }


def test_webui_terminal_needs_the_launcher(chart: Any) -> None:
    with pytest.raises(helm.HelmError, match=r"webui\.terminal"):
        chart.render({"webui": {"terminal": True}}, name="ssebench")


def test_webui_cors_origins(render: RenderFunction) -> None:
    origins = ["https://a.example.com", "https://b.example.com:8443"]
    env = render({"webui": {"corsOrigins": origins}}).env(*WEBUI)
    assert env["SSEBENCH_WEBUI_CORS_ORIGINS"] == ",".join(origins)
    assert "SSEBENCH_WEBUI_CORS_ORIGINS" not in render().env(*WEBUI)


def test_webui_persistence(render: RenderFunction) -> None:
    default = {v["name"]: v for v in render().pod(*WEBUI)["volumes"]}
    assert default["results"] == {"name": "results", "emptyDir": {}}
    rendered = render(
        {"webui": {"persistence": {"enabled": True, "size": "9Gi", "storageClass": "-"}}}
    )
    claim = rendered.get("PersistentVolumeClaim", "ssebench-webui-results")
    assert claim["spec"]["resources"]["requests"]["storage"] == "9Gi"
    assert claim["spec"]["storageClassName"] == ""
    volumes = {v["name"]: v for v in rendered.pod(*WEBUI)["volumes"]}
    assert volumes["results"]["persistentVolumeClaim"]["claimName"] == "ssebench-webui-results"
    mounts = {m["name"]: m["mountPath"] for m in rendered.container(*WEBUI)["volumeMounts"]}
    assert mounts["results"] == "/app/results"


def test_webui_service(render: RenderFunction) -> None:
    default = render().get("Service", "ssebench-webui")["spec"]
    assert default["type"] == "ClusterIP"
    assert default["ports"][0]["port"] == 3001
    custom = render({"webui": {"service": {"type": "NodePort", "port": 8080}}})
    spec = custom.get("Service", "ssebench-webui")["spec"]
    assert (spec["type"], spec["ports"][0]["port"]) == ("NodePort", 8080)


def test_webui_resources(render: RenderFunction) -> None:
    assert render().container(*WEBUI)["resources"] == {
        "requests": {"cpu": "100m", "memory": "256Mi"},
        "limits": {"memory": "1Gi"},
    }


def test_webui_listens_on_all_addresses_with_its_token(render: RenderFunction) -> None:
    container = render().container(*WEBUI)
    assert "--host=0.0.0.0" in container["args"]
    assert render().env(*WEBUI)["SSEBENCH_WEBUI_TOKEN"]["secretKeyRef"]["key"] == (
        "SSEBENCH_WEBUI_TOKEN"
    )


# --- ingress ---------------------------------------------------------------------


def test_no_ingress_by_default(render: RenderFunction) -> None:
    assert not render().kinds("Ingress")


def test_ingress_with_tls(render: RenderFunction) -> None:
    rendered = render(
        SCENARIOS["ingress with tls"]
        | {
            "ingress": {
                **SCENARIOS["ingress with tls"]["ingress"],
                "annotations": {"nginx.ingress.kubernetes.io/proxy-body-size": "10m"},
            }
        }
    )
    ingress = rendered.get("Ingress", "ssebench-webui")
    assert ingress["spec"]["ingressClassName"] == "nginx"
    assert ingress["metadata"]["annotations"] == {
        "nginx.ingress.kubernetes.io/proxy-body-size": "10m"
    }
    assert ingress["spec"]["tls"] == [
        {"secretName": "ssebench-tls", "hosts": ["ssebench.example.com"]}
    ]
    rule = ingress["spec"]["rules"][0]
    assert rule["host"] == "ssebench.example.com"
    path = rule["http"]["paths"][0]
    assert (path["path"], path["pathType"]) == ("/", "Prefix")
    assert path["backend"]["service"] == {"name": "ssebench-webui", "port": {"name": "http"}}
    assert "https://ssebench.example.com/" in rendered.notes


# --- runs ------------------------------------------------------------------------


def test_runs_defaults(render: RenderFunction) -> None:
    env = render(namespace="bench").env(*WEBUI)
    assert env["SSEBENCH_BACKEND"] == "kubernetes"
    assert env["SSEBENCH_PREBUILT"] == "1"
    assert env["SSEBENCH_K8S_NAMESPACE"] == "bench"
    assert env["SSEBENCH_REGISTRY"] == "ssebench"
    assert env["SSEBENCH_EGRESS"] == "restricted"
    assert env["SSEBENCH_K8S_IMAGE_PULL_POLICY"] == "IfNotPresent"
    assert env["SSEBENCH_K8S_TTL_SECONDS"] == "3600"
    assert env["SSEBENCH_K8S_DEADLINE_SLACK"] == "1800"
    for absent in (
        "SSEBENCH_K8S_RUNTIME_CLASS",
        "SSEBENCH_K8S_IMAGE_PULL_SECRETS",
        "SSEBENCH_K8S_RESOURCES",
    ):
        assert absent not in env


def test_runs_settings_reach_the_webui(render: RenderFunction) -> None:
    resources = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "8Gi"}}
    env = render(
        {
            "runs": {
                "namespace": "ssebench-runs",
                "registry": "registry.test/agents",
                "egress": "open",
                "runtimeClassName": "gvisor",
                "imagePullPolicy": "Never",
                "imagePullSecrets": ["a", "b"],
                "resources": resources,
                "ttlSecondsAfterFinished": 60,
                "deadlineSlackSeconds": 120,
            }
        }
    ).env(*WEBUI)
    assert env["SSEBENCH_K8S_NAMESPACE"] == "ssebench-runs"
    assert env["SSEBENCH_REGISTRY"] == "registry.test/agents"
    assert env["SSEBENCH_EGRESS"] == "open"
    assert env["SSEBENCH_K8S_RUNTIME_CLASS"] == "gvisor"
    assert env["SSEBENCH_K8S_IMAGE_PULL_POLICY"] == "Never"
    assert env["SSEBENCH_K8S_IMAGE_PULL_SECRETS"] == "a,b"
    assert yaml.safe_load(env["SSEBENCH_K8S_RESOURCES"]) == resources
    assert env["SSEBENCH_K8S_TTL_SECONDS"] == "60"
    assert env["SSEBENCH_K8S_DEADLINE_SLACK"] == "120"


def test_runs_registry_defaults_to_image_registry(render: RenderFunction) -> None:
    env = render({"image": {"registry": "registry.test/sse"}}).env(*WEBUI)
    assert env["SSEBENCH_REGISTRY"] == "registry.test/sse"


def test_webui_settings_are_what_the_backend_accepts(
    render: RenderFunction, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The environment the chart gives the web UI, read by the backend's own parser."""
    from ssebench.backends.kubernetes.config import KubernetesSettings

    env = render(
        {"runs": {"namespace": "ssebench-runs", "resources": {"limits": {"cpu": "2"}}}},
        name="eval",
    ).env("Deployment", "eval-ssebench-webui")
    for key, value in env.items():
        if isinstance(value, str):
            monkeypatch.setenv(key, value)
    settings = KubernetesSettings.from_environment()
    assert settings.namespace == "ssebench-runs"
    assert settings.resources == {"limits": {"cpu": "2"}}
    proxy = settings.proxy_settings()
    assert proxy.url == "http://eval-ssebench-litellm.ssebench.svc:4000"
    assert proxy.namespace == "ssebench"
    assert dict(proxy.selector) == {
        "app.kubernetes.io/name": "litellm",
        "app.kubernetes.io/instance": "eval",
    }


def test_proxy_selector_matches_the_proxy_pods(render: RenderFunction) -> None:
    rendered = render(name="eval")
    selector = rendered.env("Deployment", "eval-ssebench-webui")["SSEBENCH_K8S_PROXY_SELECTOR"]
    labels = rendered.get("Deployment", "eval-ssebench-litellm")["spec"]["template"]["metadata"][
        "labels"
    ]
    for pair in selector.split(","):
        key, _, value = pair.partition("=")
        assert labels[key] == value


# --- rbac ------------------------------------------------------------------------


def _rules(document: dict[str, Any]) -> list[dict[str, Any]]:
    return document["rules"]  # type: ignore[no-any-return]


# What the read-only viewer calls (src/ssebench/webui/ in hosted mode, through the
# kubernetes backend): list_runs and inspect_run list jobs and pods, logs reads
# pods/log, endpoint port-forwards to the daemon (kubectl and its supervisor get the
# pod). Nothing more: tests/kubernetes/test_viewer_role_kubernetes.py shows on a real
# cluster that the viewer works with exactly this and is refused the rest.
VIEWER_RULES = [
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["pods/portforward"], "verbs": ["create", "get"]},
]


def test_role_is_the_one_of_deploy_k8s(render: RenderFunction) -> None:
    reference = {
        item["kind"]: item
        for item in yaml.safe_load_all((REPO / "deploy/k8s/rbac.yaml").read_text())
    }
    rendered = render({"runs": {"namespace": "ssebench-runs"}, "webui": {"hosted": False}})
    role = rendered.get("Role", "ssebench")
    assert role["metadata"]["namespace"] == "ssebench-runs"
    assert _rules(role) == _rules(reference["Role"])
    binding = rendered.get("RoleBinding", "ssebench")
    assert binding["metadata"]["namespace"] == "ssebench-runs"
    assert binding["roleRef"] == {**reference["RoleBinding"]["roleRef"], "name": "ssebench"}
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "ssebench", "namespace": "ssebench"}
    ]


def test_hosted_viewer_role_only_reads_and_port_forwards(render: RenderFunction) -> None:
    rendered = render({"runs": {"namespace": "ssebench-runs"}})  # webui.hosted: true
    role = rendered.get("Role", "ssebench")
    assert role["metadata"]["namespace"] == "ssebench-runs"
    assert _rules(role) == VIEWER_RULES
    verbs = {
        (resource, verb)
        for rule in _rules(role)
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    # The one verb that is not a read is the port-forward to the runs' daemons.
    assert {pair for pair in verbs if pair[1] not in ("get", "list")} == {
        ("pods/portforward", "create")
    }
    binding = rendered.get("RoleBinding", "ssebench")
    assert binding["roleRef"]["name"] == "ssebench"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "ssebench", "namespace": "ssebench"}
    ]
    assert "Its Role in ssebench-runs only reads" in rendered.notes


def test_notes_on_the_runs_namespace(render: RenderFunction) -> None:
    apart = render({"runs": {"namespace": "ssebench-runs"}, "webui": {"hosted": False}}).notes
    assert "WARNING" not in apart and "Prefer a namespace of their own" not in apart
    assert "pods/exec runs commands in every pod of ssebench-runs" in apart
    launcher_here = render({"webui": {"hosted": False}}).notes
    assert "WARNING: runs.namespace is the release's namespace (ssebench)" in launcher_here
    assert "--set runs.namespace=ssebench-runs" in launcher_here
    viewer_here = render().notes
    assert "WARNING" not in viewer_here
    assert "Prefer a namespace of their own (runs.namespace)" in viewer_here


def test_rbac_create_false(render: RenderFunction) -> None:
    rendered = render({"rbac": {"create": False}})
    assert not rendered.kinds("Role")
    assert not rendered.kinds("RoleBinding")
    assert rendered.kinds("ServiceAccount")


def test_service_account_name_and_annotations(render: RenderFunction) -> None:
    annotations = {"iam.gke.io/gcp-service-account": "bench@project.iam.gserviceaccount.com"}
    rendered = render({"serviceAccount": {"name": "bench-ui", "annotations": annotations}})
    account = rendered.get("ServiceAccount", "bench-ui")
    assert account["metadata"]["annotations"] == annotations
    assert rendered.pod(*WEBUI)["serviceAccountName"] == "bench-ui"
    assert rendered.get("RoleBinding", "ssebench")["subjects"][0]["name"] == "bench-ui"


# --- network policies ------------------------------------------------------------


def test_network_policies(render: RenderFunction) -> None:
    rendered = render({"runs": {"namespace": "ssebench-runs"}})
    proxy = rendered.get("NetworkPolicy", "ssebench-litellm")["spec"]
    assert proxy["podSelector"]["matchLabels"]["app.kubernetes.io/name"] == "litellm"
    peers = proxy["ingress"][0]["from"]
    assert peers[0] == {
        "podSelector": {
            "matchLabels": {
                "app.kubernetes.io/name": "webui",
                "app.kubernetes.io/instance": "ssebench",
            }
        }
    }
    assert peers[1]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "ssebench-runs"
    }
    assert peers[1]["podSelector"]["matchLabels"] == {"app.kubernetes.io/managed-by": "ssebench"}
    assert len(peers) == 2
    database = rendered.get("NetworkPolicy", "ssebench-postgres")["spec"]
    assert database["ingress"] == [
        {
            "from": [
                {
                    "podSelector": {
                        "matchLabels": {
                            "app.kubernetes.io/name": "litellm",
                            "app.kubernetes.io/instance": "ssebench",
                        }
                    }
                }
            ],
            "ports": [{"port": 5432, "protocol": "TCP"}],
        }
    ]


def test_network_policy_proxy_extra_ingress(render: RenderFunction) -> None:
    extra = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    rendered = render({"networkPolicy": {"proxyExtraIngress": extra}})
    peers = rendered.get("NetworkPolicy", "ssebench-litellm")["spec"]["ingress"][0]["from"]
    assert peers[-1] == extra[0]


def test_network_policy_disabled(render: RenderFunction) -> None:
    assert not render({"networkPolicy": {"enabled": False}}).kinds("NetworkPolicy")


# --- security contexts and scheduling --------------------------------------------


def test_only_the_webui_has_a_service_account_token(render: RenderFunction) -> None:
    rendered = render()
    assert rendered.pod(*WEBUI)["automountServiceAccountToken"] is True
    for kind, name in (PROXY, CATALOG, POSTGRES):
        assert rendered.pod(kind, name)["automountServiceAccountToken"] is False


def test_security_contexts(render: RenderFunction) -> None:
    rendered = render()
    for kind, name in (WEBUI, PROXY, CATALOG, POSTGRES):
        context = rendered.container(kind, name)["securityContext"]
        assert context["privileged"] is False
        assert context["allowPrivilegeEscalation"] is False
        assert context["capabilities"] == {"drop": ["ALL"]}
        assert context["seccompProfile"] == {"type": "RuntimeDefault"}
        pod = rendered.pod(kind, name)
        assert not {"hostNetwork", "hostPID", "hostIPC"} & set(pod)
        assert all("hostPath" not in volume for volume in pod.get("volumes", []))
    for kind, name in (WEBUI, PROXY):
        assert rendered.container(kind, name)["securityContext"]["runAsUser"] == 0
    for kind, name in (CATALOG, POSTGRES):
        context = rendered.container(kind, name)["securityContext"]
        assert context["runAsNonRoot"] is True
        assert context["runAsUser"] != 0


def test_scheduling_and_pod_annotations(render: RenderFunction) -> None:
    values = {
        "nodeSelector": {"pool": "bench"},
        "tolerations": [{"key": "bench", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                    ]
                }
            }
        },
        "podAnnotations": {"example.com/scrape": "true"},
    }
    rendered = render(values)
    for kind, name in (WEBUI, PROXY, CATALOG, POSTGRES):
        pod = rendered.pod(kind, name)
        assert pod["nodeSelector"] == values["nodeSelector"]
        assert pod["tolerations"] == values["tolerations"]
        assert pod["affinity"] == values["affinity"]
        annotations = rendered.get(kind, name)["spec"]["template"]["metadata"]["annotations"]
        assert annotations["example.com/scrape"] == "true"


# --- schema ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "values",
    [
        {"webui": {"hosted": "yes"}},
        {"webui": {"service": {"port": "3001"}}},
        {"runs": {"egress": "everything"}},
        {"runs": {"ttlSecondsAfterFinished": -1}},
        {"image": {"pullPolicy": "Sometimes"}},
        {"image": {"tag": "1.0@sha256:short"}},
        {"auth": {"existingSecret": "My Secret"}},
        {"litellm": {"providerKeySecrets": "provider-keys"}},
        {"litellm": {"providerKeySecrets": ["Provider_Keys"]}},
        {"postgres": {"externalSecret": "bad/name"}},
        {"litellm": {"database": "no"}},
        {"runs": {"namespace": "Runs"}},
        {"unknownValue": True},
    ],
    ids=repr,
)
def test_schema_rejects(chart: Any, values: dict[str, Any]) -> None:
    with pytest.raises(helm.HelmValuesError):
        chart.validate_schema(values)


def test_notes_print_the_commands(render: RenderFunction) -> None:
    notes = render({"runs": {"namespace": "ssebench-runs"}}).notes
    assert "kubectl -n ssebench port-forward svc/ssebench-webui 3001:3001" in notes
    assert (
        "get secret ssebench-auth -o jsonpath='{.data.SSEBENCH_WEBUI_TOKEN}' | base64 -d" in notes
    )
    assert "port-forward svc/ssebench-litellm 4000:4000" in notes
    assert "SSEBENCH_K8S_NAMESPACE=ssebench-runs" in notes
    assert "SSEBENCH_K8S_PROXY_URL=http://ssebench-litellm.ssebench.svc:4000" in notes
    assert "app.kubernetes.io/name=litellm,app.kubernetes.io/instance=ssebench" in notes
    assert "ssebench doctor --backend kubernetes --probe-image ssebench/agent-reference/" in notes


def test_every_value_is_documented_in_values_yaml() -> None:
    """Each leaf of values.yaml sits under a comment (helm show values prints them)."""
    lines = (CHART / "values.yaml").read_text().splitlines()
    for index, line in enumerate(lines):
        if re.match(r"^\s*[a-zA-Z]+:\s*\S", line) and not line.strip().startswith("#"):
            above = [candidate.strip() for candidate in lines[max(0, index - 6) : index]]
            assert any(text.startswith("#") for text in above), line


def test_docs_describe_the_chart() -> None:
    assert (REPO / "docs" / "helm.md").is_file()
    assert Path(CHART / "values.schema.json").is_file()
