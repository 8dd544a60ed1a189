"""`python -m ssebench`: the same command as `ssebench`."""

import sys

from ssebench.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
