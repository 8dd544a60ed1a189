"""Detached `kubectl port-forward`s for `ssebench runs endpoint` (spec, "Watching runs").

The URL that endpoint returns must outlive the short command that asked for it, so the
forward runs in a process of its own: a small supervisor (this module run with -m) that
starts kubectl, records itself in a file in the system's temporary directory, and ends
kubectl and the record when the pod stops running or when it gets SIGTERM (from
`ssebench runs remove`). Later calls for the same pod and port find the record and
reuse the forward.

A record is trusted only when this user owns it and its supervisor is alive and still
this module, so a file someone else put in /tmp cannot redirect a URL.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType

RECORD_PREFIX = "ssebench-portforward-"
MODULE = "ssebench.backends.kubernetes.portforward"
READY_SECONDS = 30.0
POLL_SECONDS = 2.0


@dataclass(frozen=True)
class Forward:
    namespace: str
    pod: str
    port: int
    local_port: int
    supervisor_pid: int


def _record_folder() -> Path:
    return Path(tempfile.gettempdir())


def record_path(namespace: str, pod: str, port: int) -> Path:
    key = f"{os.environ.get('KUBECONFIG', '')}\0{namespace}\0{pod}\0{port}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:20]
    return _record_folder() / f"{RECORD_PREFIX}{os.getuid()}-{digest}.json"


def _read_record(path: Path) -> Forward | None:
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if os.fstat(descriptor).st_uid != os.getuid():
            return None
        with os.fdopen(os.dup(descriptor), encoding="utf-8") as file:
            data = json.load(file)
        return Forward(**data)
    except (OSError, ValueError, TypeError):
        return None
    finally:
        os.close(descriptor)


def _is_supervisor(pid: int) -> bool:
    try:
        return MODULE.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _accepts(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1.0)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def find(namespace: str, pod: str, port: int) -> Forward | None:
    """The live forward to pod:port, if one was started before."""
    forward = _read_record(record_path(namespace, pod, port))
    if forward is None or forward.pod != pod or forward.port != port:
        return None
    if not _is_supervisor(forward.supervisor_pid) or not _accepts(forward.local_port):
        return None
    return forward


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start(namespace: str, pod: str, port: int) -> Forward:
    """Start a detached supervisor with its forward; return once the port answers.

    Raises RuntimeError when kubectl is missing or the forward does not come up.
    """
    if shutil.which("kubectl") is None:
        raise RuntimeError("runs endpoint needs kubectl on the PATH")
    local_port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", MODULE, namespace, pod, str(port), str(local_port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            message = (process.stderr.read() if process.stderr else b"").decode(errors="replace")
            raise RuntimeError(f"kubectl port-forward ended: {message.strip()[-300:]}")
        forward = find(namespace, pod, port)
        if forward is not None and forward.local_port == local_port:
            if process.stderr:
                process.stderr.close()
            return forward
        time.sleep(0.2)
    process.terminate()
    raise RuntimeError(f"kubectl port-forward to {pod}:{port} did not answer in time")


def end(namespace: str, pods: Iterable[str]) -> int:
    """End this user's forwards to any of pods; return how many."""
    wanted = set(pods)
    ended = 0
    for path in _record_folder().glob(f"{RECORD_PREFIX}{os.getuid()}-*.json"):
        forward = _read_record(path)
        if forward is None or forward.namespace != namespace or forward.pod not in wanted:
            continue
        if _is_supervisor(forward.supervisor_pid):
            with contextlib.suppress(OSError):
                os.kill(forward.supervisor_pid, signal.SIGTERM)
                ended += 1
        with contextlib.suppress(OSError):
            path.unlink()
    return ended


def supervise(forward: Forward, pod_running: Callable[[], bool]) -> int:
    """Run kubectl port-forward until the pod stops running or SIGTERM; remove the
    record on the way out."""
    path = record_path(forward.namespace, forward.pod, forward.port)
    kubectl = subprocess.Popen(
        [
            "kubectl",
            "port-forward",
            "--namespace",
            forward.namespace,
            "--address",
            "127.0.0.1",
            f"pod/{forward.pod}",
            f"{forward.local_port}:{forward.port}",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    stopping = False

    def on_term(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        deadline = time.monotonic() + READY_SECONDS
        while not _accepts(forward.local_port):
            if kubectl.poll() is not None or time.monotonic() > deadline or stopping:
                return 1
            time.sleep(0.1)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump(asdict(forward), file)
        os.replace(temporary, path)
        while not stopping and kubectl.poll() is None:
            time.sleep(POLL_SECONDS)
            with contextlib.suppress(Exception):  # a flaky API call is not the pod's end
                if not pod_running():
                    break
        return 0
    finally:
        if kubectl.poll() is None:
            kubectl.terminate()
            try:
                kubectl.wait(5)
            except subprocess.TimeoutExpired:
                kubectl.kill()
        if (record := _read_record(path)) is not None and record.supervisor_pid == os.getpid():
            with contextlib.suppress(OSError):
                path.unlink()


def main(argv: list[str]) -> int:
    namespace, pod, port, local_port = argv
    # Here: the supervisor process needs the API client only once it runs.
    from ssebench.backends.kubernetes.pods import pod_is_running

    forward = Forward(
        namespace=namespace,
        pod=pod,
        port=int(port),
        local_port=int(local_port),
        supervisor_pid=os.getpid(),
    )
    return supervise(forward, lambda: pod_is_running(namespace, pod))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
