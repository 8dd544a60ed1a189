"""prepare_images' check that the nodes can get a prebuilt image: the node's answers,
classified, and what prepare_images makes of each (the cluster's own: tests/kubernetes)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ssebench.backends.kubernetes import backend, image_check, manifests
from ssebench.backends.kubernetes.backend import KubernetesBackend
from ssebench.backends.kubernetes.config import KubernetesSettings
from ssebench.backends.kubernetes.image_check import ImageCheck, check_pod, classify
from ssebench.errors import BackendError, ImageUnavailableError
from tests.unit.kubernetes.test_backend import request


@pytest.mark.parametrize(
    ("reason", "message", "verdict"),
    [
        (
            "ErrImageNeverPull",
            'Container image "x" is not present with pull policy of Never',
            "missing",
        ),
        ("ErrImagePull", "manifest for r/x:1 not found: manifest unknown", "missing"),
        ("ImagePullBackOff", 'failed to resolve reference "r/x:1": r/x:1: not found', "missing"),
        ("InvalidImageName", "couldn't parse image name", "missing"),
        (
            "ErrImagePull",
            "pull access denied, repository does not exist or may require 'docker login'",
            "unknown",
        ),
        ("ErrImagePull", "401 Unauthorized", "unknown"),
        ("ErrImagePull", "dial tcp 10.0.0.1:443: i/o timeout", "unknown"),
    ],
)
def test_the_nodes_answers(reason: str, message: str, verdict: str) -> None:
    found = classify(reason, message)
    assert found is not None and found.verdict == verdict


def test_a_container_still_being_made_is_no_answer_yet() -> None:
    assert classify("ContainerCreating", None) is None
    assert classify(None, None) is None


def test_the_check_pod_has_the_runs_pull_settings_and_no_rights() -> None:
    settings = KubernetesSettings(image_pull_policy="Always", image_pull_secrets=("pull",))
    pod = check_pod("r/x:1", "ssebench-probe-ab-image", "ab", settings)
    container = pod["spec"]["containers"][0]
    assert container["image"] == "r/x:1" and container["imagePullPolicy"] == "Always"
    assert pod["spec"]["imagePullSecrets"] == [{"name": "pull"}]
    assert pod["spec"]["automountServiceAccountToken"] is False
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert pod["metadata"]["labels"]["ssebench.probe"] == "ab"


def test_a_missing_image_is_one_line_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backend, "_present_images", {})
    monkeypatch.setattr(
        image_check,
        "check_image",
        lambda settings, image, read_out=None: ImageCheck("missing", "not found"),
    )
    with pytest.raises(ImageUnavailableError) as raised:
        KubernetesBackend().prepare_images(request())
    message = str(raised.value)
    assert (
        "\n" not in message
        and raised.value.image == "registry.invalid/ssebench/agent-reference/t:1"
    )
    assert "registry.invalid/ssebench/agent-reference/t:1" in message
    assert "ssebench images publish --registry registry.invalid/ssebench" in message


def test_when_the_node_cannot_tell_the_run_goes_on_with_a_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(backend, "_present_images", {})
    answers = iter([ImageCheck("unknown", "401 Unauthorized"), ImageCheck("unknown", "again")])
    monkeypatch.setattr(
        image_check, "check_image", lambda settings, image, read_out=None: next(answers)
    )
    assert KubernetesBackend().prepare_images(request()).run.endswith("/t:1")
    line = capsys.readouterr().err
    assert line.count("\n") == 1 and "cannot check" in line and "401 Unauthorized" in line

    def refused(settings: KubernetesSettings, image: str, read_out: str | None) -> ImageCheck:
        raise BackendError("Cannot create the pod: 403 Forbidden", backend="kubernetes")

    monkeypatch.setattr(image_check, "check_image", refused)
    assert KubernetesBackend().prepare_images(request()).run.endswith("/t:1")
    assert "403 Forbidden" in capsys.readouterr().err


def test_an_image_found_once_is_not_checked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backend, "_present_images", {})
    checks: list[str] = []

    def present(settings: KubernetesSettings, image: str, read_out: str | None) -> ImageCheck:
        checks.append(image)
        return ImageCheck("present")

    monkeypatch.setattr(image_check, "check_image", present)
    kubernetes = KubernetesBackend()
    kubernetes.prepare_images(request())
    kubernetes.prepare_images(request())
    assert len(checks) == 1


def test_a_present_answer_is_kept_for_an_hour_per_server_namespace_policy_and_image(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The next process skips the check's pod for an image a node had; not for another
    image, namespace or pull policy, not after ANSWER_SECONDS, not once forgotten, not
    when the pod is to read a file out, and never for a missing or unknown answer."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(image_check, "_server", lambda: "https://k8s.invalid")
    pods: list[str] = []
    answers = {"r/x:1": ImageCheck("present"), "r/gone:1": ImageCheck("missing", "not found")}

    def with_a_pod(settings: KubernetesSettings, image: str, read_out: str | None) -> ImageCheck:
        pods.append(f"{settings.namespace}/{settings.image_pull_policy}/{image}")
        return answers[image]

    monkeypatch.setattr(image_check, "_check_with_a_pod", with_a_pod)
    settings = KubernetesSettings(namespace="runs", image_pull_policy="Never")
    assert image_check.check_image(settings, "r/x:1").verdict == "present"
    kept = image_check.check_image(settings, "r/x:1")
    assert kept.verdict == "present" and "found 0 s ago" in kept.detail
    assert pods == ["runs/Never/r/x:1"]
    image_check.check_image(
        KubernetesSettings(namespace="other", image_pull_policy="Never"), "r/x:1"
    )
    image_check.check_image(
        KubernetesSettings(namespace="runs", image_pull_policy="Always"), "r/x:1"
    )
    assert image_check.check_image(settings, "r/gone:1").verdict == "missing"
    assert image_check.check_image(settings, "r/gone:1").verdict == "missing"
    assert len(pods) == 5
    later = image_check.time.time() + image_check.ANSWER_SECONDS + 1
    path = image_check.answer_file("https://k8s.invalid", settings, "r/x:1")
    assert image_check.read_answer(path, "r/x:1", later) is None
    assert image_check.read_answer(path, "r/other:1", image_check.time.time()) is None
    image_check.forget(settings, "r/x:1")
    image_check.check_image(settings, "r/x:1")
    assert len(pods) == 6
    # A check that reads a file out has its pod all the same: the file is not kept.
    assert image_check.check_image(settings, "r/x:1").verdict == "present"
    image_check.check_image(settings, "r/x:1", "/the/patch")
    assert len(pods) == 7


def test_the_check_reads_out_a_file_that_survives_a_text_log(tmp_path: Path) -> None:
    """READ_OUT_SCRIPT through this machine's sh and base64, as the pod runs it: bytes
    that are not UTF-8, lines without an ending and an empty file come back as they were;
    a missing file prints no end mark, so nothing is kept."""
    settings = KubernetesSettings(namespace="runs")
    pod = check_pod("r/x:1", "ssebench-probe-1-image", "1", settings, read_out="/the/patch")
    command = pod["spec"]["containers"][0]["command"]
    for content in (b"diff --git a/x b/x\n\xff\xfe latin-1 \xe9\r\nno newline", b""):
        patch = tmp_path / "patch"
        patch.write_bytes(content)
        printed = subprocess.run(
            [*command[:-1], str(patch)], capture_output=True, check=True
        ).stdout
        assert image_check.decode_read_out(printed) == content
    gone = subprocess.run([*command[:-1], str(tmp_path / "gone")], capture_output=True)
    assert gone.returncode == 0
    assert image_check.decode_read_out(gone.stdout + gone.stderr) is None


def test_the_log_read_holds_a_secrets_worth_of_file_and_a_larger_one_keeps_nothing(
    tmp_path: Path,
) -> None:
    """The log is read up to READ_OUT_LOG_BYTES (the API server cuts it there): the
    script's output for a file as large as a Secret holds (1 MiB) fits whole; a larger
    file's, cut at the limit, has no end mark, so nothing is kept."""
    settings = KubernetesSettings(namespace="runs")
    command = check_pod("r/x:1", "p", "1", settings, read_out="/f")["spec"]["containers"][0][
        "command"
    ]
    for size, kept in ((1024 * 1024, True), (image_check.READ_OUT_LOG_BYTES, False)):
        content = bytes(range(256)) * (size // 256)
        (tmp_path / "file").write_bytes(content)
        printed = subprocess.run(
            [*command[:-1], str(tmp_path / "file")], capture_output=True, check=True
        ).stdout
        cut = printed[: image_check.READ_OUT_LOG_BYTES]
        assert image_check.decode_read_out(cut) == (content if kept else None)


def test_only_a_check_that_reads_out_has_the_copy_pods_rights() -> None:
    """The reference patch may be root's alone: the check that reads it runs as the copy
    pod would; any other check stays nobody."""
    settings = KubernetesSettings(namespace="runs")
    plain = check_pod("r/x:1", "p", "1", settings)["spec"]["containers"][0]
    reading = check_pod("r/x:1", "p", "1", settings, read_out="/f")["spec"]["containers"][0]
    assert plain["securityContext"]["runAsUser"] == 65534
    assert plain["command"] == ["sh", "-c", "exit 0"]
    assert reading["securityContext"] == manifests.copy_security_context()
    assert reading["securityContext"]["capabilities"]["add"] == ["DAC_READ_SEARCH"]
