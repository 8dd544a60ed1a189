"""Per-run keys on a LiteLLM proxy, through its admin API, with the master key.

    GET  /v1/models            the models the proxy serves
    POST /key/generate         a key limited to one model and a budget (USD)
    GET  /key/info?key=HASH    the key's spend
    POST /key/delete           revoke it

The run's key goes to the container and nowhere else: after /key/generate this client
names the key by its SHA-256 hash (which LiteLLM accepts wherever it takes a key), so
the key is never in a URL, and neither key is ever in an error message or a repr.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Literal

from ssebench.errors import UserError

from .models import is_responses_bridge, responses_bridge_name

DEFAULT_BUDGET_USD = 10.0
REQUEST_TIMEOUT_SECONDS = 30.0
# What a proxy's message may echo of a key (LiteLLM shows parts of keys it refuses).
_KEY_TEXT = re.compile(r"sk-[A-Za-z0-9_\-.*]+")
_MESSAGE_LIMIT = 300

Reason = Literal["down", "auth", "model", "budget", "no_database", "answer"]


class ProxyError(UserError):
    """The proxy did not do what was asked; reason says why, for callers that act on it."""

    def __init__(self, message: str, *, reason: Reason, status: int | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.status = status


@dataclass(frozen=True)
class RunKey:
    """A key of one run. managed: made for the run (and revoked after it)."""

    secret: str = field(repr=False)
    model: str
    budget: float | None
    managed: bool
    # The proxy's Responses bridge of the model (models.py), when it serves one.
    responses_model: str | None = None

    @property
    def hashed(self) -> str:
        return hash_key(self.secret)


@dataclass(frozen=True)
class Spend:
    usd: float
    budget: float | None

    @property
    def exceeded(self) -> bool:
        return self.budget is not None and self.usd >= self.budget


def hash_key(key: str) -> str:
    """The form in which LiteLLM stores a key and accepts it in its admin API."""
    return hashlib.sha256(key.encode()).hexdigest()


def _clean(text: str) -> str:
    text = _KEY_TEXT.sub("sk-…", " ".join(text.split()))
    return text[:_MESSAGE_LIMIT]


def _error_message(body: bytes) -> tuple[str, str]:
    """(message, type) of an error answer: LiteLLM's {"error": {...}} or FastAPI's detail."""
    try:
        data = json.loads(body)
    except ValueError:
        return _clean(body.decode("utf-8", "replace")), ""
    if isinstance(data, dict):
        error = data.get("error", data.get("detail"))
        if isinstance(error, dict):
            return _clean(str(error.get("message") or error.get("error") or error)), str(
                error.get("type") or ""
            )
        if error is not None:
            return _clean(str(error)), ""
    return _clean(str(data)), ""


class ProxyClient:
    """The admin API of one proxy. host_url: where this machine reaches it."""

    def __init__(
        self, host_url: str, master_key: str, *, timeout: float = REQUEST_TIMEOUT_SECONDS
    ) -> None:
        if not master_key:
            raise UserError("The LiteLLM master key is empty: export LITELLM_MASTER_KEY")
        self.host_url = host_url.rstrip("/")
        self._master_key = master_key
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"ProxyClient({self.host_url!r})"

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        # Here, not at the top: urllib.request (http.client, email) costs every command
        # ~40 ms of start-up, and only the commands that talk to the proxy need it.
        import urllib.error
        import urllib.request

        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.host_url + path,
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {self._master_key}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
        )
        where = f"The LiteLLM proxy at {self.host_url}"
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                payload = answer.read()
        except urllib.error.HTTPError as error:
            raise self._refusal(where, path, error.code, error.read()) from None
        except (TimeoutError, urllib.error.URLError, ConnectionError) as error:
            reason = getattr(error, "reason", error)
            raise ProxyError(
                f"{where} does not answer ({type(reason).__name__}: {_clean(str(reason))}); "
                "start it with `ssebench proxy up`, or check the backend's proxy",
                reason="down",
            ) from None
        try:
            return json.loads(payload)
        except ValueError:
            raise ProxyError(
                f"{where} answered {path} with something that is not JSON", reason="answer"
            ) from None

    def _refusal(self, where: str, path: str, status: int, body: bytes) -> ProxyError:
        message, kind = _error_message(body)
        lowered = f"{kind} {message}".lower()
        if (
            "no_db_connection" in lowered
            or "db not connected" in lowered
            or ("database not connected" in lowered)
        ):
            return ProxyError(
                f"{where} has no database, so it cannot make or read per-run keys "
                f"({path}: HTTP {status}); run it with its database (`ssebench proxy up`)",
                reason="no_database",
                status=status,
            )
        if status in (401, 403) or "auth" in kind.lower():
            return ProxyError(
                f"{where} refused the master key ({path}: HTTP {status}); check LITELLM_MASTER_KEY",
                reason="auth",
                status=status,
            )
        if "budget" in lowered:
            return ProxyError(
                f"{where} refused {path}: over budget (HTTP {status}: {message})",
                reason="budget",
                status=status,
            )
        if "model" in lowered and path == "/key/generate":
            return ProxyError(
                f"{where} refused a key for this model (HTTP {status}: {message})",
                reason="model",
                status=status,
            )
        return ProxyError(
            f"{where} refused {path} (HTTP {status}: {message})", reason="answer", status=status
        )

    def served_models(self) -> list[str]:
        data = self._request("GET", "/v1/models")
        entries = data.get("data") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            raise ProxyError(
                f"The LiteLLM proxy at {self.host_url} answered /v1/models without a model list",
                reason="answer",
            )
        return sorted(
            str(entry["id"]) for entry in entries if isinstance(entry, dict) and "id" in entry
        )

    def offered_models(self) -> list[str]:
        """The models the proxy serves, without the entries that only bridge another."""
        return [name for name in self.served_models() if not is_responses_bridge(name)]

    def check_model(self, model: str) -> str | None:
        """Raises ProxyError unless the proxy serves model; its Responses bridge, if any."""
        served = self.served_models()
        if model not in served or is_responses_bridge(model):
            listed = ", ".join(name for name in served if not is_responses_bridge(name)) or "none"
            raise ProxyError(
                f"The LiteLLM proxy at {self.host_url} does not serve the model {model!r}; "
                f"it serves: {listed}. A stack started before the model was added needs "
                "`ssebench proxy down` and `ssebench proxy up`",
                reason="model",
            )
        bridge = responses_bridge_name(model)
        return bridge if bridge in served else None

    def generate_key(self, model: str, budget: float, run_id: str) -> RunKey:
        """A key that may call model only (and its Responses bridge), and spend at most
        budget USD."""
        if not budget > 0:
            raise UserError("The budget must be a positive number of USD")
        bridge = self.check_model(model)
        data = self._request(
            "POST",
            "/key/generate",
            {
                "models": [model] if bridge is None else [model, bridge],
                "max_budget": budget,
                "key_alias": f"ssebench-{run_id}",
                "metadata": {"ssebench_run_id": run_id},
            },
        )
        key = data.get("key") if isinstance(data, dict) else None
        if not isinstance(key, str) or not key:
            raise ProxyError(
                f"The LiteLLM proxy at {self.host_url} answered /key/generate without a key",
                reason="answer",
            )
        return RunKey(secret=key, model=model, budget=budget, managed=True, responses_model=bridge)

    def spend(self, key: RunKey) -> Spend:
        query = urllib.parse.urlencode({"key": key.hashed})
        data = self._request("GET", f"/key/info?{query}")
        info = data.get("info") if isinstance(data, dict) else None
        if not isinstance(info, dict):
            raise ProxyError(
                f"The LiteLLM proxy at {self.host_url} answered /key/info without the key's info",
                reason="answer",
            )
        try:
            usd = float(info.get("spend") or 0.0)
            budget = info.get("max_budget")
            return Spend(usd=usd, budget=None if budget is None else float(budget))
        except (TypeError, ValueError):
            raise ProxyError(
                f"The LiteLLM proxy at {self.host_url} answered /key/info with a spend "
                "that is not a number",
                reason="answer",
            ) from None

    def revoke_hash(self, hashed: str) -> bool:
        """Revoke the key whose SHA-256 is hashed; False when the proxy has no such key
        (revoked already). Raises ProxyError otherwise."""
        try:
            data = self._request("POST", "/key/delete", {"keys": [hashed]})
        except ProxyError as error:
            if error.status == 404:
                return False
            raise
        deleted = data.get("deleted_keys") if isinstance(data, dict) else None
        if not isinstance(deleted, list) or hashed not in deleted:
            raise ProxyError(
                f"The LiteLLM proxy at {self.host_url} did not confirm that it revoked the key",
                reason="answer",
            )
        return True

    def delete_key(self, key: RunKey) -> None:
        if not self.revoke_hash(key.hashed):
            raise ProxyError(
                f"The LiteLLM proxy at {self.host_url} has no such key to revoke",
                reason="answer",
                status=404,
            )
