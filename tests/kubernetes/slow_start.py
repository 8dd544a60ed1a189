"""`ssebench` with one Kubernetes API call of start slowed: a test's way into a narrow
window, with no hook in ssebench itself.

    python slow_start.py MARKER_DIR AFTER SECONDS ssebench-arguments...

runs `ssebench ssebench-arguments...` in which, once the API call whose description
starts with AFTER ("Cannot create the Job", "Cannot create the Secret", ...) has
returned, a file AFTER-<pid> appears in MARKER_DIR and the runner sleeps SECONDS. A
test waits for the file and kills the runner there.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any


def main() -> int:
    markers, after, seconds, *arguments = sys.argv[1:]
    from ssebench.backends.kubernetes import client
    from ssebench.cli.main import main as ssebench

    original = client.call

    def slowed(what: str, *args: Any, **kwargs: Any) -> Any:
        result = original(what, *args, **kwargs)
        if what.startswith(after):
            (Path(markers) / f"{after.replace(' ', '-')}-{os.getpid()}").touch()
            time.sleep(float(seconds))
        return result

    client.call = slowed  # type: ignore[assignment]
    return ssebench(arguments)


if __name__ == "__main__":
    sys.exit(main())
