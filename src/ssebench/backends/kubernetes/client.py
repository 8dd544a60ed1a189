"""The Kubernetes API client every module of the backend shares: the API (from the
kubeconfig or a pod's service account, made once per process), and calls whose
failures are one-line BackendErrors. Tests install a client of their own with
monkeypatch.setattr(client, "api", ...): every module calls it through this module."""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.errors import BackendError, UserError

CLIENT_MISSING = (
    "The kubernetes backend needs the Kubernetes Python client: pip install 'ssebench[kubernetes]'"
)
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
REQUEST_TIMEOUT = 30


@dataclass(frozen=True)
class Api:
    core: Any
    batch: Any
    networking: Any
    stream: Callable[..., Any]
    api_exception: type[Exception]
    # A CoreV1Api on an ApiClient of its own. The client's stream() swaps the request
    # method of the ApiClient it is given while the exec connects, so an exec on the
    # shared client would turn other threads' calls into websocket handshakes.
    private_core: Callable[[], Any]


@functools.cache
def api() -> Api:
    """The API client, from the kubeconfig or, in a pod, its service account."""
    try:
        from kubernetes.stream import stream

        from kubernetes import client, config
    except ImportError:
        raise UserError(CLIENT_MISSING) from None
    configuration = client.Configuration()
    loaders: Any = config  # the client's loaders are untyped
    kubeconfig = os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    try:
        if os.environ.get("KUBECONFIG") or Path(kubeconfig).is_file():
            loaders.load_kube_config(client_configuration=configuration)
        elif (SERVICE_ACCOUNT / "token").is_file():
            loaders.load_incluster_config(client_configuration=configuration)
        else:
            raise UserError(
                "No Kubernetes configuration: set KUBECONFIG, or run ssebench in a pod "
                "with a service account"
            )
    except config.ConfigException as error:
        raise UserError(f"Cannot load the Kubernetes configuration: {error}") from None
    api_client = client.ApiClient(configuration)
    return Api(
        core=client.CoreV1Api(api_client),
        batch=client.BatchV1Api(api_client),
        networking=client.NetworkingV1Api(api_client),
        stream=stream,
        api_exception=client.exceptions.ApiException,
        private_core=lambda: client.CoreV1Api(client.ApiClient(configuration)),
    )


def reason(error: Exception) -> str:
    """The API's message of an error, one line."""
    body = getattr(error, "body", None)
    message = ""
    if body:
        with contextlib.suppress(ValueError, TypeError):
            message = str(json.loads(body).get("message", ""))
    status = getattr(error, "status", None)
    if status is not None:
        reason = getattr(error, "reason", "") or ""
        return f"{status} {reason}: {message}".strip(": ") if message else f"{status} {reason}"
    return f"{type(error).__name__}: {error}".splitlines()[0][:300]


def redact(message: str, hidden: Iterable[str]) -> str:
    for value in hidden:
        if len(value) >= 4:
            message = message.replace(value, "***")
    return message


def call(
    what: str,
    function: Callable[..., Any],
    *args: Any,
    missing_ok: bool = False,
    run_id: str | None = None,
    hidden: Iterable[str] = (),
    request_timeout: float | None = REQUEST_TIMEOUT,
    **kwargs: Any,
) -> Any:
    """function(*args, **kwargs), with API failures as one-line BackendErrors."""
    api_exception = api().api_exception
    try:
        return function(*args, _request_timeout=request_timeout, **kwargs)
    except api_exception as error:
        if missing_ok and getattr(error, "status", None) == 404:
            return None
        message = redact(f"{what}: {reason(error)}", hidden)
        raise BackendError(message, backend="kubernetes", run_id=run_id) from None
    except Exception as error:  # urllib3's connection errors have no common base here
        message = redact(f"{what}: cannot reach the Kubernetes API ({reason(error)})", hidden)
        raise BackendError(message, backend="kubernetes", run_id=run_id) from None


def delete_pod_now(namespace: str, name: str) -> None:
    """Delete a short pod of ours (no grace); one that is gone already is fine."""
    call(
        f"Cannot delete the pod {name}",
        api().core.delete_namespaced_pod,
        name,
        namespace,
        grace_period_seconds=0,
        missing_ok=True,
    )


def read_log(
    what: str, namespace: str, pod: str, container: str, limit_bytes: int | None = None
) -> bytes:
    """An ended container's log, read once up to limit_bytes, as undecoded bytes: the
    client's own decoding gives the repr of the bytes ("b'...'") in some releases (36
    among them). BackendError, with what, when the API refuses."""
    response = call(
        what,
        api().core.read_namespaced_pod_log,
        pod,
        namespace,
        container=container,
        limit_bytes=limit_bytes,
        _preload_content=False,
    )
    try:
        return bytes(response.data)
    finally:
        response.release_conn()
