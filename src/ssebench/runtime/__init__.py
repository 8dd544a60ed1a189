"""The ssebench runtime: what runs inside a task container.

The tool layer installs this directory as the package ``ssebench_runtime`` under
/opt/ssebench/lib and runs it on the image's own python3, so it imports nothing but
the standard library and refers to its own modules only relatively.

Modules:
    entrypoint  the container's PID 1: prepares, runs the agent, grades, exits
    role        what the PID 1 does in either role: surroundings, stop signals
    daemon      the HTTP API on :4263 and the two unix sockets
    evaluator   turns the agent's tree into final.patch and result.json
    dialog      the run's event log, archive/dialog.jsonl
    repository  the root-owned copy of the base commit, diffs against it
    workspace   scratch copies of the tree where task commands run
    processes   starting, timing out and killing other users' processes
    accounts    the agent and runner users
    config      environment, paths and task.json
    logs        log files and secret redaction
    unixhttp    HTTP over unix sockets
    launcher    /opt/ssebench/bin/ssebench-entrypoint (not imported)
"""

__version__ = "0.1.0"
