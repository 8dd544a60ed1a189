"""The container's entrypoint (PID 1, root): one run from start to grade.

Order: prepare the directories -> start the daemon -> run the agent (the image's
CMD, given as argv) as the agent user under the timeout -> tell the daemon the
agent exited -> grade -> write result.json -> with SSE_KEEP_ALIVE=1 wait to be
stopped -> exit with the agent's status.

Exit status: the agent's own; 124 when it timed out; 126/127 when it could not be
started; 128+N when the run was stopped by signal N (143 for docker stop's
SIGTERM); 2 when the run could not be set up (result.json says why, if it could
be written at all).

Roles: a sandbox container runs all of the above. In a sidecar run the environment
container (SSE_SIDECAR_ROLE=environment) runs it too, except that the agent runs in
the agent container: instead of starting it, the entrypoint waits on the link
(sidecar.py) for the agent container's entrypoint (agent_side.py, selected with the
argument --agent-side) to report the agent's start and exit.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, BinaryIO

from . import __version__, limits
from .accounts import Account, Accounts, chown_tree, make_directory
from .agent_kit import EXIT_MODEL_ERROR
from .config import DAEMON_PORT, Layout, Task, default_path, load_image_environment
from .daemon import Daemon
from .dialog import Dialog
from .evaluator import (
    STOPPED_DURING_GRADING,
    Evaluator,
    Grading,
    model_error_message,
    result_document,
    write_result,
)
from .logs import utc_now
from .processes import reap_orphans, sweep_user
from .repository import BaseRepository
from .rewards import RewardEvaluator
from .role import AGENT_SIDE_OPTION, EXIT_SETUP_ERROR, STOP_SIGNALS, Role
from .sidecar import SOCKET_NAME, EnvironmentLink, LinkClosed
from .supervision import agent_environment, supervise_agent
from .unixhttp import request_json
from .workspace import Workspace, snapshot_home

ENVIRONMENT_ROLE = "environment"
# How long the environment container waits for the agent container to connect, and,
# once it asked it to stop, for its report.
AGENT_CONNECT_SECONDS = 300.0
AGENT_STOP_WAIT_SECONDS = 30.0
# Past the agent's timeout by this much, the environment stops an agent container
# that has not reported (it enforces the timeout itself; this is the backstop).
AGENT_TIMEOUT_SLACK_SECONDS = 60.0
KEEP_ALIVE_MESSAGE = "graded; waiting to be stopped (SSE_KEEP_ALIVE=1)"
_PR_SET_NO_NEW_PRIVS = 38


class GradingInterrupted(BaseException):
    """A second stop signal arrived while grading; it unwinds grading at once.

    A BaseException so that the evaluator's own error handling does not swallow it.
    """


class Entrypoint(Role):
    def __init__(
        self,
        argv: Sequence[str],
        *,
        environ: Mapping[str, str] | None = None,
        layout: Layout | None = None,
        accounts: Accounts | None,
        stdout: BinaryIO | None = None,
        host: str,
        port: int,
    ) -> None:
        super().__init__(argv, environ=environ, layout=layout, stdout=stdout)
        self._accounts = accounts
        self.host = host
        self.port = port
        self.started_at = utc_now()
        self.phase = "starting"
        self.signal_count = 0
        self.daemon: Daemon | None = None
        self.dialog: Dialog | None = None
        self.task: Task | None = None
        self.sidecar = self.environ.get("SSE_SIDECAR_ROLE") == ENVIRONMENT_ROLE
        self.link: EnvironmentLink | None = None

    # -- signals -------------------------------------------------------------------

    def _on_stop_signal(self, signum: int, frame: FrameType | None) -> None:
        # Only flags here: the interrupted code may hold a log's lock.
        self.signal_count += 1
        if self.stop_signal is None:
            self.stop_signal = signum
        self.stop_event.set()
        if self.phase == "grading" and self.signal_count >= 2:
            raise GradingInterrupted()

    @property
    def stopped(self) -> bool:
        return self.stop_signal is not None

    # -- the run -------------------------------------------------------------------

    def run(self) -> int:
        try:
            return super().run()
        finally:
            self._hand_back_results()

    def _close(self) -> None:
        if self.link is not None:
            self.link.close()
        if self.daemon is not None:
            self.daemon.stop()
        if self.dialog is not None:
            self.dialog.close()

    def _hand_back_results(self) -> None:
        """Give the run directory to the runner's user once nothing more is written.

        Until now it was root's (it holds the grade); the runner outside still has to
        read it and write summary.json into it. Best effort: a failure leaves it root's.
        """
        owner = self.settings.results_owner
        if owner is None:
            return
        uid, gid = owner
        account = Account(name=str(uid), uid=uid, gid=gid, home=Path("/"))
        for tree in (self.layout.results, self.layout.archive):
            with contextlib.suppress(OSError):
                chown_tree(tree, account)

    def _open_logs(self) -> None:
        self._results_directory(0o755)
        self.log = self._open_log("entrypoint.log", echo=True)
        self.agent_log = self._open_log("agent.log", echo=False)
        self.daemon_log = self._open_log("daemon.log", echo=False)
        self.evaluator_log = self._open_log("evaluator.log", echo=False)

    def _run(self) -> int:
        settings = self.settings
        self.log.line(
            f"runtime {__version__}; difficulty {settings.difficulty}; "
            f"timeout {settings.timeout}s; keep alive {'yes' if settings.keep_alive else 'no'}"
        )
        self.log.line(f"container limits: {limits.describe()}")
        for warning in settings.warnings:
            self.log.line(f"warning: {warning}")
        try:
            if self.sidecar:
                # Listening first: an agent container that connects early waits in the
                # backlog, and one that connects after a failed set-up is refused.
                make_directory(self.layout.socket_dir, None, 0o755)
                self.link = EnvironmentLink.listen(
                    self.layout.socket_dir / SOCKET_NAME, peer_uids=frozenset({0, os.geteuid()})
                )
            self.task = task = Task.load(self.layout.task_file)
            accounts = self._accounts or Accounts.system(agent_user=task.agent_user)
            self.log.line(f"task {task.id}; source {task.source_dir}")
            repository = self._prepare(task, accounts)
        except Exception as error:
            self.log.exception("setup failed", error)
            self._finish(
                Grading(error=f"Entrypoint error: {type(error).__name__}"),
                agent_exit_code=None,
                timed_out=False,
            )
            return EXIT_SETUP_ERROR

        if self.stopped:
            self.log.line("stopped before the agent started")
            agent_status: int | None = None
            timed_out = False
        elif self.sidecar:
            agent_status, timed_out = self._await_agent_container(task, accounts.agent)
        else:
            agent_status, timed_out = self._run_agent(task, accounts.agent)
        self._admin("/admin/agent-exited", {"exit_code": agent_status, "timed_out": timed_out})

        grading = self._grade(task, accounts, repository)
        self._finish(grading, agent_exit_code=agent_status, timed_out=timed_out)

        if self.stop_signal is not None:
            return 128 + self.stop_signal
        status = agent_status or 0
        if settings.keep_alive:
            self.log.line(KEEP_ALIVE_MESSAGE)
            self.phase = "kept"
            while not self.stop_event.wait(1.0):
                reap_orphans()
            self.log.line("stopped; exiting")
        return status

    def _prepare(self, task: Task, accounts: Accounts) -> BaseRepository:
        layout = self.layout
        make_directory(layout.archive, accounts.agent, 0o755)
        make_directory(layout.grade_root, None, 0o711)
        make_directory(layout.private_dir, None, 0o700)
        # The copy of the base commit is taken before the agent owns the repository.
        repository = BaseRepository.snapshot(
            source_dir=task.source_dir,
            git_dir=layout.base_repository,
            base_commit=task.base_commit,
            path_value=self._path(),
        )
        self.log.line(f"base commit {repository.base}")
        snapshot_home(accounts.runner, layout.runner_home_template)
        chown_tree(task.source_dir, accounts.agent)
        if task.verifier is not None:
            # Harbor's convention: /logs/agent is the agent's; /logs/verifier is made
            # at grading, for the verifier alone.
            make_directory(layout.logs_root, None, 0o755)
            make_directory(layout.logs_root / "agent", accounts.agent, 0o755)
        make_directory(layout.socket_dir, None, 0o755)

        self.dialog = Dialog(
            layout.dialog_file, self.redactor, harness_copy=layout.harness_events_file
        )
        self.daemon = Daemon(
            task=task,
            difficulty=self.settings.difficulty,
            repository=repository,
            workspace=self._workspace(layout.tools_workspace, accounts.runner, repository),
            dialog=self.dialog,
            log=self.daemon_log,
            redactor=self.redactor,
        )
        self.daemon.start(
            host=self.host,
            port=self.port,
            agent_socket=layout.agent_socket,
            admin_socket=layout.admin_socket,
            admin_uids=frozenset({0, os.geteuid()}),
        )
        self.log.line(f"daemon listening on port {self.daemon.port}")
        return repository

    def _run_agent(self, task: Task, agent: Account) -> tuple[int, bool]:
        """Run the agent to its end, its timeout or a stop; (exit status, timed out)."""

        def started() -> None:
            self.phase = "agent"
            self._admin("/admin/agent-started", {"command": self.argv})

        return supervise_agent(
            self.argv,
            account=agent,
            cwd=task.source_dir,
            env=self._agent_environment(task, agent),
            timeout=self.settings.timeout,
            stop=self.stop_event,
            log=self.log,
            agent_log=self.agent_log,
            stdout=self.stdout,
            redactor=self.redactor,
            on_started=started,
        )

    def _await_agent_container(self, task: Task, agent: Account) -> tuple[int | None, bool]:
        """Sidecar: the agent runs in the agent container, whose entrypoint reports its
        start and exit over the link; (exit status or None, timed out)."""
        link = self.link
        assert link is not None and self.daemon is not None
        self.log.line("waiting for the agent container")
        if not link.accept(self.stop_event, AGENT_CONNECT_SECONDS):
            if not self.stopped:
                self.log.line(
                    f"the agent container did not connect within {AGENT_CONNECT_SECONDS:.0f}s"
                )
            return None, False
        ready = {
            "type": "ready",
            "uid": agent.uid,
            "gid": agent.gid,
            "source_dir": str(task.source_dir),
            "daemon_port": self.daemon.port,
        }
        backstop = time.monotonic() + self.settings.timeout + AGENT_TIMEOUT_SLACK_SECONDS
        give_up: float | None = None
        try:
            link.send(ready)
            while True:
                now = time.monotonic()
                if give_up is None and (self.stop_event.is_set() or now >= backstop):
                    reason = "stop requested" if self.stop_event.is_set() else "past its timeout"
                    self.log.line(f"{reason}: stopping the agent container")
                    link.send({"type": "stop"})
                    give_up = now + AGENT_STOP_WAIT_SECONDS
                if give_up is not None and now >= give_up:
                    self.log.line("the agent container did not report its exit")
                    return None, False
                message = link.receive(0.25)
                if message is None:
                    reap_orphans()
                elif message["type"] == "started":
                    self.phase = "agent"
                    self._admin("/admin/agent-started", {"command": message.get("command")})
                elif message["type"] == "exited":
                    return self._agent_container_exited(message)
        except LinkClosed as closed:
            self.log.line(f"the agent container is gone ({closed}); grading what is there")
            return None, False

    def _agent_container_exited(self, message: dict[str, Any]) -> tuple[int | None, bool]:
        code = message.get("exit_code")
        status = code if isinstance(code, int) and not isinstance(code, bool) else None
        timed_out = message.get("timed_out") is True
        signum = message.get("signal")
        # The agent container was stopped: the run was, as a sandbox run stopped by N.
        if isinstance(signum, int) and signum in STOP_SIGNALS and self.stop_signal is None:
            self.stop_signal = signum
        self.log.line(f"the agent container reports that the agent exited with status {status}")
        return status, timed_out

    def _grade(self, task: Task, accounts: Accounts, repository: BaseRepository) -> Grading:
        evaluator: Evaluator | RewardEvaluator
        if task.verifier is not None:
            evaluator = RewardEvaluator(
                task=task,
                verifier=task.verifier,
                repository=repository,
                accounts=accounts,
                layout=self.layout,
                environment=self._image_environment(),
                log=self.evaluator_log,
                redactor=self.redactor,
                progress=self.log.line,
            )
        else:
            evaluator = self._patch_evaluator(task, accounts, repository)
        self.log.line("grading")
        self.phase = "grading"
        try:
            if self.signal_count >= 2:
                raise GradingInterrupted()
            return evaluator.run()
        except GradingInterrupted:
            evaluator.grading.error = STOPPED_DURING_GRADING
            sweep_user(accounts.runner)
            return evaluator.grading
        finally:
            self.phase = "finishing"

    def _patch_evaluator(
        self, task: Task, accounts: Accounts, repository: BaseRepository
    ) -> Evaluator:
        return Evaluator(
            task=task,
            repository=repository,
            workspace=self._workspace(self.layout.grading_workspace, accounts.runner, repository),
            runner=accounts.runner,
            results_dir=self.layout.results,
            hidden_dir=self.layout.hidden_dir,
            runner_home_template=self.layout.runner_home_template,
            log=self.evaluator_log,
            redactor=self.redactor,
            progress=self.log.line,
        )

    def _finish(self, grading: Grading, *, agent_exit_code: int | None, timed_out: bool) -> None:
        document = result_document(
            task_id=self.task.id if self.task else None,
            run_id=self.settings.run_id,
            grading=grading,
            agent_exit_code=agent_exit_code,
            timed_out=timed_out,
            stopped=self.stopped,
            timeout=self.settings.timeout,
            started_at=self.started_at,
            finished_at=utc_now(),
            model_error=self._model_error(agent_exit_code, timed_out),
        )
        try:
            write_result(self.layout.results / "result.json", document)
        except OSError as error:
            self.log.exception("cannot write result.json", error)
        summary = document["status"]
        if document["error_msg"]:
            summary += f" ({document['error_msg']})"
        self.log.line(f"result: {summary}")
        self._admin("/admin/result", document)

    def _model_error(self, agent_exit_code: int | None, timed_out: bool) -> str | None:
        """error_msg when the agent's wrapper ended the run because its model could not
        be used: it exited EXIT_MODEL_ERROR after a `complete` event with model_error.
        Both are needed: an exit status alone is any program's, an event alone any
        agent's word."""
        if agent_exit_code != EXIT_MODEL_ERROR or timed_out or self.dialog is None:
            return None
        complete = self.dialog.last_from_agent("complete")
        if complete is None or complete.get("model_error") is not True:
            return None
        return model_error_message(complete.get("reason"))

    # -- helpers -------------------------------------------------------------------

    def _admin(self, path: str, body: dict[str, Any]) -> None:
        if self.daemon is None:
            return
        try:
            status, _ = request_json(self.layout.admin_socket, "POST", path, body)
        except (OSError, ValueError) as error:
            self.log.line(f"the daemon did not take {path}: {type(error).__name__}")
            return
        if status != 200:
            self.log.line(f"the daemon answered {status} to {path}")

    def _workspace(self, root: Path, runner: Account, repository: BaseRepository) -> Workspace:
        return Workspace(
            root,
            runner=runner,
            repository=repository,
            private_dir=self.layout.private_dir,
            environment=self._image_environment(),
            step_timeout=self.settings.step_timeout,
        )

    def _path(self) -> str:
        return default_path(self.environ)

    def _image_environment(self) -> dict[str, str]:
        env = load_image_environment(self.layout.image_env_file)
        env["PATH"] = self._path()
        return env

    def _agent_environment(self, task: Task, agent: Account) -> dict[str, str]:
        return agent_environment(
            self.settings,
            self._image_environment(),
            agent=agent,
            source_dir=task.source_dir,
            daemon_url=f"http://127.0.0.1:{self.daemon.port if self.daemon else self.port}",
            daemon_socket=self.layout.agent_socket,
        )


def forbid_new_privileges() -> None:
    """No process of the run may gain privileges through a setuid binary or file
    capabilities. Inherited by every child; root's own children are unaffected."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def main(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    layout: Layout | None = None,
    accounts: Accounts | None = None,
    stdout: BinaryIO | None = None,
    host: str = "0.0.0.0",
    port: int = DAEMON_PORT,
    install_signal_handlers: bool = True,
) -> int:
    """Run the container's run, or with --agent-side first the agent container's part
    of a sidecar run. Tests pass a temporary layout, the current user as both accounts
    and port 0; the container passes nothing."""
    argv = sys.argv[1:] if argv is None else argv
    role: Role
    if argv[:1] == [AGENT_SIDE_OPTION]:
        # Imported here: only an agent container takes this role.
        from .agent_side import AgentSide

        agent = accounts.agent if accounts else None
        role = AgentSide(argv[1:], environ=environ, layout=layout, account=agent, stdout=stdout)
    else:
        role = Entrypoint(
            argv,
            environ=environ,
            layout=layout,
            accounts=accounts,
            stdout=stdout,
            host=host,
            port=port,
        )
    if install_signal_handlers:
        role.install_signal_handlers()
    if os.geteuid() == 0 and accounts is None:
        forbid_new_privileges()
    return role.run()
