"""The models the launcher offers: those the backend's own proxy serves, or, with the
local proxy stack, those of the models/ files ($SSEBENCH_MODELS_DIR), each saying
whether its provider key is set on this machine (by the variable's name; a value is
never read into an answer). `ssebench run` makes the same check (plan_model_access).
"""

from __future__ import annotations

import os
from typing import Any

from ssebench.errors import SsebenchError
from ssebench.extensions import ProxyEndpoint
from ssebench.proxy import MASTER_KEY_VARIABLE, ModelCatalog
from ssebench.proxy.keys import ProxyClient

PROXY_TIMEOUT_SECONDS = 5.0


def offered_models(backend_proxy: ProxyEndpoint | None) -> dict[str, Any]:
    """{"source": "proxy"|"files", "models": [...], "problem": str|None}."""
    if backend_proxy is not None:
        return _served(backend_proxy)
    try:
        catalog = ModelCatalog.load()
    except SsebenchError as error:
        return {"source": "files", "models": [], "problem": str(error)}
    models = []
    for name in catalog.names:
        model = catalog.get(name)
        models.append(
            {
                "name": model.name,
                "provider": model.provider,
                "key_variable": model.key_variable,
                "key_missing": bool(model.key_variable and not os.environ.get(model.key_variable)),
            }
        )
    problem = None
    if not os.environ.get(MASTER_KEY_VARIABLE):
        problem = (
            f"A run with a model needs the proxy's master key: ${MASTER_KEY_VARIABLE} is not "
            "set where the web UI runs"
        )
    return {"source": "files", "models": models, "problem": problem}


def _served(endpoint: ProxyEndpoint) -> dict[str, Any]:
    master_key = os.environ.get(MASTER_KEY_VARIABLE, "")
    if not master_key:
        return {
            "source": "proxy",
            "models": [],
            "problem": f"${MASTER_KEY_VARIABLE} is not set, so the proxy cannot be asked "
            "which models it serves",
        }
    try:
        served = ProxyClient(
            endpoint.host_url, master_key, timeout=PROXY_TIMEOUT_SECONDS
        ).offered_models()
    except SsebenchError as error:
        return {"source": "proxy", "models": [], "problem": str(error)}
    return {
        "source": "proxy",
        "models": [
            {"name": name, "provider": None, "key_variable": None, "key_missing": False}
            for name in served
        ],
        "problem": None,
    }
