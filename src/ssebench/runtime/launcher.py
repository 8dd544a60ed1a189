"""/opt/ssebench/bin/ssebench-entrypoint: the tool layer's ENTRYPOINT.

Installed as a plain script, not imported. It finds the runtime by a fixed path
rather than through PYTHONPATH, so that nothing of the runtime reaches the
environment of the agent or of the task's commands.
"""

import importlib
import sys

LIBRARY = "/opt/ssebench/lib"


def main() -> int:
    sys.path.insert(0, LIBRARY)
    entrypoint = importlib.import_module("ssebench_runtime.entrypoint")
    return int(entrypoint.main(sys.argv[1:]))


if __name__ == "__main__":
    sys.exit(main())
