"""No module of src/ssebench uses a private name (`_x`) of another module: neither
`from m import _x` nor `m._x` on a module it imported. What a module keeps private can
change without a look at the others (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "src" / "ssebench"
# Names that begin with an underscore and are public by convention.
DUNDERS_ALLOWED = ("__version__", "__all__")


def ours(node: ast.ImportFrom) -> bool:
    """An import from ssebench (absolute, or relative as in the runtime)."""
    return node.level > 0 or (node.module or "").split(".")[0] == "ssebench"


def private_uses(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    modules: set[str] = set()  # the names this file binds to modules it imports
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "ssebench":
                    modules.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and ours(node):
            for alias in node.names:
                if alias.name.startswith("_") and alias.name not in DUNDERS_ALLOWED:
                    found.append(f"{path}:{node.lineno}: from {node.module} import {alias.name}")
                else:
                    # `from ssebench import labels as _labels` binds a module: its
                    # attributes are the module's public names or not, as any.
                    modules.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            found.append(f"{path}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_module_uses_a_private_name_of_another() -> None:
    found = [use for path in sorted(SOURCE.rglob("*.py")) for use in private_uses(path)]
    assert found == []


def test_the_check_finds_both_forms(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os\nfrom ssebench.cli import run as run_cli\n"
        "from ssebench.backends.kubernetes.backend import _api\n"
        "run_cli._settings(None)\nos._exit(0)\nobject()._private\n"
    )
    # os._exit is the standard library's public name; only ssebench's count.
    assert [use.split(": ", 1)[1] for use in private_uses(sample)] == [
        "from ssebench.backends.kubernetes.backend import _api",
        "run_cli._settings",
    ]
