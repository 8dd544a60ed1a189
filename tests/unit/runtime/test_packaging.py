"""The runtime is shipped as a copy named ssebench_runtime and runs on the image's
python3: it may import only the standard library and its own modules, relatively."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

RUNTIME = ROOT / "src" / "ssebench" / "runtime"
DOCKERFILES = ROOT / "src" / "ssebench" / "dockerfiles"


@pytest.mark.parametrize("path", sorted(RUNTIME.glob("*.py")), ids=lambda p: p.name)
def test_imports_are_stdlib_or_relative(path: Path) -> None:
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            assert top in sys.stdlib_module_names or top == "__future__", f"{path.name}: {name}"


def test_a_copy_named_ssebench_runtime_imports_in_isolated_mode(tmp_path: Path) -> None:
    shutil.copytree(
        RUNTIME, tmp_path / "ssebench_runtime", ignore=shutil.ignore_patterns("__pycache__")
    )
    # Not __main__: importing it runs the entrypoint against the container's paths.
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r}); "
        "import ssebench_runtime.entrypoint, ssebench_runtime.daemon, ssebench_runtime.evaluator"
    )
    done = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_launcher_finds_the_runtime_by_a_fixed_path() -> None:
    tree = ast.parse((RUNTIME / "launcher.py").read_text())
    constants = {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
    }
    assert constants["LIBRARY"] == "/opt/ssebench/lib"


def instructions(name: str) -> list[str]:
    text = (DOCKERFILES / name).read_text()
    joined = re.sub(r"\\\n", " ", text)
    return [
        line.strip()
        for line in joined.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def test_tool_layer_contract() -> None:
    lines = instructions("tool.Dockerfile")
    assert lines[0] == "ARG BASE_IMAGE" and lines[1] == "FROM ${BASE_IMAGE}"
    assert 'ENTRYPOINT ["python3", "/opt/ssebench/bin/ssebench-entrypoint"]' in lines
    assert "EXPOSE 4263" in lines
    assert any(line.startswith("LABEL ssebench.layer=tool") for line in lines)
    assert "COPY ssebench_runtime/ /opt/ssebench/lib/ssebench_runtime/" in lines
    assert not any("PYTHONPATH" in line for line in lines)
    assert not any(line.startswith("ENV ") for line in lines)


def test_agent_layer_contract() -> None:
    lines = instructions("agent.Dockerfile")
    assert lines[:4] == [
        "ARG BASE_IMAGE",
        "ARG INSTALL_IMAGE",
        "FROM ${INSTALL_IMAGE} AS install",
        "FROM ${BASE_IMAGE}",
    ]
    # The installed program is copied last, from the agent's install image.
    copies = [line for line in lines if line.startswith("COPY")]
    assert copies[-1].startswith("COPY --chown=0:0 --from=install /opt/ssebench/agent-install/")
    assert "ARG AGENT_NAME" in lines and "ARG AGENT_VERSION" in lines
    assert 'CMD ["/opt/ssebench/agent/run"]' in lines
    label = next(line for line in lines if line.startswith("LABEL "))
    assert "ssebench.layer=agent" in label
    assert "ssebench.agent=${AGENT_NAME}" in label
    assert "ssebench.agent-version=${AGENT_VERSION}" in label
    assert not any(line.startswith(("ENTRYPOINT", "USER")) for line in lines)
