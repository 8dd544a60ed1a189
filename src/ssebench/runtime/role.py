"""What the container's PID 1 has in either of its roles: the entrypoint of a sandbox
or environment container (entrypoint.py) and the agent side of a sidecar run's agent
container (agent_side.py). entrypoint.main picks the role.

Both take their surroundings from the process (os.environ, the container's layout,
stdout) unless a test passes its own, and take over the stop signals that the
launcher blocked.
"""

from __future__ import annotations

import abc
import os
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from types import FrameType
from typing import BinaryIO

from .accounts import make_directory
from .config import Layout, Settings
from .logs import LogFile, Redactor, echo_line

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
# Either role's exit status when the run could not be set up.
EXIT_SETUP_ERROR = 2
# The argument (before the agent's command) that selects the agent container's role.
AGENT_SIDE_OPTION = "--agent-side"


class Role(abc.ABC):
    def __init__(
        self,
        argv: Sequence[str],
        *,
        environ: Mapping[str, str] | None = None,
        layout: Layout | None = None,
        stdout: BinaryIO | None = None,
    ) -> None:
        self.argv = list(argv)
        self.environ = os.environ if environ is None else environ
        self.settings = Settings.from_environ(self.environ)
        self.layout = (layout or Layout()).with_environment(self.settings)
        self.stdout = stdout or sys.stdout.buffer
        self.redactor = Redactor(self.settings.secrets)
        self.stop_event = threading.Event()
        self.stop_signal: int | None = None
        self._logs: list[LogFile] = []

    def install_signal_handlers(self) -> None:
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._on_stop_signal)
        # The launcher blocks these until now, so a stop that came while Python was
        # importing us stays pending (PID 1 would drop it) and is delivered here.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)

    @abc.abstractmethod
    def _on_stop_signal(self, signum: int, frame: FrameType | None) -> None:
        """Note the stop, and little more: the interrupted code may hold a log's lock."""

    # What a line of the role's own on stdout starts with; its logs' echo prefix.
    echo_prefix = "ssebench: "

    def run(self) -> int:
        """The role's part of the run; returns the container's exit status. Without its
        logs (no run directory) it says why on stdout and exits EXIT_SETUP_ERROR."""
        try:
            self._open_logs()
        except Exception as error:
            message = (
                f"{self.echo_prefix}cannot prepare the run directory: {type(error).__name__}\n"
            )
            echo_line(self.stdout, message.encode())
            return EXIT_SETUP_ERROR
        try:
            return self._run()
        finally:
            self._close()
            for log in self._logs:
                log.close()

    def _results_directory(self, mode: int) -> None:
        """The results folder, made; the root-only folder it sits in first."""
        layout = self.layout
        if layout.results.parent == layout.private_root:
            make_directory(layout.private_root, None, 0o700)
        make_directory(layout.results, None, mode)

    def _open_log(self, name: str, *, echo: bool) -> LogFile:
        """A log of the run directory, redacted, closed when the role ends; with echo,
        its lines go to stdout too."""
        log = LogFile(
            self.layout.results / name,
            self.redactor,
            echo=self.stdout if echo else None,
            echo_prefix=self.echo_prefix,
        )
        self._logs.append(log)
        return log

    @abc.abstractmethod
    def _open_logs(self) -> None:
        """Make the run directory and open the role's logs."""

    @abc.abstractmethod
    def _run(self) -> int:
        """The role's part of the run, its logs open."""

    @abc.abstractmethod
    def _close(self) -> None:
        """End what the role started (links, daemon, dialog) before its logs close."""
