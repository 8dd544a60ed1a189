"""LiteLLM: the models users ask for, the local stack, per-run keys and their spend.

models.py   models/*.yaml -> ModelCatalog -> the proxy's configuration
keys.py     ProxyClient: the proxy's admin API (/key/generate, /key/info, /key/delete)
session.py  one run's key: env for the container, spend and revocation afterwards
stack.py    the local Compose stack (deploy/compose/): build, up, down, status
"""

from __future__ import annotations

from .keys import DEFAULT_BUDGET_USD, ProxyClient, ProxyError, RunKey, Spend
from .models import MASTER_KEY_VARIABLE, Model, ModelCatalog
from .session import (
    ModelAccessPlan,
    ModelSession,
    open_model_session,
    plan_model_access,
    revoke_abandoned_key,
)
from .stack import LocalStack

__all__ = [
    "DEFAULT_BUDGET_USD",
    "MASTER_KEY_VARIABLE",
    "LocalStack",
    "Model",
    "ModelAccessPlan",
    "ModelCatalog",
    "ModelSession",
    "ProxyClient",
    "ProxyError",
    "RunKey",
    "Spend",
    "open_model_session",
    "plan_model_access",
    "revoke_abandoned_key",
]
