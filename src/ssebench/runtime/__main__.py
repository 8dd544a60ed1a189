"""``python3 -m ssebench_runtime [AGENT COMMAND...]``: the entrypoint, for debugging."""

import sys

from .entrypoint import main

sys.exit(main())
