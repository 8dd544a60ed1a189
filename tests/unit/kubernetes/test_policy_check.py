"""The NetworkPolicy probe's objects and its reading of the client's answer, without a
cluster (tests/kubernetes/test_policy_check_kubernetes.py runs it on one)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from ssebench import labels
from ssebench.backends.kubernetes import manifests, policy_check
from ssebench.backends.kubernetes.config import KubernetesSettings


def test_probe_pods_are_labelled_bounded_and_unprivileged() -> None:
    settings = KubernetesSettings(namespace="runs", runtime_class="gvisor")
    pod = policy_check.probe_pod("ab12", "client", "img:1", ["10.0.0.9", "4264"], settings)
    assert pod["metadata"]["name"] == "ssebench-probe-ab12-client"
    found = {**pod["metadata"].get("annotations", {}), **pod["metadata"]["labels"]}
    assert found[manifests.MANAGED_BY] == manifests.MANAGED_BY_VALUE
    assert found[policy_check.PROBE_LABEL] == "ab12"
    assert found[f"{policy_check.PROBE_LABEL}-role"] == "client"
    # What prune needs to tell a leftover of a killed process from a probe under way.
    assert found[labels.RUNNER_PID] == str(os.getpid())
    assert found[labels.RUNNER_HOST] == socket.gethostname()
    assert 0 < int(found[labels.DEADLINE]) - time.time() <= policy_check.POD_SECONDS
    assert labels.abandoned_reason(found, now=time.time(), host=socket.gethostname()) is None
    spec = pod["spec"]
    assert spec["activeDeadlineSeconds"] == policy_check.POD_SECONDS
    assert spec["automountServiceAccountToken"] is False
    assert spec["restartPolicy"] == "Never" and spec["runtimeClassName"] == "gvisor"
    (container,) = spec["containers"]
    assert container["command"][:2] == ["python3", "-c"]
    assert container["command"][3:] == ["10.0.0.9", "4264"]
    context = container["securityContext"]
    assert context["runAsNonRoot"] is True and context["capabilities"] == {"drop": ["ALL"]}
    assert context["allowPrivilegeEscalation"] is False


def test_the_policy_denies_everything_to_the_probe_and_is_owned_by_its_target() -> None:
    policy = policy_check.deny_all_policy("ab12", "ssebench-probe-ab12-target", "uid-1")
    assert policy["spec"] == {
        "podSelector": {"matchLabels": {policy_check.PROBE_LABEL: "ab12"}},
        "policyTypes": ["Ingress", "Egress"],
    }
    assert policy["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "ssebench-probe-ab12-target", "uid": "uid-1"}
    ]
    assert policy["metadata"]["labels"][manifests.MANAGED_BY] == manifests.MANAGED_BY_VALUE


@pytest.mark.parametrize(
    ("outcomes", "enforced"),
    [
        (["connected", "connected", "connected"], False),
        (["blocked", "blocked", "blocked"], True),
        (["connected", "blocked", "blocked"], True),  # rules programmed while it tried
        (["blocked", "connected", "connected"], None),
        ([], None),
        (["maybe"], None),
    ],
)
def test_verdict(outcomes: list[str], enforced: bool | None) -> None:
    assert policy_check.verdict(outcomes).enforced is enforced


def test_a_probe_reads_a_bounded_log_and_decodes_what_it_cannot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The probe's image is the user's (--probe-image): its pods' logs are read up to
    PROBE_LOG_BYTES, and bytes that are not UTF-8 do not end the probe."""
    from ssebench.backends.kubernetes import client

    asked: list[int | None] = []

    def read_log(what, namespace, pod, container, limit_bytes=None):  # type: ignore[no-untyped-def]
        asked.append(limit_bytes)
        return b"\xff\xfe noise\nprobe: blocked blocked blocked\n"

    monkeypatch.setattr(client, "read_log", read_log)
    probe = object.__new__(policy_check._Probe)  # no cluster: only its log reading
    probe.namespace = "runs"
    answer = probe._log("ssebench-probe-ab12-client", "client")
    assert asked == [policy_check.PROBE_LOG_BYTES]
    assert answer.splitlines()[-1] == "probe: blocked blocked blocked"
    assert "\ufffd" in answer


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _client(port: int, attempts: int) -> str:
    arguments = ["127.0.0.1", str(port), "0", str(attempts)]
    answered = subprocess.run(
        [sys.executable, "-c", policy_check.CLIENT_SCRIPT, *arguments],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return answered.stdout.strip()


def test_the_scripts_connect_and_find_a_closed_port_blocked() -> None:
    """The pods' two scripts as the pods run them, here on 127.0.0.1."""
    port = _free_port()
    target = subprocess.Popen(
        [sys.executable, "-c", policy_check.TARGET_SCRIPT, str(port), "20"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert target.stdout is not None
        assert target.stdout.readline().strip() == policy_check.LISTENING
        assert _client(port, 2) == "probe: connected connected"
    finally:
        target.kill()
        target.wait()
    assert _client(port, 1) == "probe: blocked"


class CountingProbe:
    """Stands in for the probe (the cluster's part is tested on the local cluster): it
    counts its runs and answers `answer`."""

    runs = 0
    answer = policy_check.PolicyCheck(False, "not enforced: reached")

    def __init__(self, settings: KubernetesSettings, image: str) -> None:
        self.server = "https://127.0.0.1:16443"

    def run(self) -> policy_check.PolicyCheck:
        CountingProbe.runs += 1
        return CountingProbe.answer


@pytest.fixture
def counting_probe(monkeypatch: pytest.MonkeyPatch, tmp_path) -> type[CountingProbe]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(policy_check, "_Probe", CountingProbe)
    monkeypatch.setattr(policy_check, "_answers", {})
    CountingProbe.runs = 0
    CountingProbe.answer = policy_check.PolicyCheck(False, "not enforced: reached")
    return CountingProbe


def another_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a new ssebench process starts from: no answer of its own."""
    monkeypatch.setattr(policy_check, "_answers", {})


def test_an_answer_serves_later_processes_until_it_is_old(
    counting_probe: type[CountingProbe], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = KubernetesSettings(namespace="runs")
    first = policy_check.cluster_enforces(settings, "img:1")
    assert first.enforced is False and counting_probe.runs == 1
    another_process(monkeypatch)
    again = policy_check.cluster_enforces(settings, "img:1")
    assert again.enforced is False and "s ago" in again.detail
    assert counting_probe.runs == 1
    # Another namespace is another answer.
    policy_check.cluster_enforces(KubernetesSettings(namespace="other"), "img:1")
    assert counting_probe.runs == 2
    # An hour later the cluster is asked again.
    another_process(monkeypatch)
    later = time.time() + policy_check.ANSWER_SECONDS + 1
    monkeypatch.setattr(policy_check.time, "time", lambda: later)
    policy_check.cluster_enforces(settings, "img:1")
    assert counting_probe.runs == 3


def test_doctor_probes_afresh_and_an_unknown_answer_is_not_kept(
    counting_probe: type[CountingProbe], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = KubernetesSettings(namespace="runs")
    policy_check.cluster_enforces(settings, "img:1")
    policy_check.cluster_enforces(settings, "img:1", fresh=True)
    assert counting_probe.runs == 2
    counting_probe.answer = policy_check.PolicyCheck(None, "the probe could not tell")
    policy_check.cluster_enforces(settings, "img:1", fresh=True)
    another_process(monkeypatch)
    # The last known answer (not enforced) still stands; "could not tell" was not kept.
    assert policy_check.cluster_enforces(settings, "img:1").enforced is False
    assert counting_probe.runs == 3


@pytest.mark.parametrize(
    "content", ["", "{", "[]", '{"enforced": "yes", "detail": "x", "found_at": 1}', "null"]
)
def test_a_kept_answer_that_is_not_one_is_ignored(tmp_path, content: str) -> None:
    path = tmp_path / "answer.json"
    path.write_text(content)
    assert policy_check.read_answer(path, time.time()) is None
    assert policy_check.read_answer(tmp_path / "missing.json", time.time()) is None
