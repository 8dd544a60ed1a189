"""Start-up: `ssebench --help` imports no command's module, each command imports only
its own, and none imports the kubernetes client, Starlette or YAML before it needs them
(issue 16; docs/performance.md has the figures)."""

from __future__ import annotations

import importlib
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from ssebench.cli.main import COMMANDS, build_parser
from tests.unit.test_docker_engine import FakeDaemon, http_answer

HEAVY = ("kubernetes", "starlette", "uvicorn", "yaml", "urllib.request", "http.client")
# What listing runs does not need: the image builds, the Docker backend's run, archive,
# clean-up and network modules (and through them the proxy's), tar extraction, and the
# entry points' importlib.metadata.
NOT_FOR_LISTING = (
    "ssebench.images",
    "ssebench.image_layers",
    "ssebench.backends.docker.archive",
    "ssebench.backends.docker.children",
    "ssebench.backends.docker.cleanup",
    "ssebench.backends.docker.containers",
    "ssebench.backends.docker.logs",
    "ssebench.backends.docker.network",
    "ssebench.backends.docker.firewall",
    "ssebench.proxy",
    "ssebench.results.safe_tar",
    "ssebench.tasks",
    "ssebench.agents",
    # Costs of the standard library that listing does without (docs/performance.md).
    "importlib.metadata",
    "email",
    "datetime",
)


def loaded_after(words: list[str]) -> set[str]:
    """The modules a fresh interpreter holds after building the parser for words."""
    script = (
        "import json, sys\n"
        "from ssebench.cli.main import build_parser\n"
        f"build_parser({words!r})\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return set(json.loads(done.stdout))


def helps(words: list[str] | None) -> dict[str, str | None]:
    parser = build_parser(words)
    assert parser._subparsers is not None
    commands = parser._subparsers._group_actions[0]
    return {choice.dest: choice.help for choice in commands._choices_actions}


def test_the_help_of_every_command_is_its_modules() -> None:
    every = helps(None)
    assert every == {name: help_text for name, _, help_text in COMMANDS}
    assert helps(["--help"]) == every
    assert helps(["runs", "list"]) == every


def test_help_imports_no_command() -> None:
    loaded = loaded_after(["--help"])
    commands = {f"ssebench.cli.{module}" for _, module, _ in COMMANDS}
    assert not loaded & commands
    assert not [name for name in loaded if name.split(".")[0] in HEAVY or name in HEAVY]
    # argparse's formatter imports shutil (with bz2, lzma) for the width; main's does not.
    assert not loaded & {"shutil", "threading", "importlib.metadata"}


@pytest.mark.parametrize("words", [["runs", "list", "--json"], ["run", "--help"]])
def test_a_command_imports_its_module_only_and_nothing_heavy(words: list[str]) -> None:
    loaded = loaded_after(words)
    assert f"ssebench.cli.{words[0]}" in loaded
    assert "ssebench.cli.webui" not in loaded
    assert not [name for name in loaded if name in HEAVY or name.split(".")[0] in HEAVY]


@pytest.mark.parametrize("words", [["runs", "list", "--json"], ["runs", "inspect", "some-id"]])
def test_listing_runs_imports_only_what_listing_needs(words: list[str]) -> None:
    # The backend is loaded as `runs list` loads it, and lists from a daemon that is not
    # there (the Engine API, then the docker CLI's fallback, both fail): every import of
    # the listing path has happened by then, which is what is counted.
    script = (
        "import json, sys\n"
        "from ssebench.backends import load_backend\n"
        "from ssebench.cli.main import build_parser\n"
        "from ssebench.errors import SsebenchError\n"
        f"build_parser({words!r})\n"
        "try:\n"
        "    load_backend('docker').list_runs({'ssebench.run-id': 'x'})\n"
        "except SsebenchError:\n"
        "    pass\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    environment = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=environment
    )
    loaded = set(json.loads(done.stdout))
    assert "ssebench.backends.docker.listing" in loaded
    assert not [name for name in loaded if name.startswith(NOT_FOR_LISTING)]


# What `runs list` on Docker does without: the backend itself and the extension API (with
# dataclasses and inspect), and the standard library's typing, pathlib and urllib
# (docs/performance.md, "`runs list` without the extension API").
NOT_FOR_RUNS_LIST = (
    "ssebench.backends.docker.backend",
    "ssebench.extensions",
    "dataclasses",
    "inspect",
    "typing",
    "pathlib",
    "urllib",
    "subprocess",
)


def test_runs_list_on_docker_reads_the_listing_alone(tmp_path: Path) -> None:
    """The whole command, against a daemon that answers its one request with no runs."""
    socket_path = Path("/tmp") / f"ssebench-test-{secrets.token_hex(6)}.sock"
    fake = FakeDaemon(socket_path, http_answer(b"[]"))
    script = (
        "import json, sys\n"
        "from ssebench.cli.main import main\n"
        "status = main(['runs', 'list', '--json'])\n"
        "print(json.dumps([status, sorted(sys.modules)]), file=sys.stderr)\n"
    )
    environment = {**os.environ, "DOCKER_HOST": f"unix://{socket_path}"}
    environment.pop("SSEBENCH_BACKEND", None)
    try:
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=environment
        )
    finally:
        fake.close()
        socket_path.unlink(missing_ok=True)
    status, loaded = json.loads(done.stderr)
    assert status == 0 and json.loads(done.stdout)["runs"] == []
    assert len(fake.requests) == 1
    assert "ssebench.backends.docker.listing" in loaded
    assert not [
        name
        for name in loaded
        if name.split(".")[0] in NOT_FOR_RUNS_LIST or name in NOT_FOR_RUNS_LIST
    ]


def test_the_docker_backend_still_reaches_what_it_defers() -> None:
    from ssebench.backends.docker import backend

    assert callable(backend.builds.prepare_images)
    assert callable(backend.children.remember) and callable(backend.archive.remove_archive)


# What a run without a model (the reference agent's) does without: the proxy's key client,
# its sessions and the Compose stack's code (docs/performance.md).
NOT_FOR_A_RUN_WITHOUT_A_MODEL = (
    "ssebench.proxy.keys",
    "ssebench.proxy.session",
    "ssebench.proxy.stack",
)


@pytest.mark.parametrize("command", ["run", "eval"])
def test_a_run_without_a_model_imports_no_proxy_code(command: str) -> None:
    # The command's module, the runner, and every module of the Docker backend that a
    # run uses (the network one names the proxy's service for model runs).
    script = (
        "import json, sys\n"
        "from ssebench.cli.main import build_parser\n"
        f"build_parser([{command!r}, '--help'])\n"
        "import ssebench.runner, ssebench.evaluation\n"
        "from ssebench.backends.docker import archive, backend, cleanup, network\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    loaded = set(json.loads(done.stdout))
    assert f"ssebench.cli.{command}" in loaded
    assert "ssebench.backends.docker.network" in loaded
    assert not loaded & set(NOT_FOR_A_RUN_WITHOUT_A_MODEL)


def test_the_proxy_packages_names_are_its_modules() -> None:
    import ssebench.proxy as proxy

    for name in proxy.__all__:
        assert getattr(proxy, name) is getattr(
            importlib.import_module(f"ssebench.proxy.{proxy._MODULE_OF[name]}"), name
        )
    assert sorted(proxy.__all__) == sorted(proxy._MODULE_OF)
    with pytest.raises(AttributeError, match="no attribute 'LocalStak'"):
        proxy.LocalStak  # noqa: B018
