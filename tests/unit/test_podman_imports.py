"""The Podman backend is built on the public extension API only, as a third party's
would be: it imports nothing of ssebench but these modules."""

from __future__ import annotations

import ast
from pathlib import Path

import ssebench.backends

PUBLIC_MODULES = {"ssebench.extensions", "ssebench.image_layers"}
# The backend's own package may import itself.
OWN_PACKAGE = "ssebench.backends.podman"
BACKEND = Path(ssebench.backends.__file__).parent / "podman"


def imported_modules(source: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{source}: a relative import reaches private modules"
            module = node.module or ""
            # "from ssebench import x" imports the module ssebench.x.
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def test_the_podman_backend_imports_only_public_api() -> None:
    modules = sorted(BACKEND.glob("*.py"))
    assert len(modules) > 1, "the check found no modules of the backend"
    ours = {
        name
        for module in modules
        for name in imported_modules(module)
        if name.split(".")[0] == "ssebench"
    }
    allowed = {*PUBLIC_MODULES, OWN_PACKAGE}
    reaching = {
        name
        for name in ours
        if not any(name == public or name.startswith(f"{public}.") for public in allowed)
    }
    assert ours & {"ssebench.extensions.Backend"}, "the check missed the backend's imports"
    assert reaching == set(), f"the Podman backend imports private modules: {sorted(reaching)}"


def test_the_check_catches_a_private_import(tmp_path: Path) -> None:
    source = tmp_path / "backend.py"
    source.write_text("from ssebench import labels\nfrom ssebench.images.builds import run_build\n")
    assert imported_modules(source) == {"ssebench.labels", "ssebench.images.builds.run_build"}
