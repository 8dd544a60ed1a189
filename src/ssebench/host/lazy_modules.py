"""A module imported on its first use, for a module that only some of its importer's
calls need: the Docker backend's class names its build, run and clean-up modules this
way, so `ssebench runs list`, which only lists, starts without them (docs/performance.md,
"Docker side: start-up and listing"). tests/unit/test_cli_startup.py checks which modules
a command imports."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """Stands for the module name; the first attribute read imports it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def _module(self) -> ModuleType:
        return importlib.import_module(self._name)  # from sys.modules after the first

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._module(), attribute)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"
