"""SSEBENCH_K8S_* settings: defaults, parsing, one clear error for a bad value."""

from __future__ import annotations

import pytest

from ssebench.backends.kubernetes.config import KubernetesSettings, parse_resources
from ssebench.errors import UserError


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("SSEBENCH_K8S_"):
            monkeypatch.delenv(name)


def test_defaults() -> None:
    settings = KubernetesSettings.from_environment()
    assert settings.namespace == "ssebench"
    assert settings.deadline_slack == 1800
    assert settings.ttl_seconds == 3600
    assert settings.image_pull_policy == "IfNotPresent"
    assert settings.runtime_class is None and settings.image_pull_secrets == ()
    proxy = settings.proxy_settings()
    assert proxy.url == "http://litellm.ssebench.svc:4000"
    assert proxy.namespace == "ssebench" and proxy.port == 4000
    assert dict(proxy.selector) == {"app.kubernetes.io/name": "litellm"}


def test_values_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSEBENCH_K8S_NAMESPACE", "runs")
    monkeypatch.setenv("SSEBENCH_K8S_DEADLINE_SLACK", "60")
    monkeypatch.setenv("SSEBENCH_K8S_TTL_SECONDS", "0")
    monkeypatch.setenv("SSEBENCH_K8S_RESOURCES", '{"requests": {"cpu": 2}}')
    monkeypatch.setenv("SSEBENCH_K8S_RUNTIME_CLASS", "gvisor")
    monkeypatch.setenv("SSEBENCH_K8S_IMAGE_PULL_SECRETS", "a, b")
    monkeypatch.setenv("SSEBENCH_K8S_IMAGE_PULL_POLICY", "Never")
    settings = KubernetesSettings.from_environment()
    assert (settings.namespace, settings.deadline_slack, settings.ttl_seconds) == ("runs", 60, 0)
    assert settings.resources == {"requests": {"cpu": "2"}}
    assert settings.runtime_class == "gvisor"
    assert settings.image_pull_secrets == ("a", "b")
    assert settings.image_pull_policy == "Never"
    assert settings.proxy_settings().url == "http://litellm.runs.svc:4000"


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("SSEBENCH_K8S_NAMESPACE", "Not_A_Namespace"),
        ("SSEBENCH_K8S_DEADLINE_SLACK", "-5"),
        ("SSEBENCH_K8S_TTL_SECONDS", "1h"),
        ("SSEBENCH_K8S_RESOURCES", "cpu=2"),
        ("SSEBENCH_K8S_RESOURCES", '{"requests": {"cpu": 2}, "other": {}}'),
        ("SSEBENCH_K8S_IMAGE_PULL_POLICY", "Sometimes"),
        ("SSEBENCH_K8S_IMAGE_PULL_SECRETS", "UPPER"),
        ("SSEBENCH_K8S_PROXY_URL", "ftp://proxy"),
        ("SSEBENCH_K8S_PROXY_URL", "http://proxy:port"),
        ("SSEBENCH_K8S_PROXY_SELECTOR", "app"),
    ],
)
def test_bad_values_are_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(UserError) as raised:
        KubernetesSettings.from_environment()
    assert variable in str(raised.value) and "\n" not in str(raised.value)


def test_resources_accept_yaml() -> None:
    assert parse_resources("limits: {memory: 16Gi}") == {"limits": {"memory": "16Gi"}}
