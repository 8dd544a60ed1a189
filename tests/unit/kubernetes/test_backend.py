"""The parts of the Kubernetes backend that need no cluster."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ssebench.backends.kubernetes import backend, manifests
from ssebench.backends.kubernetes.backend import KubernetesBackend, wrap_command
from ssebench.errors import BackendError, UserError
from ssebench.extensions import ImageRequest, RunHandle


def request(**overrides: object) -> ImageRequest:
    fields: dict[str, object] = {
        "task_id": "t",
        "dataset": "d",
        "agent": "reference",
        "agent_version": "1",
        "prebuilt": True,
        "registry": "registry.invalid/ssebench",
    }
    fields.update(overrides)
    return ImageRequest(**fields)  # type: ignore[arg-type]


def test_prebuilt_images_only_and_no_sidecar() -> None:
    kubernetes = KubernetesBackend()
    assert kubernetes.builds_images is False and kubernetes.supports_exec is True
    assert (
        kubernetes.prepare_images(request()).run == "registry.invalid/ssebench/agent-reference/t:1"
    )
    with pytest.raises(UserError, match="--prebuilt"):
        kubernetes.prepare_images(request(prebuilt=False))
    with pytest.raises(UserError, match="copied between them before they start"):
        kubernetes.prepare_images(request(mode="sidecar"))


def test_exec_refuses_env_names_without_naming_values() -> None:
    handle = RunHandle(backend="kubernetes", run_id="r", name="ssebench-r")
    with pytest.raises(BackendError, match="--env") as raised:
        KubernetesBackend().exec_argv(handle, ["true"], env_names=["SECRET"])
    assert "SECRET" not in str(raised.value)


def test_user_and_workdir_wrap_the_command_without_a_shell_parsing_it() -> None:
    command = ["echo", "a b", ";", "$HOME", "-un"]
    assert wrap_command(command, user=None, workdir=None) == command
    by_cd = wrap_command(command, user=None, workdir="/src")
    assert by_cd[:3] == ["sh", "-c", 'cd "$0" && exec "$@"'] and by_cd[3:] == ["/src", *command]
    by_su = wrap_command(command, user="model", workdir=None)
    assert by_su[:7] == ["su", "-s", "/bin/sh", "-c", 'cd "$0" && exec "$@"', "--", "model"]
    assert by_su[7:] == [".", *command]
    # The script really keeps the arguments apart (run here with the local sh).
    done = subprocess.run(
        [*by_cd[:3], "/", "printf", "%s|", *command[1:]], capture_output=True, text=True
    )
    assert done.stdout == "a b|;|$HOME|-un|"


def test_exec_status_from_the_error_channel() -> None:
    assert backend._exec_status(json.dumps({"status": "Success"}).encode()) == 0
    failure = {
        "status": "Failure",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": "2"}]},
    }
    assert backend._exec_status(json.dumps(failure)) == 2
    assert backend._exec_status(b"") == -1  # no verdict is no success


def test_decoded_lines_split_across_chunks() -> None:
    chunks = [b"one\ntw", b"o\r\nthr", "é".encode()[:1], "é".encode()[1:] + b"e"]
    assert list(backend._decoded_lines(chunks)) == ["one", "two", "thré" + "e"]


def test_api_errors_are_one_line_and_redacted() -> None:
    class FakeApiError(Exception):
        status = 422
        reason = "Unprocessable Entity"
        body = json.dumps({"message": "data[x]: Invalid value: sk-secret-value"})

    message = backend._redact(
        f"Cannot create: {backend._reason(FakeApiError())}", ["sk-secret-value"]
    )
    assert message == "Cannot create: 422 Unprocessable Entity: data[x]: Invalid value: ***"


def test_a_missing_client_is_one_line_saying_what_to_install() -> None:
    code = (
        "import sys; sys.modules['kubernetes'] = None\n"
        "from ssebench.backends.kubernetes.backend import _api\n"
        "try:\n    _api()\nexcept Exception as error:\n    print(type(error).__name__, error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == f"UserError {backend.CLIENT_MISSING}"
    assert "pip install 'ssebench[kubernetes]'" in backend.CLIENT_MISSING


def test_the_package_does_not_import_the_client() -> None:
    code = (
        "import sys\nimport ssebench.backends.kubernetes\n"
        "print([m for m in sys.modules if m == 'kubernetes' or m.startswith('kubernetes.')])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "[]", done.stderr


def test_sidecar_refusal_reason_is_the_specs() -> None:
    assert "copied between them before they start" in manifests.SIDECAR_REFUSED
