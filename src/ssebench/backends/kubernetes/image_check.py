"""Whether the nodes can get a run's prebuilt image, asked before the run creates
anything (spec, runner-backends.txt: prepare_images "raises UserError when ... an image
cannot be found").

The node is the only place that knows: the image may be in its own store (a local
cluster, imagePullPolicy Never), or in a registry that only the nodes reach, with the
pull Secrets of the runs' namespace. So the check is a short pod of the image, with the
runs' pull policy and pull Secrets, that exits at once: a container that starts means
the image is there; ErrImageNeverPull, or a registry that answers "not found", means it
is not, and prepare_images says so in one line with the fix. Where the node cannot tell
(the registry wants credentials it lacks, cannot be reached, or the pull outlasts
CHECK_SECONDS) the check says so in one line and lets the run go on: its own start
still reports a pod that cannot pull.

The pod is a NetworkPolicy probe's kind of object (ssebench.probe, role "image"), with
the process that made it and its deadline, so prune removes one a killed process left.

A "present" answer is kept for ANSWER_SECONDS in the user's cache folder, for each API
server, namespace, pull policy and image, as the NetworkPolicy probe keeps its answer:
the next `ssebench run` of the same image skips the pod (its create, reads and delete:
3 API requests or more, 1.5 s or more), unless it is a reference run (below). Should
the image have gone since, the run's own start reports the pod that cannot pull it, and
the answer is forgotten (forget).

For a reference run the check's pod also reads out the task's reference patch, which
copy_from_image would otherwise get with a pod of its own (a create, a read, an exec
and a delete, 2 s or more): the pod prints the file in base64 and then an end mark, and
the check reads its log once. So a reference run checks even when the answer is kept:
the patch is not kept (a tag can be published again with another one), and the check's
pod reads it out sooner than the copy's would. A log without the mark (the image has no
`base64`, the file is missing, the pod was looked at before it ended) keeps nothing, and
the copy takes its own pod as before. Base64, because a container log is kept as text: a
runtime may replace bytes that are not UTF-8.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import secrets
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TextIO

from ssebench.backends.kubernetes import client, manifests
from ssebench.backends.kubernetes.config import KubernetesSettings
from ssebench.backends.kubernetes.policy_check import (
    POD_SECONDS,
    PROBE_RESOURCES,
    PROBE_SECURITY_CONTEXT,
    probe_labels,
)
from ssebench.errors import BackendError

# The whole check, pulling included; then the node cannot tell yet.
CHECK_SECONDS = 45.0
# The first look at the pod, and the pause between later ones: a pod is not scheduled
# and its container started sooner, and one more second matters little to a check made
# once an hour.
FIRST_LOOK_SECONDS = 1.5
POLL_SECONDS = 1.0
# How long a node's "present" serves every ssebench process of this user.
ANSWER_SECONDS = 3600
# What the check's pod prints after a file it read out whole (no base64 line is this).
READ_OUT_END = "ssebench: read out"
# The check's command when it reads out a file ("$1"): the file, then the end mark.
READ_OUT_SCRIPT = f'base64 < "$1" && echo "{READ_OUT_END}"; exit 0'
# The most of the check pod's log that is read (the API server cuts it there): the
# base64 of a file as large as a Secret can hold (1 MiB), with its line ends and the end
# mark. A larger file leaves a log without the mark, so nothing is kept, and the copy
# takes its own pod.
READ_OUT_LOG_BYTES = 2 * 1024 * 1024

Verdict = Literal["present", "missing", "unknown"]

# A registry's words for a name it does not have (containerd, Docker, CRI-O).
_NOT_FOUND = ("not found", "manifest unknown", "name unknown", "404")
# ... and for one it will not show without a login; Docker Hub says "denied" also for
# a repository that does not exist, so these make the answer unknown.
_NEEDS_LOGIN = ("unauthorized", "authentication required", "denied", "401", "403", "login")


@dataclass(frozen=True)
class ImageCheck:
    """verdict: present, missing, or unknown when the node could not tell; detail: the
    node's words (for missing and unknown); read_out: the file the pod was asked to read
    out, when it did (never in repr: it can be a task's answer)."""

    verdict: Verdict
    detail: str = ""
    read_out: bytes | None = field(default=None, repr=False)


def classify(reason: str | None, message: str | None) -> ImageCheck | None:
    """The answer from the check container's waiting state, or None while it pulls."""
    detail = f"{reason}: {message or ''}".strip(": ") if reason else ""
    if reason == "ErrImageNeverPull":
        return ImageCheck("missing", "not on the node, and the pull policy is Never")
    if reason == "InvalidImageName":
        return ImageCheck("missing", detail)
    if reason not in ("ErrImagePull", "ImagePullBackOff"):
        return None
    words = (message or "").lower()
    if any(marker in words for marker in _NEEDS_LOGIN):
        return ImageCheck("unknown", detail)
    if any(marker in words for marker in _NOT_FOUND):
        return ImageCheck("missing", detail)
    return ImageCheck("unknown", detail)


def check_pod(
    image: str, name: str, check: str, settings: KubernetesSettings, read_out: str | None = None
) -> dict[str, Any]:
    """A pod of the image that exits at once, unprivileged, with the runs' pull settings.
    With read_out, it prints that file first (READ_OUT_SCRIPT), with the rights of the
    pod that copy_from_image would otherwise make (the file may be root's alone)."""
    command = ["sh", "-c", "exit 0"]
    security = PROBE_SECURITY_CONTEXT
    if read_out is not None:
        command = ["sh", "-c", READ_OUT_SCRIPT, "sh", read_out]
        security = manifests.copy_security_context()
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": manifests.metadata(name, *probe_labels(check, "image")),
        "spec": {
            **manifests.pod_hardening(settings),
            "terminationGracePeriodSeconds": 1,
            "activeDeadlineSeconds": POD_SECONDS,
            "containers": [
                {
                    "name": "image",
                    "image": image,
                    "imagePullPolicy": settings.image_pull_policy,
                    "command": command,
                    "resources": PROBE_RESOURCES,
                    "securityContext": security,
                }
            ],
        },
    }


def _state(pod: Any | None, *, until_ended: bool = False) -> ImageCheck | None:
    """The answer the pod gives, or None while it cannot tell yet. until_ended: a
    container that runs is no answer yet (what it prints is not whole before it ends)."""
    if pod is None or pod.status is None:
        return None
    for status in pod.status.container_statuses or []:
        state = status.state
        if state is None:
            continue
        if state.terminated is not None or (state.running is not None and not until_ended):
            return ImageCheck("present")
        if state.waiting is not None:
            return classify(state.waiting.reason, state.waiting.message)
    return None


def decode_read_out(log: bytes) -> bytes | None:
    """The file out of the check pod's log (READ_OUT_SCRIPT), or None unless the log is
    base64 lines and then the end mark, nothing else."""
    try:
        lines = log.decode("ascii").split("\n")
    except UnicodeDecodeError:
        return None
    if lines[-1:] == [""]:
        lines.pop()
    if lines[-1:] != [READ_OUT_END]:
        return None
    try:
        return base64.b64decode("".join(lines[:-1]), validate=True)
    except (binascii.Error, ValueError):
        return None


def answer_file(server: str, settings: KubernetesSettings, image: str) -> Path:
    """Where a "present" answer for image is kept (one file per image)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    key = f"{server}\0{settings.namespace}\0{settings.image_pull_policy}\0{image}"
    name = hashlib.sha256(key.encode()).hexdigest()[:32]
    return Path(base) / "ssebench" / "image-check" / f"{name}.json"


def read_answer(path: Path, image: str, now: float) -> ImageCheck | None:
    """The kept answer if it is about image and younger than ANSWER_SECONDS, else None."""
    try:
        kept = json.loads(path.read_text())
        found_at = float(kept["found_at"])
        about = kept["image"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if about != image or not 0 <= now - found_at < ANSWER_SECONDS:
        return None
    return ImageCheck("present", f"found {int(now - found_at)} s ago")


def write_answer(path: Path, image: str, now: float) -> None:
    """Keep a "present" answer (written whole); a cache that cannot be written costs
    only a check later."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(json.dumps({"image": image, "found_at": now}))
        partial.replace(path)
    except OSError:
        return


def _server() -> str:
    return str(client.api().core.api_client.configuration.host)


def forget(settings: KubernetesSettings, image: str) -> None:
    """Drop the kept answer for image: a run's pod could not pull it after all."""
    try:
        answer_file(_server(), settings, image).unlink(missing_ok=True)
    except OSError:
        return


def check_image(
    settings: KubernetesSettings, image: str, read_out: str | None = None
) -> ImageCheck:
    """Ask a node whether it can get image, unless a node said so within ANSWER_SECONDS.
    read_out: a file of the image that the pod reads out as well; such a check always
    has its pod, since the file needs a pod anyway and this one is the quicker (it is
    read when the pod ends, where copy_from_image's pod waits to run, then execs).
    BackendError when the API refuses the pod."""
    remembered = answer_file(_server(), settings, image)
    kept = None if read_out is not None else read_answer(remembered, image, time.time())
    if kept is not None:
        return kept
    found = _check_with_a_pod(settings, image, read_out)
    if found.verdict == "present":
        write_answer(remembered, image, time.time())
    return found


def _check_with_a_pod(settings: KubernetesSettings, image: str, read_out: str | None) -> ImageCheck:
    api = client.api()
    namespace = settings.namespace
    check = secrets.token_hex(4)
    name = f"ssebench-probe-{check}-image"
    client.call(
        f"Cannot create the pod {name} that checks {image}",
        api.core.create_namespaced_pod,
        namespace,
        check_pod(image, name, check, settings, read_out),
    )
    try:
        deadline = time.monotonic() + CHECK_SECONDS
        time.sleep(FIRST_LOOK_SECONDS)
        while time.monotonic() < deadline:
            pod = client.call(
                f"Cannot read the pod {name}",
                api.core.read_namespaced_pod,
                name,
                namespace,
                missing_ok=True,
            )
            found = _state(pod, until_ended=read_out is not None)
            if found is not None:
                if found.verdict == "present" and read_out is not None:
                    return replace(found, read_out=_read_out(namespace, name))
                return found
            time.sleep(POLL_SECONDS)
        return ImageCheck("unknown", f"the node was still getting it after {CHECK_SECONDS:.0f} s")
    finally:
        client.delete_pod_now(namespace, name)


def _read_out(namespace: str, name: str) -> bytes | None:
    """The file the ended check pod printed; None when its log does not hold it whole
    within READ_OUT_LOG_BYTES. The log is only a shortcut: an API error here costs the
    copy its own pod, no more."""
    try:
        log = client.read_log(
            f"Cannot read the output of the pod {name}",
            namespace,
            name,
            "image",
            READ_OUT_LOG_BYTES,
        )
    except BackendError:
        return None
    return decode_read_out(log)


def unchecked_note(image: str, detail: str, out: TextIO | None = None) -> None:
    """The one line that says the image could not be checked, and that the run goes on."""
    (out or sys.stderr).write(
        f"ssebench: cannot check that the nodes have {image} ({detail}); going on\n"
    )
