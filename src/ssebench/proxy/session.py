"""A run's access to its model: the key it gets, and its spend afterwards.

open_model_session makes the run's key; ModelSession.env() is what the container gets;
ModelSession.finish() reads the spend and revokes the key, once, whatever happened to
the run. Neither the key nor the master key is ever in a message or a repr.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from ssebench.errors import UserError
from ssebench.extensions import ProxyEndpoint

from .keys import DEFAULT_BUDGET_USD, ProxyClient, ProxyError, RunKey, Spend
from .models import MASTER_KEY_VARIABLE, ModelCatalog
from .stack import LocalStack

# Opt-in for a proxy without a database, which cannot make keys: the run gets the
# master key itself, with no budget and no spend record (tests, a proxy of your own).
MASTER_KEY_FOR_RUNS_VARIABLE = "SSEBENCH_PROXY_MASTER_KEY_FOR_RUNS"
RESPONSES_MODEL_VARIABLE = "SSE_RESPONSES_MODEL_NAME"


@dataclass
class ModelSession:
    client: ProxyClient
    key: RunKey
    service_url: str
    _finished: bool = field(default=False, repr=False)

    def env(self) -> dict[str, str]:
        """The container's model environment (SSE_API_KEY is a secret)."""
        env = {
            "SSE_BASE_URL": self.service_url,
            "SSE_API_KEY": self.key.secret,
            "SSE_MODEL_NAME": self.key.model,
        }
        if self.key.responses_model:
            # Where an agent that speaks the Responses API sends it (models.py).
            env[RESPONSES_MODEL_VARIABLE] = self.key.responses_model
        return env

    def finish(self, say: Callable[[str], None]) -> Spend | None:
        """Read the spend and revoke the key; best effort, never raises; once only."""
        if self._finished:
            return None
        self._finished = True
        if not self.key.managed:
            say("the run used the proxy's master key: no per-run spend to read, no key to revoke")
            return None
        spend: Spend | None = None
        try:
            spend = self.client.spend(self.key)
            over = " (budget exceeded)" if spend.exceeded else ""
            say(f"model spend: {spend.usd:.4f} USD of a {self.key.budget:g} USD budget{over}")
        except ProxyError as error:
            say(f"could not read the run's spend: {error}")
        try:
            self.client.delete_key(self.key)
        except ProxyError as error:
            say(f"could not revoke the run's key: {error}")
        return spend


def _check_master_key(client: ProxyClient) -> None:
    """Before a run gets the master key itself: one authenticated call that needs no
    database. A proxy without a database answers every key but its master key with
    "No connected db", so a wrong master key looks like the missing database; given to
    the run, it would fail every model call and be graded as a failed task."""
    try:
        client.served_models()
    except ProxyError as error:
        if error.reason not in ("no_database", "auth"):
            raise
        raise ProxyError(
            f"The LiteLLM proxy at {client.host_url} did not accept the master key (a proxy "
            "without a database refuses any other key as if it had no database); check "
            f"{MASTER_KEY_VARIABLE}: it must be the key the proxy was started with",
            reason="auth",
            status=error.status,
        ) from None


def open_model_session(
    endpoint: ProxyEndpoint,
    master_key: str,
    *,
    model: str,
    budget: float,
    run_id: str,
    say: Callable[[str], None],
) -> ModelSession:
    """Make the run's key on the proxy; raises ProxyError with a clear reason."""
    client = ProxyClient(endpoint.host_url, master_key)
    try:
        key = client.generate_key(model, budget, run_id)
    except ProxyError as error:
        if error.reason != "no_database":
            raise
        if os.environ.get(MASTER_KEY_FOR_RUNS_VARIABLE) != "1":
            raise ProxyError(
                f"{error}. Where the database layer cannot be built (docs/models.md), only "
                f"master-key runs work: for a proxy no one else uses, set "
                f"{MASTER_KEY_FOR_RUNS_VARIABLE}=1 to give the run the whole master key "
                "(in its container's environment, never revoked; no budget, no spend record)",
                reason="no_database",
                status=error.status,
            ) from None
        _check_master_key(client)
        bridge = client.check_model(model)
        say(
            "the proxy has no database and cannot make keys: the run gets the master key "
            f"({MASTER_KEY_FOR_RUNS_VARIABLE}=1), with no budget and no spend record"
        )
        key = RunKey(
            secret=master_key, model=model, budget=None, managed=False, responses_model=bridge
        )
    else:
        say(f"made the run's key: model {model}, budget {budget:g} USD")
    return ModelSession(client=client, key=key, service_url=endpoint.service_url)


def revoke_abandoned_key(backend_proxy: ProxyEndpoint | None, hashed: str) -> bool:
    """Revoke the key (by its SHA-256) of a run whose runner died before it could;
    False when the proxy has it no more. The proxy is the backend's, else the local
    stack's. Raises UserError (no master key here) or ProxyError."""
    master_key = os.environ.get(MASTER_KEY_VARIABLE, "")
    if not master_key:
        raise UserError(
            f"the run has a model key to revoke: export ${MASTER_KEY_VARIABLE} and prune again"
        )
    endpoint = backend_proxy or LocalStack().endpoint()
    return ProxyClient(endpoint.host_url, master_key).revoke_hash(hashed)


@dataclass(frozen=True)
class ModelAccessPlan:
    """What a run with a model needs, checked before any image is built or key made.

    endpoint None: the local stack, started by open() when it is not running.
    """

    model: str
    budget: float
    endpoint: ProxyEndpoint | None
    catalog: ModelCatalog | None
    master_key: str = field(repr=False)

    def open(self, run_id: str, say: Callable[[str], None]) -> ModelSession:
        endpoint = self.endpoint
        if endpoint is None:
            assert self.catalog is not None
            stack = LocalStack(say=say)
            stack.ensure_up(self.catalog)
            endpoint = stack.endpoint()
        return open_model_session(
            endpoint,
            self.master_key,
            model=self.model,
            budget=self.budget,
            run_id=run_id,
            say=say,
        )


def plan_model_access(
    model: str, budget: float | None, backend_proxy: ProxyEndpoint | None
) -> ModelAccessPlan:
    """Check what a run with model needs on this machine; raises UserError if not.

    With the local stack (backend_proxy None) the model must be in models/ and its
    provider key set here; a backend's own proxy has its own models and keys.
    """
    budget = DEFAULT_BUDGET_USD if budget is None else budget
    if not budget > 0:
        raise UserError("--budget must be a positive number of USD")
    catalog = None
    if backend_proxy is None:
        catalog = ModelCatalog.load()
        entry = catalog.get(model)
        if entry.key_variable and not os.environ.get(entry.key_variable):
            raise UserError(
                f"The model {model} needs the {entry.provider} key ${entry.key_variable} "
                "on this machine (the local proxy passes it to the provider): export it "
                "and run again"
            )
    master_key = os.environ.get(MASTER_KEY_VARIABLE, "")
    if not master_key:
        raise UserError(
            f"A run with a model needs the proxy's master key: export ${MASTER_KEY_VARIABLE} "
            "(the one the proxy was started with)"
        )
    return ModelAccessPlan(
        model=model, budget=budget, endpoint=backend_proxy, catalog=catalog, master_key=master_key
    )
