"""The real SWE-bench dev instances of ../shared/datasets/swebench-dev/ (see its README:
four records as published, and shallow bare clones of their three repositories)."""

from __future__ import annotations

import tarfile
from pathlib import Path

DEV_DATASET = Path(__file__).resolve().parents[1].parent / "shared/datasets/swebench-dev"
INSTANCES = DEV_DATASET / "instances.jsonl"


def unpack_repositories(into: Path) -> Path:
    """The three bare clones unpacked into `into` (the --repos folder); returns it."""
    into.mkdir(parents=True, exist_ok=True)
    for archive in sorted(DEV_DATASET.glob("*.git.tar.gz")):
        with tarfile.open(archive) as tar:
            tar.extractall(into, filter="data")
    return into
