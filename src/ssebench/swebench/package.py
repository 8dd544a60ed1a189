"""The parts of the official `swebench` package that ssebench uses, imported cheaply.

`swebench.harness/__init__.py` imports the whole harness (the Docker client, the
`datasets` library, Modal): about ten seconds, and all of it unused here. The grading
rules and log parsers need none of it, so when `swebench.harness` is not imported yet
it is registered as a bare package (its folder only), and its submodules are imported
on their own. Anything that later imports another submodule still gets it.
"""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path
from typing import Any

from ssebench.errors import UserError

INSTALL_HINT = "install the datasets extra: pip install 'ssebench[datasets]'"


def _register_bare_harness() -> None:
    if "swebench.harness" in sys.modules:
        return
    import swebench  # its __init__ imports lazily: cheap

    harness = types.ModuleType("swebench.harness")
    harness.__path__ = [str(Path(swebench.__file__).parent / "harness")]
    harness.__package__ = "swebench.harness"
    sys.modules["swebench.harness"] = harness


def swebench_module(name: str) -> Any:
    """swebench.<name> (e.g. "harness.grading"). Raises UserError when the package is
    not installed."""
    try:
        _register_bare_harness()
        return importlib.import_module(f"swebench.{name}")
    except ImportError:
        raise UserError(f"The swebench package is missing: {INSTALL_HINT}") from None


def parser_registry() -> dict[str, Any]:
    """The package's log parsers by name."""
    registry: dict[str, Any] = swebench_module("harness.log_parsers").PARSER_REGISTRY
    return registry


def package_version() -> str:
    _register_bare_harness()
    return str(sys.modules["swebench"].__version__)
