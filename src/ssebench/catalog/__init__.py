"""The task catalog: a small HTTP service that serves a dataset's manifest.json, and the
client with which `ssebench run --catalog URL` and `tasks list --catalog URL` read it.

A catalog holds the tasks' metadata, not their files, so a run from a catalog uses the
prebuilt images (--prebuilt), which carry the task's files (docs/helm.md, "Catalog").
"""

from ssebench.catalog.server import CatalogServer, make_server
from ssebench.tasks.catalog import load_catalog

__all__ = ["CatalogServer", "load_catalog", "make_server"]
