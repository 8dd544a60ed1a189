"""Where the log of ssebench's image work goes (builds.py, pulls.py)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TextIO


@dataclass
class BuildOutput:
    """Where a build's log goes: each line prefixed with the layer's kind, or, quiet,
    only the tail of the log when the build fails."""

    stream: TextIO = field(default_factory=lambda: sys.stderr)
    quiet: bool = False

    def say(self, message: str) -> None:
        self.stream.write(f"ssebench: {message}\n")
        self.stream.flush()
