"""Tasks and datasets: the task format, local datasets and their manifests."""

from ssebench.tasks.dataset import Dataset, load_dataset, write_manifest
from ssebench.tasks.model import Task, load_task

__all__ = ["Dataset", "Task", "load_dataset", "load_task", "write_manifest"]
