"""The agent container's entrypoint in a sidecar run (PID 1, root).

Selected by the agent runtime image's ENTRYPOINT (``ssebench-entrypoint --agent-side``).
The agent container holds the agent and nothing of the task: the source tree and the
daemon's sockets come from the volumes it shares with the environment container.

Order: open its logs in the run directory -> connect to the environment container
(sidecar.py) and wait until it is ready -> run the agent (the image's CMD) as the
agent user under the timeout, with the uid and gid that own the shared tree -> report
the agent's exit over the link -> exit.

Exit status, as in a sandbox container: the agent's own; 124 when it timed out;
126/127 when it could not be started; 128+N when the run was stopped by signal N
(143 for docker stop's SIGTERM; a stop that the environment container asks for, or
its disappearance, counts as SIGTERM); 2 when the environment container could not
set the run up or never listened, and the agent did not start.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any, BinaryIO

from . import __version__
from .accounts import AGENT_USER, Account, make_directory
from .config import Layout, default_path, load_image_environment
from .role import AGENT_SIDE_OPTION, EXIT_SETUP_ERROR, Role
from .sidecar import SOCKET_NAME, AgentLink, LinkClosed
from .supervision import agent_environment, supervise_agent

__all__ = ["AGENT_SIDE_OPTION", "AgentSide"]

# How long to wait for the environment container to listen on the link.
CONNECT_SECONDS = 300.0
AGENT_LOG = "agent.log"
ENTRYPOINT_LOG = "agent-entrypoint.log"
ECHO_PREFIX = "ssebench: agent container: "


class AgentSide(Role):
    echo_prefix = ECHO_PREFIX

    def __init__(
        self,
        argv: Sequence[str],
        *,
        environ: Mapping[str, str] | None = None,
        layout: Layout | None = None,
        account: Account | None,
        stdout: BinaryIO | None = None,
        connect_seconds: float = CONNECT_SECONDS,
    ) -> None:
        super().__init__(argv, environ=environ, layout=layout, stdout=stdout)
        self._account = account
        self.connect_seconds = connect_seconds

    # -- signals -------------------------------------------------------------------

    def _on_stop_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stop(signum)

    def _stop(self, signum: int) -> None:
        if self.stop_signal is None:
            self.stop_signal = signum
        self.stop_event.set()

    # -- the run -------------------------------------------------------------------

    def _close(self) -> None:
        pass  # the link is closed where it was opened (_run)

    def _open_logs(self) -> None:
        # The results mount sits in a root-only folder, as in the environment container.
        self._results_directory(0o755)
        self.log = self._open_log(ENTRYPOINT_LOG, echo=True)
        self.agent_log = self._open_log(AGENT_LOG, echo=False)

    def _run(self) -> int:
        self.log.line(f"runtime {__version__}; timeout {self.settings.timeout}s")
        for warning in self.settings.warnings:
            self.log.line(f"warning: {warning}")
        try:
            link = AgentLink.connect(
                self.layout.socket_dir / SOCKET_NAME, self.stop_event, self.connect_seconds
            )
        except (LinkClosed, OSError) as error:
            self.log.line(f"cannot reach the environment container: {error}")
            return self._not_started()
        try:
            return self._run_linked(link)
        finally:
            link.close()

    def _not_started(self) -> int:
        return 128 + self.stop_signal if self.stop_signal is not None else EXIT_SETUP_ERROR

    def _run_linked(self, link: AgentLink) -> int:
        self.log.line("connected to the environment container; waiting until it is ready")
        try:
            ready = self._wait_until_ready(link)
        except LinkClosed as closed:
            self.log.line(f"the environment container was not ready ({closed}); no agent runs")
            return self._not_started()
        if ready is None:
            self.log.line("stopped before the agent started")
            self._report(link, None, False)
            return self._not_started()
        try:
            agent = self._agent_account(ready)
            source_dir = Path(str(ready["source_dir"]))
            env = self._agent_environment(agent, source_dir, int(ready["daemon_port"]))
        except (KeyError, TypeError, ValueError, OSError) as error:
            self.log.line(f"cannot prepare the agent: {type(error).__name__}: {error}")
            self._report(link, None, False)
            return EXIT_SETUP_ERROR

        agent_ended = threading.Event()
        watcher = threading.Thread(target=self._watch, args=(link, agent_ended), daemon=True)
        watcher.start()
        status, timed_out = supervise_agent(
            self.argv,
            account=agent,
            cwd=source_dir,
            env=env,
            timeout=self.settings.timeout,
            stop=self.stop_event,
            log=self.log,
            agent_log=self.agent_log,
            stdout=self.stdout,
            redactor=self.redactor,
            on_started=lambda: self._send(link, {"type": "started", "command": self.argv}),
        )
        # The watcher is done with the link before it is closed: it looks at agent_ended
        # between receives, which wait 0.25 s at most.
        agent_ended.set()
        watcher.join()
        self._report(link, status, timed_out)
        if self.stop_signal is not None:
            return 128 + self.stop_signal
        return status

    def _wait_until_ready(self, link: AgentLink) -> dict[str, Any] | None:
        """The environment's "ready" message, or None when stopped first."""
        while not self.stop_event.is_set():
            message = link.receive(0.25)
            if message is None:
                continue
            if message["type"] == "ready":
                return message
            if message["type"] == "stop":
                self._stop(signal.SIGTERM)
        return None

    def _watch(self, link: AgentLink, agent_ended: threading.Event) -> None:
        """While the agent runs: a stop from the environment, or its end, stops it."""
        while not (self.stop_event.is_set() or agent_ended.is_set()):
            try:
                message = link.receive(0.25)
            except LinkClosed as closed:
                if not (self.stop_event.is_set() or agent_ended.is_set()):
                    self.log.line(f"the environment container is gone ({closed})")
                    self._stop(signal.SIGTERM)
                return
            if message is not None and message["type"] == "stop":
                self.log.line("the environment container asks the agent to stop")
                self._stop(signal.SIGTERM)

    def _report(self, link: AgentLink, status: int | None, timed_out: bool) -> None:
        self._send(
            link,
            {
                "type": "exited",
                "exit_code": status,
                "timed_out": timed_out,
                "signal": self.stop_signal,
            },
        )

    def _send(self, link: AgentLink, message: dict[str, Any]) -> None:
        try:
            link.send(message)
        except LinkClosed as closed:
            self.log.line(f"cannot tell the environment container: {closed}")

    def _agent_account(self, ready: Mapping[str, Any]) -> Account:
        """The agent's user, with the uid and gid that own the shared tree.

        The agent image's model user is uid 1000, as the tool layer's normally is; a
        case image that had that uid taken gives its model another one, and the agent
        must then run with that one for the environment to grade what it wrote.
        """
        account = self._account or Account.lookup(AGENT_USER)
        uid, gid = ready["uid"], ready["gid"]
        if not isinstance(uid, int) or not isinstance(gid, int):
            raise TypeError("the environment sent no uid and gid")
        if (uid, gid) == (account.uid, account.gid):
            return account
        self.log.line(f"the shared tree belongs to uid {uid}; the agent runs as that uid")
        account = replace(account, uid=uid, gid=gid)
        make_directory(account.home, account, 0o700)
        return account

    def _agent_environment(self, agent: Account, source_dir: Path, port: int) -> dict[str, str]:
        base = load_image_environment(self.layout.image_env_file)
        base["PATH"] = default_path(self.environ)
        # The agent container shares the environment container's network namespace, so
        # the daemon is on the loopback address here too.
        return agent_environment(
            self.settings,
            base,
            agent=agent,
            source_dir=source_dir,
            daemon_url=f"http://127.0.0.1:{port}",
            daemon_socket=self.layout.agent_socket,
        )
