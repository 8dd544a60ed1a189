"""The parts of the Kubernetes backend that need no cluster."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ssebench.backends.kubernetes import backend, client, image_check, manifests
from ssebench.backends.kubernetes.backend import KubernetesBackend, wrap_command
from ssebench.backends.kubernetes.config import KubernetesSettings
from ssebench.backends.kubernetes.image_check import ImageCheck
from ssebench.errors import BackendError, UserError
from ssebench.extensions import ImageRequest, RunHandle
from ssebench.stopping import RunAbandoned
from tests.unit.kubernetes.test_manifests import RUN_ID, make_spec


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


def test_prebuilt_images_only_and_no_sidecar(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        image_check, "check_image", lambda settings, image, read_out=None: ImageCheck("present")
    )
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

    message = client.redact(f"Cannot create: {client.reason(FakeApiError())}", ["sk-secret-value"])
    assert message == "Cannot create: 422 Unprocessable Entity: data[x]: Invalid value: ***"


def test_a_missing_client_is_one_line_saying_what_to_install() -> None:
    code = (
        "import sys; sys.modules['kubernetes'] = None\n"
        "from ssebench.backends.kubernetes.client import api\n"
        "try:\n    api()\nexcept Exception as error:\n    print(type(error).__name__, error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == f"UserError {client.CLIENT_MISSING}"
    assert "pip install 'ssebench[kubernetes]'" in client.CLIENT_MISSING


def test_the_package_does_not_import_the_client() -> None:
    code = (
        "import sys\nimport ssebench.backends.kubernetes\n"
        "print([m for m in sys.modules if m == 'kubernetes' or m.startswith('kubernetes.')])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "[]", done.stderr


def test_sidecar_refusal_reason_is_the_specs() -> None:
    assert "copied between them before they start" in manifests.SIDECAR_REFUSED


class RecordingApi:
    """The API calls start makes, in order; fails the call named fail_on (a SIGKILL of
    the runner there leaves what was made before it)."""

    def __init__(
        self,
        fail_on: str | None = None,
        raised: BaseException | type[BaseException] = KeyboardInterrupt,
    ) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.fail_on = fail_on
        self.raised = raised

    def __getattr__(self, method: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            body = next((arg for arg in args if isinstance(arg, dict)), {})
            self.calls.append((method, body))
            if method == self.fail_on:
                raise self.raised  # what a signal does to a runner mid-start
            if method == "create_namespaced_job":
                return SimpleNamespace(metadata=SimpleNamespace(uid="job-uid-7"))
            return SimpleNamespace(items=[])

        return call


def install_api(monkeypatch: pytest.MonkeyPatch, api: Any) -> None:
    """api as the backend's client: core, batch and networking at once; no exec."""
    fake = client.Api(
        core=api,
        batch=api,
        networking=api,
        stream=lambda *a, **k: None,
        api_exception=LookupError,
        private_core=lambda: api,
    )
    monkeypatch.setattr(client, "api", lambda: fake)


def fake_api(monkeypatch: pytest.MonkeyPatch, api: RecordingApi) -> None:
    install_api(monkeypatch, api)
    monkeypatch.setattr(
        KubernetesBackend,
        "_wait_until_started",
        lambda self, *a, **k: SimpleNamespace(metadata=SimpleNamespace(name="pod-1")),
    )
    monkeypatch.setattr(backend, "_start_output_thread", lambda *a: None)


def test_start_makes_the_job_first_and_the_secret_owned_from_its_first_moment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    api = RecordingApi()
    fake_api(monkeypatch, api)
    KubernetesBackend(KubernetesSettings(namespace="runs")).start(make_spec(tmp_path))
    made = [(method, body) for method, body in api.calls if method.startswith("create")]
    assert [method for method, _ in made] == [
        "create_namespaced_job",
        "create_namespaced_network_policy",
        "create_namespaced_secret",
    ]
    owner = manifests.owner_references(f"ssebench-{RUN_ID}", "job-uid-7")
    for _, body in made[1:]:
        assert body["metadata"]["ownerReferences"] == owner
    assert not [method for method, _ in api.calls if method.startswith("patch")]
    # The task container takes its environment from the Secret only: it cannot start
    # before the Secret exists, which is made after the policy.
    job = made[0][1]
    task = job["spec"]["template"]["spec"]["containers"][0]
    assert all("secretKeyRef" in variable["valueFrom"] for variable in task["env"])


@pytest.mark.parametrize(
    "killed_at", ["create_namespaced_network_policy", "create_namespaced_secret"]
)
def test_an_interrupted_start_leaves_no_secret_without_its_job(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, killed_at: str
) -> None:
    """Interrupted at each step, start removes what it made; killed outright there
    instead, what exists is the Job and objects it owns, never an unowned Secret."""
    api = RecordingApi(fail_on=killed_at)
    fake_api(monkeypatch, api)
    with pytest.raises(KeyboardInterrupt):
        KubernetesBackend(KubernetesSettings(namespace="runs")).start(make_spec(tmp_path))
    made = [method for method, _ in api.calls if method.startswith("create")]
    assert made[-1] == killed_at and "create_namespaced_secret" not in made[:-1]
    deleted = [method for method, _ in api.calls if method.startswith("delete_namespaced")]
    # The Job alone: it owns the rest, which the cluster removes with it.
    assert deleted == ["delete_namespaced_job"]


@pytest.mark.parametrize(
    "signalled_at", ["create_namespaced_network_policy", "create_namespaced_secret"]
)
def test_a_second_signal_during_start_leaves_the_job(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, signalled_at: str
) -> None:
    """The runner's second signal (RunAbandoned) asks nothing more of the cluster: start
    deletes nothing, and the Job is left to its deadline and time to live (spec)."""
    api = RecordingApi(fail_on=signalled_at, raised=RunAbandoned(signal.SIGTERM))
    fake_api(monkeypatch, api)
    with pytest.raises(RunAbandoned):
        KubernetesBackend(KubernetesSettings(namespace="runs")).start(make_spec(tmp_path))
    made = [method for method, _ in api.calls if method.startswith("create")]
    assert made[0] == "create_namespaced_job" and made[-1] == signalled_at
    assert not [method for method, _ in api.calls if method.startswith("delete")]
