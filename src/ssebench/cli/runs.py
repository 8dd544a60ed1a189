"""`ssebench runs`: find, watch, stop and reach the runs a backend has.

Exit statuses: 3 when no run has the ID, 4 when several do (spec, "Watching runs").
"""

from __future__ import annotations

import argparse
import functools
import os
import socket
import sys
import time

from ssebench import labels
from ssebench.backends import is_built_in_docker, load_backend, selected_backend_name
from ssebench.cli.output import print_json, print_table
from ssebench.errors import SsebenchError
from ssebench.host.output import write_or_drop

# typing.TYPE_CHECKING without importing typing: see cli/main.py.
TYPE_CHECKING = False
if TYPE_CHECKING:  # not imported for `runs list` on Docker (see list_command)
    from typing import Any

    from ssebench.extensions import Backend, RunInfo

NO_SUCH_RUN = 3
SEVERAL_RUNS = 4


class RunLookupFailed(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def register(commands: Any) -> None:
    parser = commands.add_parser("runs", help="list, watch, stop and reach runs")
    parser.add_argument("--backend", help="as for ssebench run; also $SSEBENCH_BACKEND")
    # --backend is accepted after the action too (runs list --backend docker); SUPPRESS
    # keeps an absent one from overriding the one given before the action.
    # type(parser): main's parser class, whose help formatter does not import shutil.
    backend_option = type(parser)(add_help=False)
    backend_option.add_argument("--backend", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    add_action = functools.partial(actions.add_parser, parents=[backend_option])

    listing = add_action("list", help="the runs the backend has, running or not")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=list_command)

    inspect = add_action("inspect", help="one run")
    inspect.add_argument("run_id", metavar="ID")
    inspect.add_argument("--json", action="store_true")
    inspect.set_defaults(handler=inspect_command)

    logs = add_action("logs", help="the container's output")
    logs.add_argument("run_id", metavar="ID")
    logs.add_argument("--follow", "-f", action="store_true")
    logs.set_defaults(handler=logs_command)

    stop = add_action("stop", help="stop the run's containers, leave them in place")
    stop.add_argument("run_id", metavar="ID")
    stop.add_argument("--grace", type=float, default=30.0, metavar="SECONDS")
    stop.set_defaults(handler=stop_command)

    remove = add_action("remove", help="remove what the run left, running or not")
    remove.add_argument("run_id", metavar="ID")
    remove.set_defaults(handler=remove_command)

    endpoint = add_action("endpoint", help="the URL of a port of a running run")
    endpoint.add_argument("run_id", metavar="ID")
    endpoint.add_argument("port", type=int, metavar="PORT")
    endpoint.add_argument("--json", action="store_true")
    endpoint.set_defaults(handler=endpoint_command)

    execute = add_action("exec", help="run a command in the run's container")
    execute.add_argument("run_id", metavar="ID")
    execute.add_argument("--user")
    execute.add_argument("--workdir")
    execute.add_argument("--tty", "-t", action="store_true")
    execute.add_argument("--stdin", "-i", action="store_true")
    execute.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME",
        help="pass this variable's value from here, by name",
    )
    execute.set_defaults(handler=exec_command, trailing_command=[])
    execute.usage = "ssebench runs exec ID [options] -- COMMAND..."

    prune = add_action("prune", help="remove runs whose deadline passed or whose runner is gone")
    prune.add_argument(
        "--results",
        "--dir",
        dest="dir",
        default="results",
        help="the results folder whose runs of killed runners get recorded (./results)",
    )
    prune.add_argument("--json", action="store_true")
    prune.set_defaults(handler=prune_command)

    results = add_action("results", help="the finished runs in the results folder")
    # --results, as `run` and `eval` name the same folder; --dir, its earlier name, too.
    results.add_argument(
        "--results", "--dir", dest="dir", default="results",
        help="the results folder (./results)",
    )  # fmt: skip
    results.add_argument("--json", action="store_true")
    results.set_defaults(handler=results_command)


def _backend(arguments: argparse.Namespace) -> Backend:
    return load_backend(selected_backend_name(arguments.backend))


def run_to_json(run: RunInfo) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "name": run.name,
        "state": run.state,
        "exit_code": run.exit_code,
        "image": run.image,
        "labels": dict(run.labels),
        "created_at": run.created_at,
    }


def _one_run(backend: Backend, run_id: str) -> RunInfo:
    runs = backend.list_runs({labels.RUN_ID: run_id})
    if not runs:
        print(
            f"ssebench: no run with the ID {run_id!r} on the {backend.name} backend",
            file=sys.stderr,
        )
        raise RunLookupFailed(NO_SUCH_RUN)
    if len(runs) > 1:
        names = ", ".join(run.name for run in runs)
        print(f"ssebench: {len(runs)} runs have the ID {run_id!r}: {names}", file=sys.stderr)
        raise RunLookupFailed(SEVERAL_RUNS)
    return runs[0]


def _with_run(arguments: argparse.Namespace) -> tuple[Backend, RunInfo] | int:
    backend = _backend(arguments)
    try:
        return backend, _one_run(backend, arguments.run_id)
    except RunLookupFailed as failure:
        return failure.code


def list_command(arguments: argparse.Namespace) -> int:
    name = selected_backend_name(arguments.backend)
    if is_built_in_docker(name):
        # Without loading the backend or the extension API (a third of the command's
        # start-up): the same fields as run_to_json's, read by the backend's own code.
        from ssebench.backends.docker import listing

        backend_name, supports_exec = name, listing.SUPPORTS_EXEC
        runs = listing.listed(labels.LISTED_RUNS)
    else:
        backend = load_backend(name)
        backend_name, supports_exec = backend.name, backend.supports_exec
        runs = [run_to_json(run) for run in backend.list_runs(labels.LISTED_RUNS)]
    if arguments.json:
        print_json({"backend": backend_name, "supports_exec": supports_exec, "runs": runs})
        return 0
    print_table(
        ("RUN ID", "STATE", "EXIT", "TASK", "AGENT", "MODEL", "CREATED"),
        [
            (
                run["run_id"],
                run["state"],
                run["exit_code"],
                run["labels"].get(labels.TASK_ID),
                run["labels"].get(labels.AGENT),
                run["labels"].get(labels.MODEL),
                run["created_at"],
            )
            for run in runs
        ],
    )
    return 0


def inspect_command(arguments: argparse.Namespace) -> int:
    found = _with_run(arguments)
    if isinstance(found, int):
        return found
    _, run = found
    if arguments.json:
        print_json(run_to_json(run))
    else:
        for key, value in run_to_json(run).items():
            if key != "labels":
                print(f"{key}: {value}")
        for key, value in sorted(run.labels.items()):
            print(f"label {key}: {value}")
    return 0


def logs_command(arguments: argparse.Namespace) -> int:
    found = _with_run(arguments)
    if isinstance(found, int):
        return found
    backend, run = found
    for line in backend.logs(run.handle, follow=arguments.follow):
        if not write_or_drop(sys.stdout, line if line.endswith("\n") else line + "\n"):
            break  # its reader gone (`runs logs -f ID | head`): nothing more to show
    return 0


def stop_command(arguments: argparse.Namespace) -> int:
    found = _with_run(arguments)
    if isinstance(found, int):
        return found
    backend, run = found
    backend.stop(run.handle, arguments.grace)
    print(f"stopped {run.run_id}")
    return 0


def remove_command(arguments: argparse.Namespace) -> int:
    found = _with_run(arguments)
    if isinstance(found, int):
        return found
    backend, run = found
    backend.stop(run.handle, 0)
    backend.cleanup(run.handle)
    print(f"removed {run.run_id}")
    return 0


def endpoint_command(arguments: argparse.Namespace) -> int:
    found = _with_run(arguments)
    if isinstance(found, int):
        return found
    backend, run = found
    url = backend.endpoint(run.handle, arguments.port)
    if arguments.json:
        print_json({"run_id": run.run_id, "port": arguments.port, "url": url})
    else:
        print(url)
    return 0


def exec_command(arguments: argparse.Namespace) -> int:
    command = list(arguments.trailing_command)
    if not command:
        print("ssebench: runs exec needs a command after --, e.g. -- id -un", file=sys.stderr)
        return 1
    missing = [name for name in arguments.env if name not in os.environ]
    if missing:
        print(f"ssebench: --env {missing[0]}: the variable is not set here", file=sys.stderr)
        return 1
    found = _with_run(arguments)
    if isinstance(found, int):
        return found
    backend, run = found
    argv = backend.exec_argv(
        run.handle,
        command,
        user=arguments.user,
        workdir=arguments.workdir,
        tty=arguments.tty,
        stdin=arguments.stdin,
        env_names=arguments.env,
    )
    sys.stdout.flush()
    os.execvp(argv[0], argv)


def abandoned_reason(run: RunInfo, *, now: float, host: str) -> str | None:
    """Why run may be removed by prune, or None (labels.abandoned_reason)."""
    return labels.abandoned_reason(run.labels, now=now, host=host)


def _revoke_key(backend: Backend, run: RunInfo) -> str | None:
    """Revoke the model key of a run prune removes (its runner died before it could);
    what happened, or None for a run without a key. Raises SsebenchError."""
    hashed = run.labels.get(labels.KEY_SHA256)
    if not hashed:
        return None
    from ssebench.proxy import revoke_abandoned_key  # here: `runs list` starts without it

    return "revoked" if revoke_abandoned_key(backend.proxy(), hashed) else "revoked already"


def prune_command(arguments: argparse.Namespace) -> int:
    backend = _backend(arguments)
    now, host = time.time(), socket.gethostname()
    removed: list[dict[str, str | None]] = []
    removed_results: list[str] = []
    kept: list[dict[str, str]] = []
    for run in backend.list_runs(labels.LISTED_RUNS):
        reason = abandoned_reason(run, now=now, host=host)
        if reason is None:
            continue
        # The key first: a run whose key cannot be revoked stays, so that a later
        # prune (with the master key) still finds the key's hash on it.
        try:
            key = _revoke_key(backend, run)
        except SsebenchError as error:
            kept.append({"run_id": run.run_id, "name": run.name, "reason": str(error)})
            print(f"ssebench: kept {run.run_id} ({run.name}): {error}", file=sys.stderr)
            continue
        backend.stop(run.handle, 0)
        backend.cleanup(run.handle)
        removed.append({"run_id": run.run_id, "name": run.name, "reason": reason, "key": key})
        if run.labels.get(labels.RESULTS):
            removed_results.append(run.labels[labels.RESULTS])
        if not arguments.json:
            revoked = f"; its model key {key}" if key else ""
            print(f"removed {run.run_id} ({run.name}): {reason}{revoked}")
    for name in backend.remove_abandoned(now, host):
        reason = "its run is gone"
        removed.append({"run_id": None, "name": name, "reason": reason})
        if not arguments.json:
            print(f"removed {name}: {reason}")
    # Build folders of runners killed before they could remove them (ssebench.host.scratch).
    from pathlib import Path

    from ssebench.host.scratch import (
        remove_abandoned_folders,  # here: `runs list` starts without it
    )
    from ssebench.results.unrecorded import KILLED_REASON, record_killed_runs

    folders = [str(path) for path in remove_abandoned_folders()]
    # The run directories of killed runners: under --dir, and where the removed runs'
    # labels say their results went.
    roots = {Path(arguments.dir).resolve()} | {
        Path(path).parents[3] for path in removed_results if len(Path(path).parents) > 3
    }
    recorded = [str(run_dir) for root in sorted(roots) for run_dir in record_killed_runs(root)]
    if arguments.json:
        print_json(
            {
                "backend": backend.name,
                "removed": removed,
                "kept": kept,
                "folders": folders,
                "recorded": recorded,
            }
        )
    else:
        for folder in folders:
            print(f"removed {folder}: its process is gone")
        for run_dir in recorded:
            print(f"recorded {run_dir}: {KILLED_REASON}")
        if not removed and not folders and not kept and not recorded:
            print("nothing to prune")
    return 1 if kept else 0


def results_command(arguments: argparse.Namespace) -> int:
    from pathlib import Path  # here, as below: `runs list` starts without them

    from ssebench.results.directory import iter_summaries
    from ssebench.results.unrecorded import KILLED_REASON, record_killed_runs

    root = Path(arguments.dir)
    for run_dir in record_killed_runs(root):
        print(f"ssebench: recorded {run_dir}: {KILLED_REASON}", file=sys.stderr)

    found = list(iter_summaries(root))
    if arguments.json:
        print_json(
            {
                "results": str(root),
                "runs": [
                    {
                        "run_id": summary.get("run_id"),
                        "task": summary.get("task"),
                        "agent": summary.get("config", {}).get("agent"),
                        "model": summary.get("config", {}).get("model"),
                        "status": summary.get("status"),
                        "error_msg": summary.get("error_msg"),
                        "exit_code": summary.get("exit_code"),
                        "started_at": summary.get("started_at"),
                        "finished_at": summary.get("finished_at"),
                        "path": str(path),
                    }
                    for path, summary in found
                ],
            }
        )
        return 0
    print_table(
        ("RUN ID", "TASK", "AGENT", "MODEL", "STATUS", "DETAIL", "FINISHED"),
        [
            (
                summary.get("run_id"),
                summary.get("task"),
                summary.get("config", {}).get("agent"),
                summary.get("config", {}).get("model"),
                summary.get("status"),
                summary.get("error_msg"),
                summary.get("finished_at"),
            )
            for _, summary in found
        ],
    )
    return 0
