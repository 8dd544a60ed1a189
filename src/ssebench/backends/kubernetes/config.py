"""The Kubernetes backend's settings, read from the SSEBENCH_K8S_* variables.

Everything here is plain data with no client import, so the manifests can be rendered
and tested without a cluster. A malformed value is a UserError naming the variable.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import yaml

from ssebench.errors import UserError

NAMESPACE_VARIABLE = "SSEBENCH_K8S_NAMESPACE"
DEADLINE_SLACK_VARIABLE = "SSEBENCH_K8S_DEADLINE_SLACK"
TTL_VARIABLE = "SSEBENCH_K8S_TTL_SECONDS"
RESOURCES_VARIABLE = "SSEBENCH_K8S_RESOURCES"
RUNTIME_CLASS_VARIABLE = "SSEBENCH_K8S_RUNTIME_CLASS"
PULL_SECRETS_VARIABLE = "SSEBENCH_K8S_IMAGE_PULL_SECRETS"
PULL_POLICY_VARIABLE = "SSEBENCH_K8S_IMAGE_PULL_POLICY"
PROXY_URL_VARIABLE = "SSEBENCH_K8S_PROXY_URL"
PROXY_NAMESPACE_VARIABLE = "SSEBENCH_K8S_PROXY_NAMESPACE"
PROXY_SELECTOR_VARIABLE = "SSEBENCH_K8S_PROXY_SELECTOR"
# Where this machine reaches the proxy to create a run's key, for example through
# `kubectl port-forward svc/litellm 4000:4000`.
PROXY_HOST_URL_VARIABLE = "SSEBENCH_K8S_PROXY_HOST_URL"

DEFAULT_NAMESPACE = "ssebench"
DEFAULT_DEADLINE_SLACK = 1800
DEFAULT_TTL_SECONDS = 3600
DEFAULT_PULL_POLICY = "IfNotPresent"
DEFAULT_PROXY_SELECTOR = "app.kubernetes.io/name=litellm"
DEFAULT_PROXY_HOST_URL = "http://127.0.0.1:4000"
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
DEFAULT_RESOURCES: dict[str, dict[str, str]] = {
    "requests": {"cpu": "1", "memory": "2Gi", "ephemeral-storage": "2Gi"},
    "limits": {"cpu": "4", "memory": "8Gi", "ephemeral-storage": "20Gi"},
}

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


def is_label_key(key: str) -> bool:
    """A qualified name: [DNS subdomain prefix/]name."""
    prefix, slash, name = key.rpartition("/")
    if slash and not (len(prefix) <= 253 and _DNS_SUBDOMAIN.match(prefix)):
        return False
    return bool(_LABEL_NAME.match(name))


def is_label_value(value: str) -> bool:
    return bool(_LABEL_VALUE.match(value))


def is_dns_label(value: str) -> bool:
    return bool(_DNS_LABEL.match(value))


def parse_selector(text: str, variable: str) -> dict[str, str]:
    """ "k=v,k2=v2" -> {"k": "v", "k2": "v2"}; only equality, as a matchLabels can hold."""
    selector: dict[str, str] = {}
    for part in text.split(","):
        key, equals, value = part.strip().partition("=")
        key, value = key.strip(), value.strip()
        if not equals or not is_label_key(key) or not is_label_value(value):
            raise UserError(
                f"{variable} must be labels like app.kubernetes.io/name=litellm[,k=v...], "
                f"not {text!r}"
            )
        selector[key] = value
    return selector


def _seconds(variable: str, default: int) -> int:
    text = os.environ.get(variable, "").strip()
    if not text:
        return default
    if not text.isdigit():
        raise UserError(f"{variable} must be a whole number of seconds, not {text!r}")
    return int(text)


def _quantity_map(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not value:
        raise UserError(f"{RESOURCES_VARIABLE}: {where} must be a mapping like {{cpu: '2'}}")
    quantities: dict[str, str] = {}
    for name, amount in value.items():
        if not isinstance(name, str) or isinstance(amount, bool | Mapping | list):
            raise UserError(f"{RESOURCES_VARIABLE}: {where}.{name} must be a quantity")
        quantities[name] = str(amount)
    return quantities


def parse_resources(text: str) -> dict[str, dict[str, str]]:
    """SSEBENCH_K8S_RESOURCES: a JSON or YAML mapping with requests and/or limits."""
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError:
        loaded = None
    if not isinstance(loaded, Mapping) or not loaded or set(loaded) - {"requests", "limits"}:
        raise UserError(
            f"{RESOURCES_VARIABLE} must be JSON or YAML with requests and/or limits, e.g. "
            '{"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "8Gi"}}'
        )
    return {key: _quantity_map(value, key) for key, value in loaded.items()}


@dataclass(frozen=True)
class ProxySettings:
    """Where the run pods' model calls go: a URL, and the pods behind it."""

    url: str
    namespace: str
    selector: Mapping[str, str]
    host_url: str

    @property
    def port(self) -> int:
        parts = urlsplit(self.url)
        try:
            port = parts.port
        except ValueError:
            raise UserError(f"{PROXY_URL_VARIABLE} has a port that is not a number") from None
        if port is not None:
            return port
        return 443 if parts.scheme == "https" else 80


@dataclass(frozen=True)
class KubernetesSettings:
    namespace: str = DEFAULT_NAMESPACE
    deadline_slack: int = DEFAULT_DEADLINE_SLACK
    ttl_seconds: int = DEFAULT_TTL_SECONDS
    # True: the user set SSEBENCH_K8S_RESOURCES, which a task's own resources do not change.
    resources_set: bool = False
    resources: Mapping[str, Mapping[str, str]] = field(
        default_factory=lambda: {key: dict(value) for key, value in DEFAULT_RESOURCES.items()}
    )
    runtime_class: str | None = None
    image_pull_secrets: tuple[str, ...] = ()
    image_pull_policy: str = DEFAULT_PULL_POLICY
    proxy: ProxySettings | None = None

    def proxy_settings(self) -> ProxySettings:
        if self.proxy is not None:
            return self.proxy
        return ProxySettings(
            url=f"http://litellm.{self.namespace}.svc:4000",
            namespace=self.namespace,
            selector=parse_selector(DEFAULT_PROXY_SELECTOR, PROXY_SELECTOR_VARIABLE),
            host_url=DEFAULT_PROXY_HOST_URL,
        )

    @classmethod
    def from_environment(cls) -> KubernetesSettings:
        environ = os.environ
        namespace = environ.get(NAMESPACE_VARIABLE, "").strip() or DEFAULT_NAMESPACE
        if not is_dns_label(namespace):
            raise UserError(f"{NAMESPACE_VARIABLE} must be a namespace name, not {namespace!r}")
        resources_text = environ.get(RESOURCES_VARIABLE, "").strip()
        runtime_class = environ.get(RUNTIME_CLASS_VARIABLE, "").strip() or None
        if runtime_class is not None and not _DNS_SUBDOMAIN.match(runtime_class):
            raise UserError(f"{RUNTIME_CLASS_VARIABLE} must be a RuntimeClass name")
        pull_secrets = tuple(
            name.strip()
            for name in environ.get(PULL_SECRETS_VARIABLE, "").split(",")
            if name.strip()
        )
        for name in pull_secrets:
            if not _DNS_SUBDOMAIN.match(name):
                raise UserError(f"{PULL_SECRETS_VARIABLE}: {name!r} is not a Secret name")
        policy = environ.get(PULL_POLICY_VARIABLE, "").strip() or DEFAULT_PULL_POLICY
        if policy not in PULL_POLICIES:
            raise UserError(f"{PULL_POLICY_VARIABLE} must be one of {', '.join(PULL_POLICIES)}")
        proxy_namespace = environ.get(PROXY_NAMESPACE_VARIABLE, "").strip() or namespace
        if not is_dns_label(proxy_namespace):
            raise UserError(f"{PROXY_NAMESPACE_VARIABLE} must be a namespace name")
        proxy_url = (
            environ.get(PROXY_URL_VARIABLE, "").strip()
            or f"http://litellm.{proxy_namespace}.svc:4000"
        )
        if urlsplit(proxy_url).scheme not in ("http", "https") or not urlsplit(proxy_url).hostname:
            raise UserError(f"{PROXY_URL_VARIABLE} must be an http:// or https:// URL")
        proxy = ProxySettings(
            url=proxy_url,
            namespace=proxy_namespace,
            selector=parse_selector(
                environ.get(PROXY_SELECTOR_VARIABLE, "").strip() or DEFAULT_PROXY_SELECTOR,
                PROXY_SELECTOR_VARIABLE,
            ),
            host_url=environ.get(PROXY_HOST_URL_VARIABLE, "").strip() or DEFAULT_PROXY_HOST_URL,
        )
        if proxy.port <= 0:  # also raises for a port that is not a number
            raise UserError(f"{PROXY_URL_VARIABLE} needs a port above 0")
        return cls(
            namespace=namespace,
            deadline_slack=_seconds(DEADLINE_SLACK_VARIABLE, DEFAULT_DEADLINE_SLACK),
            ttl_seconds=_seconds(TTL_VARIABLE, DEFAULT_TTL_SECONDS),
            resources=parse_resources(resources_text) if resources_text else DEFAULT_RESOURCES,
            resources_set=bool(resources_text),
            runtime_class=runtime_class,
            image_pull_secrets=pull_secrets,
            image_pull_policy=policy,
            proxy=proxy,
        )
