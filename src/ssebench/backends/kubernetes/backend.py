"""The Kubernetes backend: one Job per run (spec: kubernetes.txt).

A run is three objects named ssebench-<run id>: a Secret with its environment, a
NetworkPolicy, and a Job whose pod runs the task container and a collector that keeps
the pod alive until the results are read out through the API (tar over pods/exec).

The official client is imported here only, and only when a method needs the API, so
`ssebench --help` and Docker runs never load it. The backend holds no run state between
calls: a RunHandle names the Job and its namespace, and runs are found again by label.
Within one process it keeps the API client and the threads that copy a run's output to
stdout, so wait can let them finish.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import os
import secrets
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ssebench.agents import REFERENCE as REFERENCE_AGENT
from ssebench.backends.kubernetes import (
    client,
    execstream,
    image_check,
    manifests,
    policy_check,
    portforward,
)
from ssebench.backends.kubernetes.config import KubernetesSettings, is_label_key, is_label_value
from ssebench.backends.kubernetes.pods import (
    PULL_ERRORS,
    container_status,
    task_state,
)
from ssebench.errors import BackendError, ImageUnavailableError, ResultsGoneError, UserError
from ssebench.extensions import (
    ARCHIVE_TARGET,
    IMAGE_REFERENCE_PATCH,
    REFERENCE_PATCH_TARGET,
    RESULTS_TARGET,
    Backend,
    ImageRequest,
    Images,
    ProxyEndpoint,
    RunHandle,
    RunInfo,
    RunSpec,
    prebuilt_images,
)
from ssebench.host.output import write_or_drop
from ssebench.labels import DEADLINE, KEEP, RESULTS, RUN_ID, RUNNER_HOST, RUNNER_PID, matches
from ssebench.results import safe_tar as safe_tar

__all__ = ["KubernetesBackend"]

# An exec that sends nothing for this long is taken for a broken connection.
EXEC_IDLE_SECONDS = 300
POLL_SECONDS = 1.0
# While a run's pod stays as it was, wait looks at it less often, up to this: a run of
# an hour costs about 360 pod lists instead of 3,600. The process that started the run
# sees its end at once all the same, by the end of the task container's log, which it
# follows; another process sees it within this long. (A watch would cost less still,
# but the Role grants no watch on pods.)
POLL_MAX_SECONDS = 10.0
# A pod that is being started is looked at every 2 s, the first time 2 s after it was
# asked for: it is not scheduled and its containers started sooner, and a cluster slow
# to start containers costs half the lists of a look every second; the start is seen
# within 2 s.
START_POLL_MAX_SECONDS = 2.0
# Once the task container's log has ended (it exited), its pod's status says so at the
# kubelet's next report, within about a second: wait looks again after this, doubling
# while the pod stays as it was, instead of after POLL_SECONDS (half a second off the
# time from the grade to the runner's return, for one or two reads more).
EXITED_POLL_SECONDS = 0.25
# A run that never starts (spec, "Stopping and cleaning up").
PULL_ERROR_SECONDS = 90.0
NO_CONTAINER_SECONDS = 600.0
# The grace ssebench run gives a run it stops (spec, "Stopping and cleaning up").
STOP_GRACE_SECONDS = 20.0
# What wait reports for a task container deleted with its pod: 128 + SIGKILL.
KILLED_STATUS = 137
COPY_POD_SECONDS = 600
LOG_DRAIN_SECONDS = 10.0
KUBECTL = "kubectl"
# The handle's detail that names the pod the run started in.
POD_DETAIL = "pod"

_log_threads: dict[str, threading.Thread] = {}
_log_threads_lock = threading.Lock()
# Runs this process deleted because they outlived a stop's grace ("namespace/job"), so
# a wait that starts after the pod is gone still reports them as killed.
_killed: set[str] = set()
# The checks of this process whose node could get the image ("namespace/pull
# policy/image"): the runs of an evaluation check each image once, and copy_from_image
# takes the reference patch that a check read out (its read_out) instead of making a pod.
_present_images: dict[str, image_check.ImageCheck] = {}
# The pod as wait last read it, its task container exited ("namespace/pod"): the
# read-out that follows takes it from here instead of reading it again.
_exited_pods: dict[str, Any] = {}


# -- reading pods ----------------------------------------------------------------------


def _pending_reason(pod: Any | None, container: str) -> str:
    """Why the pod has no running container yet, in the pod's own words."""
    if pod is None:
        return "the Job has no pod"
    status = container_status(pod, container)
    waiting = status.state.waiting if status is not None and status.state is not None else None
    if waiting is not None and waiting.reason:
        return f"{waiting.reason}: {waiting.message or ''}".strip(": ")
    for condition in (pod.status and pod.status.conditions) or []:
        if condition.status == "False" and condition.reason:
            return f"{condition.reason}: {condition.message or ''}".strip(": ")
    if pod.status and pod.status.reason:
        return f"{pod.status.reason}: {pod.status.message or ''}".strip(": ")
    return f"the pod is {(pod.status and pod.status.phase) or 'pending'}"


def _oldest(pods: list[Any]) -> Any | None:
    return min(pods, key=lambda pod: pod.metadata.creation_timestamp or 0, default=None)


def _newest(pods: list[Any]) -> Any | None:
    alive = [pod for pod in pods if pod.metadata.deletion_timestamp is None]
    candidates = alive or pods
    if not candidates:
        return None
    return max(candidates, key=lambda pod: pod.metadata.creation_timestamp or 0)


@dataclass
class _Pace:
    """The pause before a wait's next look: first (POLL_SECONDS) after the pod changed
    (or first), then twice the last one while it stays the same, up to POLL_MAX_SECONDS."""

    seen: object = field(default_factory=object)  # equal to no state
    first: float = POLL_SECONDS
    pause: float = POLL_SECONDS

    def after(self, state: object) -> float:
        if state != self.seen:
            self.seen, self.pause = state, self.first
        else:
            self.pause = min(self.pause * 2, POLL_MAX_SECONDS)
        return self.pause


def _names_its_pod(handle: RunHandle) -> bool:
    """True for start's handle, which names the pod start saw: that pod gone is the run
    killed. A run's pod has no grace, so a deleted one is gone at once, while its Job
    lives on (with a replacement on clusters before 1.26, which is not the run)."""
    return POD_DETAIL in handle.details


def _iso(timestamp: Any) -> str | None:
    if timestamp is None:
        return None
    return str(timestamp.strftime("%Y-%m-%dT%H:%M:%SZ"))


# -- the output of a run ---------------------------------------------------------------


def _decoded_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    pending = ""
    for chunk in chunks:
        pending += decoder.decode(chunk)
        *lines, pending = pending.split("\n")
        yield from (line.rstrip("\r") for line in lines)
    pending += decoder.decode(b"", final=True)
    if pending:
        yield pending.rstrip("\r")


def _copy_output(namespace: str, pod: str) -> None:
    """Copy the task container's output to stdout as it is written, until it exits."""
    api = client.api()
    try:
        response = api.core.read_namespaced_pod_log(
            pod,
            namespace,
            container=manifests.TASK_CONTAINER,
            follow=True,
            _preload_content=False,
        )
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        for chunk in response.stream(4096):
            # A reader gone (`| head`) silences stdout; the stream is still read to its end.
            write_or_drop(sys.stdout, decoder.decode(chunk))
    except Exception as error:  # the run goes on; only its echo on this terminal ends
        write_or_drop(
            sys.stderr, f"ssebench: the output of {pod} stopped: {client.reason(error)}\n"
        )


def _start_output_thread(namespace: str, pod: str) -> None:
    thread = threading.Thread(target=_copy_output, args=(namespace, pod), daemon=True)
    with _log_threads_lock:
        _log_threads[f"{namespace}/{pod}"] = thread
    thread.start()


def _followed_output(namespace: str, pod: str) -> threading.Thread | None:
    """The thread that follows the pod's output, or did until it ended; None when this
    process does not follow it (or drained it)."""
    with _log_threads_lock:
        return _log_threads.get(f"{namespace}/{pod}")


def _output_thread(namespace: str, pod: str) -> threading.Thread | None:
    """The thread that follows the pod's output, while it does."""
    thread = _followed_output(namespace, pod)
    return thread if thread is not None and thread.is_alive() else None


def _rest(namespace: str, pod: Any | None, pace: _Pace, deadline: float | None) -> None:
    """Pause before the next look at the run's pod: as pace says, to deadline at most,
    and no longer than the output thread follows the task container's log (which ends
    when the container exits)."""
    followed = _followed_output(namespace, pod.metadata.name) if pod is not None else None
    output = followed if followed is not None and followed.is_alive() else None
    if followed is not None and output is None:
        pace.first = EXITED_POLL_SECONDS  # its log ended: the container exited
    pause = pace.after(
        (pod.metadata.resource_version if pod is not None else None, output is not None)
    )
    if deadline is not None:
        pause = max(0.0, min(pause, deadline - time.monotonic()))
    if output is not None:
        output.join(pause)
    else:
        time.sleep(pause)


def _drain_output(namespace: str, pod: str) -> None:
    with _log_threads_lock:
        thread = _log_threads.pop(f"{namespace}/{pod}", None)
    if thread is not None:
        thread.join(LOG_DRAIN_SECONDS)


# -- the backend -----------------------------------------------------------------------


class KubernetesBackend(Backend):
    """Runs each run as a Job in SSEBENCH_K8S_NAMESPACE, from prebuilt images only."""

    name = "kubernetes"
    builds_images = False
    supports_exec = True
    stop_grace = STOP_GRACE_SECONDS

    def __init__(self, settings: KubernetesSettings | None = None) -> None:
        self._settings = settings

    @property
    def settings(self) -> KubernetesSettings:
        if self._settings is None:
            self._settings = KubernetesSettings.from_environment()
        return self._settings

    @property
    def namespace(self) -> str:
        return self.settings.namespace

    def _namespace_of(self, handle: RunHandle) -> str:
        return handle.details.get("namespace") or self.namespace

    # -- images ----------------------------------------------------------------------

    def prepare_images(self, request: ImageRequest) -> Images:
        """The published names, once a node has shown it can get the run's image (a
        short pod of it: image_check). ImageUnavailableError, before anything of the
        run exists, when it cannot; one line on stderr when the node cannot tell."""
        if request.mode == "sidecar":
            raise UserError(manifests.SIDECAR_REFUSED)
        if not request.prebuilt:
            raise UserError("The kubernetes backend cannot build images; pass --prebuilt")
        published = prebuilt_images(request)
        key = self._image_key(published.run)
        if key in _present_images:
            return published
        # A reference run copies the patch out of the image next: the check reads it.
        read_out = IMAGE_REFERENCE_PATCH if request.agent == REFERENCE_AGENT else None
        try:
            found = image_check.check_image(self.settings, published.run, read_out)
        except BackendError as error:
            image_check.unchecked_note(published.run, str(error))
            return published
        if found.verdict == "missing":
            raise ImageUnavailableError(
                f"The nodes cannot get the image {published.run} ({found.detail}): publish "
                f"it with `ssebench images publish --registry {request.registry} --mode "
                f"sandbox --tasks {request.task_id} --agents {request.agent}` (--load docker "
                "or --load kind for a local cluster), or set SSEBENCH_REGISTRY to the "
                "registry that has it",
                image=published.run,
            )
        if found.verdict == "unknown":
            image_check.unchecked_note(published.run, found.detail)
        else:
            _present_images[key] = found
        return published

    def _image_key(self, image: str) -> str:
        return f"{self.namespace}/{self.settings.image_pull_policy}/{image}"

    def _forget_image(self, image: str) -> None:
        """The nodes could not pull image after all: check it again next time."""
        _present_images.pop(self._image_key(image), None)
        image_check.forget(self.settings, image)

    def copy_from_image(
        self,
        image: str,
        path: str,
        dest: Path,
        platform: str | None,
        *,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        checked = _present_images.get(self._image_key(image))
        if path == IMAGE_REFERENCE_PATCH and checked and checked.read_out is not None:
            dest.write_bytes(checked.read_out)  # read out by the image's check (prepare_images)
            return
        api = client.api()
        namespace = self.namespace
        name = f"ssebench-copy-{secrets.token_hex(5)}"
        body = manifests.copy_pod(image, name, self.settings, seconds=COPY_POD_SECONDS)
        try:
            client.call(
                f"Cannot create the pod {name}", api.core.create_namespaced_pod, namespace, body
            )
            try:
                self._wait_until_started(
                    lambda: client.call(
                        f"Cannot read the pod {name}",
                        api.core.read_namespaced_pod,
                        name,
                        namespace,
                        missing_ok=True,
                    ),
                    "copy",
                    f"the pod {name} that copies {path} out of {image}",
                )
                data = b"".join(self._exec_stream(namespace, name, "copy", ["cat", "--", path]))
            finally:
                client.delete_pod_now(namespace, name)
        except BackendError as error:
            raise RuntimeError(f"Cannot copy {path} out of {image}: {error}") from None
        dest.write_bytes(data)

    # -- a run -----------------------------------------------------------------------

    def start(self, spec: RunSpec) -> RunHandle:
        if spec.mode == "sidecar" or spec.sidecar is not None:
            raise UserError(manifests.SIDECAR_REFUSED)
        manifests.check_run_id(spec.run_id)
        api = client.api()
        settings = self.settings
        namespace = settings.namespace
        name = manifests.object_name(spec.run_id)
        reference_patch = self._reference_patch(spec)
        object_labels, annotations = manifests.split_labels(
            {
                **spec.labels,
                RUN_ID: spec.run_id,
                KEEP: str(spec.keep).lower(),
                DEADLINE: str(int(time.time()) + manifests.active_deadline(spec, settings)),
                RUNNER_HOST: socket.gethostname(),
                RUNNER_PID: str(os.getpid()),
            }
        )
        hidden = [value for value in spec.env.values() if value]
        secret = manifests.secret(spec, name, object_labels, annotations, reference_patch)
        policy = manifests.network_policy(
            spec, name, object_labels, annotations, settings.proxy_settings()
        )
        job = manifests.job(
            spec,
            name,
            object_labels,
            annotations,
            settings,
            has_reference_patch=reference_patch is not None,
        )
        job_made = False
        try:
            # The Job first: its pod cannot start its task container without the Secret
            # (its environment), so nothing of the run runs yet. Then the policy, then
            # the Secret, both owned by the Job from their first moment: a runner killed
            # at any point leaves a Job that `runs list` and prune see, and whose
            # removal takes the rest with it; never a Secret that nothing owns. The
            # policy exists before the Secret, so the task never runs unrestricted.
            made = client.call(
                f"Cannot create the Job {name}",
                api.batch.create_namespaced_job,
                namespace,
                job,
                run_id=spec.run_id,
            )
            job_made = True
            owner = manifests.owner_references(name, made.metadata.uid)
            client.call(
                f"Cannot create the NetworkPolicy {name}",
                api.networking.create_namespaced_network_policy,
                namespace,
                manifests.owned(policy, owner),
                run_id=spec.run_id,
            )
            client.call(
                f"Cannot create the Secret {name}",
                api.core.create_namespaced_secret,
                namespace,
                manifests.owned(secret, owner),
                run_id=spec.run_id,
                hidden=hidden,
            )
            handle = RunHandle(
                backend=self.name,
                run_id=spec.run_id,
                name=name,
                details={"namespace": namespace, "keep": str(spec.keep).lower()},
            )
            pod = self._wait_until_started(
                self._first_pod_of(handle),
                manifests.TASK_CONTAINER,
                f"the run {spec.run_id}",
                image=spec.image,
            )
        # A failure or a Ctrl-C removes what was made. The runner's second signal
        # (RunAbandoned, a BaseException of its own) does not: it asks nothing more of
        # the cluster (spec), and the Job is left to its deadline and time to live, as
        # when that signal comes after start.
        except (Exception, KeyboardInterrupt):
            with contextlib.suppress(Exception):
                if job_made:  # the Job owns whatever else was made
                    self._remove(namespace, name, spec.run_id, pod="")
            raise
        _start_output_thread(namespace, pod.metadata.name)
        return RunHandle(
            backend=self.name,
            run_id=spec.run_id,
            name=name,
            details={**handle.details, POD_DETAIL: str(pod.metadata.name)},
        )

    def _reference_patch(self, spec: RunSpec) -> bytes | None:
        patch = None
        for artifact in spec.artifacts:
            if artifact.target != REFERENCE_PATCH_TARGET:
                raise UserError(
                    f"The kubernetes backend cannot ship the file for {artifact.target}; it "
                    f"ships only {REFERENCE_PATCH_TARGET}"
                )
            patch = artifact.read_content()
        return patch

    def _wait_until_started(
        self,
        find_pod: Callable[[], Any | None],
        container: str,
        what: str,
        image: str | None = None,
    ) -> Any:
        """The pod once container runs or has run; BackendError with the pod's reason
        after PULL_ERROR_SECONDS of pull errors or NO_CONTAINER_SECONDS without it.
        image: a run's, whose answer of the image check is forgotten on pull errors."""
        started = time.monotonic()
        pulling_since: float | None = None
        seen = False
        while True:
            time.sleep(START_POLL_MAX_SECONDS)
            pod = find_pod()
            now = time.monotonic()
            status = container_status(pod, container) if pod is not None else None
            state = status.state if status is not None else None
            if state is not None and (state.running is not None or state.terminated is not None):
                return pod
            if (seen and pod is None) or (pod is not None and pod.metadata.deletion_timestamp):
                raise BackendError(f"{what} was deleted before it started", backend=self.name)
            seen = seen or pod is not None
            if pod is not None and pod.status and pod.status.phase in ("Failed", "Succeeded"):
                raise BackendError(
                    f"{what} ended before it started: {_pending_reason(pod, container)}",
                    backend=self.name,
                )
            waiting = state.waiting if state is not None else None
            if waiting is not None and waiting.reason in PULL_ERRORS:
                pulling_since = pulling_since or now
                if now - pulling_since >= PULL_ERROR_SECONDS:
                    if image is not None:
                        self._forget_image(image)
                    raise BackendError(
                        f"{what} cannot pull its image: {_pending_reason(pod, container)}",
                        backend=self.name,
                    )
            else:
                pulling_since = None
            if now - started >= NO_CONTAINER_SECONDS:
                raise BackendError(
                    f"{what} did not start within {NO_CONTAINER_SECONDS:.0f} s: "
                    f"{_pending_reason(pod, container)}",
                    backend=self.name,
                )

    def _pods(self, namespace: str, selector: str) -> list[Any]:
        found = client.call(
            "Cannot list pods",
            client.api().core.list_namespaced_pod,
            namespace,
            label_selector=selector,
        )
        return list(found.items)

    def _first_pod_of(self, handle: RunHandle) -> Callable[[], Any | None]:
        """What start waits on: the Job's oldest pod, then always that pod, by name.
        The run is its first pod: one that the Job controller makes after it is deleted
        (clusters before 1.26 do) runs the task again and is not the run. Only a first
        pod deleted and gone between two looks of start (2 s) goes unseen; its
        replacement is then the run."""
        followed = handle

        def first_pod() -> Any | None:
            nonlocal followed
            if followed is not handle:
                return self._run_pod(followed)
            pod = self._pod(handle, pick=_oldest)
            if pod is not None:
                details = {**handle.details, POD_DETAIL: str(pod.metadata.name)}
                followed = replace(handle, details=details)
            return pod

        return first_pod

    def _pod(
        self, handle: RunHandle, pick: Callable[[list[Any]], Any | None] = _newest
    ) -> Any | None:
        """The run's newest pod (or as pick chooses), or None."""
        namespace = self._namespace_of(handle)
        if not is_label_value(handle.run_id):
            return None
        pods = self._pods(
            namespace,
            f"{manifests.MANAGED_BY}={manifests.MANAGED_BY_VALUE},{RUN_ID}={handle.run_id}",
        )
        return pick(
            [pod for pod in pods if (pod.metadata.labels or {}).get("job-name") == handle.name]
        )

    def _run_pod(self, handle: RunHandle) -> Any | None:
        """The pod the run started in (one GET), or, for a run found again by
        list_runs, its newest pod; None once it is gone."""
        pod = handle.details.get(POD_DETAIL)
        if pod is None:
            return self._pod(handle)
        return client.call(
            f"Cannot read the pod {pod}",
            client.api().core.read_namespaced_pod,
            pod,
            self._namespace_of(handle),
            missing_ok=True,
            run_id=handle.run_id,
        )

    def _job(self, handle: RunHandle) -> Any | None:
        return client.call(
            f"Cannot read the Job {handle.name}",
            client.api().batch.read_namespaced_job,
            handle.name,
            self._namespace_of(handle),
            missing_ok=True,
            run_id=handle.run_id,
        )

    def wait(self, handle: RunHandle, timeout: float | None) -> int:
        namespace = self._namespace_of(handle)
        deadline = None if timeout is None else time.monotonic() + timeout
        seen = _names_its_pod(handle)
        pace = _Pace()
        output = _output_thread(namespace, handle.details.get(POD_DETAIL, ""))
        if output is not None:
            # This process follows the task container's output, which ends when it
            # exits (or its pod goes): the first look waits for that, up to
            # POLL_MAX_SECONDS, so a short run is read once, exited.
            limit = POLL_MAX_SECONDS if deadline is None else deadline - time.monotonic()
            output.join(max(0.0, min(POLL_MAX_SECONDS, limit)))
        while True:
            pod = self._run_pod(handle)
            state, exit_code = task_state(pod)
            if pod is not None and state == "exited" and exit_code is not None:
                _drain_output(namespace, pod.metadata.name)
                _exited_pods[f"{namespace}/{pod.metadata.name}"] = pod
                return exit_code
            deleting = pod is not None and pod.metadata.deletion_timestamp is not None
            ended = pod is not None and pod.status and pod.status.phase in ("Failed", "Succeeded")
            seen = seen or pod is not None or f"{namespace}/{handle.name}" in _killed
            if seen and (pod is None or deleting):
                # Its pod deleted while it ran (a stop past its grace, runs remove,
                # kubectl delete, the Job's deadline): killed, as docker rm --force
                # ends a container. Its results went with the pod.
                if pod is not None:
                    _drain_output(namespace, pod.metadata.name)
                return KILLED_STATUS
            if pod is None or deleting or ended:
                job = self._job(handle)
                if job is None or job.metadata.deletion_timestamp is not None:
                    raise BackendError(
                        f"The run {handle.run_id} has no Job: it was removed",
                        backend=self.name,
                        run_id=handle.run_id,
                    )
                for condition in (job.status and job.status.conditions) or []:
                    if condition.type == "Failed" and condition.status == "True":
                        raise BackendError(
                            f"The Job of {handle.run_id} failed before its task container "
                            f"ended: {condition.reason}: {condition.message or ''}".strip(": "),
                            backend=self.name,
                            run_id=handle.run_id,
                        )
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"The run {handle.run_id} did not end within {timeout} s")
            _rest(namespace, pod, pace, deadline)

    def logs(self, handle: RunHandle, follow: bool = False) -> Iterator[str]:
        pod = self._pod(handle)
        if pod is None:
            raise BackendError(
                f"The run {handle.run_id} has no pod", backend=self.name, run_id=handle.run_id
            )
        response = client.call(
            f"Cannot read the output of {pod.metadata.name}",
            client.api().core.read_namespaced_pod_log,
            pod.metadata.name,
            self._namespace_of(handle),
            container=manifests.TASK_CONTAINER,
            follow=follow,
            _preload_content=False,
            run_id=handle.run_id,
            request_timeout=None if follow else client.REQUEST_TIMEOUT,
        )
        try:
            yield from _decoded_lines(response.stream(4096))
        finally:
            response.release_conn()

    def _exec_stream(
        self, namespace: str, pod: str, container: str, command: Sequence[str]
    ) -> Iterator[bytes]:
        """The stdout of command in the container, as it comes; BackendError when it
        exits non-zero (with the end of its stderr)."""
        api = client.api()
        what = f"Cannot run {command[0]} in {pod}/{container}"
        try:
            response = api.stream(
                api.private_core().connect_get_namespaced_pod_exec,
                pod,
                namespace,
                container=container,
                command=list(command),
                stdin=False,
                stdout=True,
                stderr=True,
                tty=False,
                binary=True,
                _preload_content=False,
            )
        except Exception as error:
            raise BackendError(f"{what}: {client.reason(error)}", backend=self.name) from None
        output = execstream.ExecOutput()
        try:
            yield from output.stdout(response.sock, EXEC_IDLE_SECONDS)
        except execstream.ExecIdleError as error:
            raise BackendError(f"{what}: {error}", backend=self.name) from None
        except Exception as error:  # the connection broke: websocket or TLS errors
            raise BackendError(f"{what}: {client.reason(error)}", backend=self.name) from None
        finally:
            response.close()
        status = _exec_status(output.status)
        if status != 0:
            detail = bytes(output.stderr_tail).decode(errors="replace").strip().splitlines()
            raise BackendError(
                f"{what}: exit status {status}" + (f": {detail[-1][:300]}" if detail else ""),
                backend=self.name,
            )

    def _signal(self, namespace: str, pod: str, container: str) -> None:
        """SIGTERM to the container's PID 1, as docker stop sends it."""
        for _ in self._exec_stream(namespace, pod, container, ["sh", "-c", "kill -TERM 1"]):
            pass

    def collect_results(self, handle: RunHandle, dest: Path) -> None:
        """Read the results and the archive out of the collector (two execs). The pod
        is the one wait saw exit, else it is read; a read-out that fails on that pod
        looks again, and reports the results gone when the pod or collector is. The
        collector is stopped only for a kept run: the deletion of any other ends it."""
        namespace = self._namespace_of(handle)
        name = handle.details.get(POD_DETAIL)
        seen = _exited_pods.pop(f"{namespace}/{name}", None) if name else None
        pod_name = self._check_collector(handle, seen or self._run_pod(handle))
        try:
            self._read_out(handle, namespace, pod_name, dest)
        except BackendError:
            if seen is not None:  # the pod may have gone since wait saw it
                self._check_collector(handle, self._run_pod(handle))
            raise
        finally:
            if handle.details.get("keep") == "true":
                with contextlib.suppress(BackendError):
                    self._signal(namespace, pod_name, manifests.COLLECTOR_CONTAINER)

    def _check_collector(self, handle: RunHandle, pod: Any | None) -> str:
        """The pod's name; ResultsGoneError unless it is there and its collector runs."""
        collector = container_status(pod, manifests.COLLECTOR_CONTAINER) if pod else None
        if (
            pod is None
            or pod.metadata.deletion_timestamp is not None
            or collector is None
            or collector.state.running is None
        ):
            raise ResultsGoneError(
                f"The results of {handle.run_id} are gone: its pod or collector no longer runs",
                backend=self.name,
                run_id=handle.run_id,
            )
        return str(pod.metadata.name)

    def _read_out(self, handle: RunHandle, namespace: str, pod_name: str, dest: Path) -> None:
        archive_dir = dest / "archive"
        limits = safe_tar.Limits.from_environment()
        # Results first, into dest; the agent's archive only ever into archive/, so
        # the grade is always the one root wrote.
        for source, target in ((RESULTS_TARGET, dest), (ARCHIVE_TARGET, archive_dir)):
            if target.is_symlink():
                raise BackendError(f"{target} is a symbolic link", backend=self.name)
            target.mkdir(exist_ok=True)
            command = ["tar", "-c", "-f", "-", "-C", source, "."]
            try:
                report = safe_tar.extract(
                    self._exec_stream(namespace, pod_name, manifests.COLLECTOR_CONTAINER, command),
                    target,
                    limits,
                )
            except safe_tar.UnsafeArchiveError as error:
                raise BackendError(
                    f"The {source} of {handle.run_id} was not unpacked: {error}",
                    backend=self.name,
                    run_id=handle.run_id,
                ) from None
            if report.skipped:
                sys.stderr.write(
                    f"ssebench: skipped {report.skipped_total} entries of {source} that "
                    f"are not files or directories, e.g. {report.skipped[0]}\n"
                )

    def stop(self, handle: RunHandle, grace: float) -> None:
        """SIGTERM to the task container, then up to grace seconds for it to exit; the
        run stays in place. A container still running after the grace is deleted with
        its Job: a pod deleted alone is replaced by the Job controller on clusters
        before 1.26, and a container cannot be killed otherwise."""
        namespace = self._namespace_of(handle)
        deadline = time.monotonic() + max(grace, 0.0)
        signalled = False
        pace = _Pace()
        while True:
            pod = self._run_pod(handle)
            state, _ = task_state(pod)
            if state == "exited" or (pod is not None and pod.metadata.deletion_timestamp):
                return
            if pod is None and (_names_its_pod(handle) or self._job(handle) is None):
                return  # the pod it started in is gone, or nothing of the run is left
            if pod is not None and state == "running" and not signalled:
                with contextlib.suppress(BackendError):  # it may have just exited
                    self._signal(namespace, pod.metadata.name, manifests.TASK_CONTAINER)
                    signalled = True
            if time.monotonic() >= deadline:
                _killed.add(f"{namespace}/{handle.name}")
                self._remove(namespace, handle.name, handle.run_id, handle.details.get(POD_DETAIL))
                return
            _rest(namespace, pod, pace, deadline)

    def cleanup(self, handle: RunHandle) -> None:
        if handle.details.get("keep") == "true":
            return
        self._remove(
            self._namespace_of(handle), handle.name, handle.run_id, handle.details.get(POD_DETAIL)
        )

    def _remove(self, namespace: str, name: str, run_id: str, pod: str | None = None) -> None:
        """Delete the run's Job, with propagationPolicy Background: one request. The
        Job goes at once (so list_runs no longer has it), and the cluster's garbage
        collector removes its pod, and the Secret and NetworkPolicy it owns from their
        first moment, after it; nothing here waits on that. The objects keep their
        labels until they are gone, and a Job of a runner that died before this is the
        TTL's. pod: the run's pod, whose port-forwards end; without it (a run found
        again by list_runs), its pods are listed once for that."""
        if pod is not None:
            pods = [pod] if pod else []
        elif is_label_value(run_id):
            selector = f"{manifests.MANAGED_BY}={manifests.MANAGED_BY_VALUE},{RUN_ID}={run_id}"
            pods = [
                str(found.metadata.name)
                for found in self._pods(namespace, selector)
                if (found.metadata.labels or {}).get("job-name") == name
            ]
        else:
            pods = []
        portforward.end(namespace, pods)
        client.call(
            f"Cannot delete the Job {name}",
            client.api().batch.delete_namespaced_job,
            name,
            namespace,
            propagation_policy="Background",
            missing_ok=True,
            run_id=run_id,
        )

    # -- the cluster -------------------------------------------------------------------

    def egress_enforced(self, image: str) -> bool | None:
        return policy_check.cluster_enforces(self.settings, image).enforced

    def remove_abandoned(self, now: float, host: str) -> list[str]:
        """Pods of a NetworkPolicy probe whose process was killed during it (their
        policies go with them)."""
        removed = policy_check.remove_leftovers(self.settings, now, host)
        return [f"probe pod {name}" for name in removed]

    # -- finding runs ----------------------------------------------------------------

    def list_runs(self, labels: Mapping[str, str]) -> list[RunInfo]:
        api = client.api()
        namespace = self.namespace
        # What can be a label selector goes to the server; values that only an
        # annotation can hold (the run directory) are compared here.
        selector = [f"{manifests.MANAGED_BY}={manifests.MANAGED_BY_VALUE}"] + [
            f"{key}={value}"
            for key, value in labels.items()
            if key != RESULTS and is_label_key(key) and is_label_value(value)
        ]
        jobs = client.call(
            "Cannot list Jobs",
            api.batch.list_namespaced_job,
            namespace,
            label_selector=",".join(selector),
        ).items
        if not jobs:
            return []
        pods_by_job: dict[str, list[Any]] = {}
        for pod in self._pods(namespace, ",".join(selector)):
            for owner in pod.metadata.owner_references or []:
                pods_by_job.setdefault(owner.uid, []).append(pod)
        runs = []
        for job in jobs:
            if job.metadata.deletion_timestamp is not None:
                continue
            run_labels = {
                str(key): str(value)
                for key, value in (job.metadata.annotations or {}).items()
                if str(key).startswith("ssebench.")
            }
            run_labels.update({str(k): str(v) for k, v in (job.metadata.labels or {}).items()})
            if not matches(run_labels, dict(labels)):
                continue
            runs.append(self._run_info(job, run_labels, pods_by_job.get(job.metadata.uid, [])))
        return runs

    def _run_info(self, job: Any, run_labels: dict[str, str], pods: list[Any]) -> RunInfo:
        name = str(job.metadata.name)
        run_id = run_labels.get(RUN_ID, name.removeprefix("ssebench-"))
        state, exit_code = task_state(_newest(pods))
        if not pods:
            finished = any(
                condition.type in ("Complete", "Failed") and condition.status == "True"
                for condition in (job.status and job.status.conditions) or []
            )
            state = "exited" if finished else "created"
        containers = job.spec.template.spec.containers or []
        image = next((c.image for c in containers if c.name == manifests.TASK_CONTAINER), "")
        return RunInfo(
            run_id=run_id,
            name=name,
            state=state,
            exit_code=exit_code,
            image=str(image),
            labels=run_labels,
            created_at=_iso(job.metadata.creation_timestamp),
            # No "keep" here: cleanup of a run found again removes it (runs remove).
            handle=RunHandle(
                backend=self.name,
                run_id=run_id,
                name=name,
                details={"namespace": str(job.metadata.namespace)},
            ),
        )

    # -- reaching a run --------------------------------------------------------------

    def _running_pod(self, handle: RunHandle) -> str:
        pod = self._pod(handle)
        if pod is None or task_state(pod)[0] != "running":
            raise BackendError(
                f"The run {handle.run_id} is not running", backend=self.name, run_id=handle.run_id
            )
        return str(pod.metadata.name)

    def endpoint(self, handle: RunHandle, port: int) -> str:
        namespace = self._namespace_of(handle)
        pod = self._running_pod(handle)
        forward = portforward.find(namespace, pod, port)
        if forward is None:
            try:
                forward = portforward.start(namespace, pod, port)
            except RuntimeError as error:
                raise BackendError(str(error), backend=self.name, run_id=handle.run_id) from None
        return f"http://127.0.0.1:{forward.local_port}"

    def exec_argv(
        self,
        handle: RunHandle,
        command: Sequence[str],
        *,
        user: str | None = None,
        workdir: str | None = None,
        tty: bool = False,
        stdin: bool = False,
        env_names: Sequence[str] = (),
    ) -> list[str]:
        if env_names:
            raise BackendError(
                "The kubernetes backend cannot pass --env variables: kubectl exec would show "
                "their values in the process list",
                backend=self.name,
                run_id=handle.run_id,
            )
        pod = self._running_pod(handle)
        argv = [KUBECTL, "exec", "--namespace", self._namespace_of(handle)]
        if stdin:
            argv.append("--stdin")
        if tty:
            argv.append("--tty")
        argv += [pod, "--container", manifests.TASK_CONTAINER, "--"]
        return argv + wrap_command(command, user=user, workdir=workdir)

    def proxy(self) -> ProxyEndpoint | None:
        proxy = self.settings.proxy_settings()
        return ProxyEndpoint(host_url=proxy.host_url, service_url=proxy.url)


# Runs command (its arguments as given, never parsed) in workdir: $0 is the directory.
_CHDIR_SCRIPT = 'cd "$0" && exec "$@"'


def wrap_command(command: Sequence[str], *, user: str | None, workdir: str | None) -> list[str]:
    """command as the container runs it: --user by su, --workdir by cd."""
    if user:
        # "--" ends su's options: the user, then the shell's $0 and arguments.
        return ["su", "-s", "/bin/sh", "-c", _CHDIR_SCRIPT, "--", user, workdir or ".", *command]
    if workdir:
        return ["sh", "-c", _CHDIR_SCRIPT, workdir, *command]
    return list(command)


def _exec_status(error_channel: Any) -> int:
    """The exit status from the exec's error channel (a v1 Status)."""
    if isinstance(error_channel, bytes):
        error_channel = error_channel.decode(errors="replace")
    if not error_channel:
        return -1  # the connection ended without the kubelet's verdict
    try:
        status = json.loads(error_channel)
    except ValueError:
        return 1
    if status.get("status") == "Success":
        return 0
    for cause in (status.get("details") or {}).get("causes") or []:
        if cause.get("reason") == "ExitCode":
            with contextlib.suppress(ValueError, TypeError):
                return int(cause.get("message"))
    return 1
