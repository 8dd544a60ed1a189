"""/opt/ssebench/bin/ssebench-entrypoint: the tool layer's ENTRYPOINT.

Installed as a plain script, not imported. It finds the runtime by a fixed path
rather than through PYTHONPATH, so that nothing of the runtime reaches the
environment of the agent or of the task's commands.
"""

import importlib
import signal
import sys

# Blocked first thing: as PID 1 with no handler yet, a `docker stop` that arrives while
# the runtime is being imported would be dropped, and the run killed after the grace
# period instead of graded. The entrypoint unblocks them once its handlers are in place.
signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGTERM, signal.SIGINT))

LIBRARY = "/opt/ssebench/lib"


def main() -> int:
    sys.path.insert(0, LIBRARY)
    entrypoint = importlib.import_module("ssebench_runtime.entrypoint")
    return int(entrypoint.main(sys.argv[1:]))


if __name__ == "__main__":
    sys.exit(main())
