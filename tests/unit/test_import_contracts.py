"""The import contracts of pyproject.toml ([tool.importlinter], run by `make lint`): they
hold for ssebench as it is, and each fails on an import that breaks it, added to a copy
of the package (a cycle, one backend importing another, the runtime or the public
interface importing host-side code)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

# (module file of the copy, the import appended to it, the contract it breaks)
BREAKS = [
    (
        "tasks/model.py",
        "from ssebench import runner",  # runner builds on tasks: a cycle
        "No import cycles",
    ),
    (
        "backends/kubernetes/client.py",
        "from ssebench.backends.kubernetes import backend",  # backend builds on client
        "No import cycles",
    ),
    (
        "backends/podman/backend.py",
        "from ssebench.backends.docker import engine",
        "The backends are independent of each other",
    ),
    (
        "runtime/logs.py",
        "from ssebench import results",
        "The runtime (shipped into images alone) imports nothing of ssebench outside it",
    ),
    (
        "extensions.py",
        "from ssebench.host import scratch",
        "ssebench.extensions imports only errors, labels and its CLI helpers",
    ),
]


def lint_imports(source: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports with the project's contracts, on the ssebench found under source."""
    return subprocess.run(
        [str(LINT_IMPORTS), str(ROOT / "pyproject.toml"), "--no-cache"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=source,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(source)},
    )


@pytest.fixture(scope="module")
def copy_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("contracts")


def copy_of_the_package(into: Path) -> Path:
    shutil.copytree(
        ROOT / "src" / "ssebench", into / "ssebench", ignore=shutil.ignore_patterns("__pycache__")
    )
    return into


def test_the_contracts_hold_for_ssebench() -> None:
    done = lint_imports(ROOT / "src")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Contracts: 4 kept, 0 broken." in done.stdout


@pytest.mark.parametrize(("module", "line", "contract"), BREAKS, ids=[b[0] for b in BREAKS])
def test_an_import_that_breaks_a_contract_fails_the_check(
    tmp_path: Path, module: str, line: str, contract: str
) -> None:
    source = copy_of_the_package(tmp_path)
    with (source / "ssebench" / module).open("a") as file:
        file.write(f"\n{line}  # noqa\n")
    done = lint_imports(source)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    broken = done.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, done.stdout[-3000:]
    assert "Contracts: 3 kept, 1 broken." in done.stdout
