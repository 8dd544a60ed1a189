"""Running the agent as its user, under the timeout, until it ends or the run stops.

Shared by the two places an agent runs: the sandbox container's entrypoint and the
agent container's entrypoint of a sidecar run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

from .accounts import Account
from .config import Settings
from .logs import LogFile, RedactingStream, Redactor, echo_line
from .mcp import PATH as MCP_PATH
from .model_relay import PLACEHOLDER_KEY, ModelRelay
from .processes import Child, exit_status, reap_orphans, sweep_user

EXIT_TIMEOUT = 124
EXIT_CANNOT_EXECUTE = 126
EXIT_NOT_FOUND = 127


def agent_environment(
    settings: Settings,
    base: Mapping[str, str],
    *,
    agent: Account,
    source_dir: Path,
    daemon_url: str,
    daemon_socket: Path,
) -> dict[str, str]:
    """A clean environment: base (the image's toolchain variables and PATH), the
    agent's SSE_* settings and the contract's variables; nothing of the runtime.
    daemon_url is the daemon on the agent's loopback (a sidecar's agent container
    shares the environment container's network namespace), MCP's endpoint with it.

    The run's key is never in it: SSE_BASE_URL is the model relay of this process
    (model_relay.py), which adds the key, and SSE_API_KEY a placeholder."""
    env = dict(base)
    env.setdefault("LANG", "C.UTF-8")
    env.update(settings.agent_variables)
    base_url, api_key = model_access(settings)
    env.update(
        HOME=str(agent.home),
        USER=agent.name,
        LOGNAME=agent.name,
        SSE_BASE_URL=base_url,
        SSE_API_KEY=api_key,
        SSE_MODEL_NAME=settings.model_name,
        SSE_DIFFICULTY=str(settings.difficulty),
        SSE_ARCHIVE=str(settings.archive),
        SSE_SOURCE_DIR=str(source_dir),
        SSE_DAEMON_URL=daemon_url,
        SSE_MCP_URL=daemon_url + MCP_PATH,
        SSE_DAEMON_SOCKET=str(daemon_socket),
        TIMEOUT=str(settings.timeout),
    )
    return env


_relays: dict[tuple[str, str], ModelRelay] = {}
_relays_lock = threading.Lock()


def model_access(settings: Settings) -> tuple[str, str]:
    """(SSE_BASE_URL, SSE_API_KEY) for the agent: this process's model relay and its
    placeholder when the run has a key, else the settings as they are (no model, or a
    model that needs no key). One relay per process, for as long as it lives."""
    if not settings.api_key or not settings.base_url:
        return settings.base_url, settings.api_key
    with _relays_lock:
        relay = _relays.get((settings.base_url, settings.api_key))
        if relay is None:
            relay = ModelRelay(settings.base_url, settings.api_key).start()
            _relays[(settings.base_url, settings.api_key)] = relay
    return relay.url, PLACEHOLDER_KEY


def supervise_agent(
    argv: Sequence[str],
    *,
    account: Account,
    cwd: Path,
    env: Mapping[str, str],
    timeout: int,
    stop: threading.Event,
    log: LogFile,
    agent_log: LogFile,
    stdout: BinaryIO,
    redactor: Redactor,
    on_started: Callable[[], None],
) -> tuple[int, bool]:
    """Run the agent to its end, its timeout or a stop; (exit status, timed out).

    Its output goes, redacted, to agent_log and stdout as it is written. When it has
    ended, every process left of its user is killed, so nothing keeps changing the
    tree. on_started is called once the process exists.
    """
    if not argv:
        log.line("no agent command: the image has no CMD")
        return EXIT_NOT_FOUND, False
    output = RedactingStream(redactor, agent_log.write, lambda data: echo_line(stdout, data))
    log.line(f"starting the agent as {account.name}: {' '.join(argv)}")
    try:
        child = Child(argv, account=account, cwd=cwd, env=env, sink=output)
    except OSError as error:
        log.line(f"cannot start the agent: {type(error).__name__}: {error.strerror}")
        status = EXIT_NOT_FOUND if isinstance(error, FileNotFoundError) else EXIT_CANNOT_EXECUTE
        return status, False
    on_started()
    deadline = child.started + timeout
    timed_out = False
    while True:
        code = child.wait(0.25)
        if code is not None:
            break
        if stop.is_set():
            log.line("stop requested: stopping the agent")
            code = child.terminate()
            break
        if time.monotonic() >= deadline:
            timed_out = True
            log.line(f"the agent timed out after {timeout}s: stopping it")
            code = child.terminate()
            break
        reap_orphans()
    child.terminate()  # its process group's leftovers
    swept = sweep_user(account)
    if swept:
        log.line(f"killed {swept} leftover processes of {account.name}")
    child.output()
    output.close()
    status = EXIT_TIMEOUT if timed_out else exit_status(code)
    log.line(f"the agent exited with status {status}")
    return status, timed_out
