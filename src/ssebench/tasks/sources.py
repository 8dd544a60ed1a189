"""Where a command's dataset comes from: --local, --catalog, $SSEBENCH_DATASET or the
pilot dataset of the current directory. Apart from tasks.dataset, which the catalog
client builds on (a catalog serves datasets), so that neither imports the other."""

from __future__ import annotations

import os
from pathlib import Path

from ssebench.errors import UserError
from ssebench.tasks.dataset import DATASET_FILE, Dataset, load_dataset

DATASET_VARIABLE = "SSEBENCH_DATASET"
DEFAULT_DATASET_DIR = Path("datasets/pilot")


def resolve_dataset(local: str | None, catalog: str | None) -> Dataset:
    """The dataset that --local or --catalog names, else SSEBENCH_DATASET, else the pilot
    dataset in the current directory. Raises UserError/TaskError with what to pass."""
    if catalog:
        # Here: the client's urllib costs every command's start (test_cli_startup.py).
        from ssebench.tasks.catalog import load_catalog

        return load_catalog(catalog)
    if local:
        return load_dataset(Path(local))
    if os.environ.get(DATASET_VARIABLE):
        return load_dataset(Path(os.environ[DATASET_VARIABLE]))
    if (DEFAULT_DATASET_DIR / DATASET_FILE).exists():
        return load_dataset(DEFAULT_DATASET_DIR)
    raise UserError(
        f"No dataset: pass --local DIR (a folder with {DATASET_FILE}) or set {DATASET_VARIABLE}"
    )
