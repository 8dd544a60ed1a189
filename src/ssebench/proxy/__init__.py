"""LiteLLM: the models users ask for, the local stack, per-run keys and their spend.

models.py         models/*.yaml -> ModelCatalog -> the proxy's configuration
keys.py           ProxyClient: the proxy's admin API (/key/generate, /key/info, /key/delete)
session.py        one run's key: env for the container, spend and revocation afterwards
stack.py          the local Compose stack (deploy/compose/): build, up, down, status
stack_service.py  the names under which runs reach the stack's proxy

The names below are imported from their modules on their first use: a run without a
model (the reference agent's) and the Docker backend's network module, which names the
proxy's service, start without the key client and the stack's code (docs/performance.md).
"""

from __future__ import annotations

import importlib

# typing.TYPE_CHECKING without importing typing: see cli/main.py.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

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

# Each public name, and the module of this package that defines it.
_MODULE_OF = {
    "DEFAULT_BUDGET_USD": "keys",
    "ProxyClient": "keys",
    "ProxyError": "keys",
    "RunKey": "keys",
    "Spend": "keys",
    "MASTER_KEY_VARIABLE": "models",
    "Model": "models",
    "ModelCatalog": "models",
    "ModelAccessPlan": "session",
    "ModelSession": "session",
    "open_model_session": "session",
    "plan_model_access": "session",
    "revoke_abandoned_key": "session",
    "LocalStack": "stack",
}

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


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
