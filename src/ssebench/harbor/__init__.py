"""Harbor and Terminal-Bench 1.x tasks (docs/datasets.md): reading their folders
(tasks.py). Importing them into datasets and grading them by the container's state are
the next slices of issue 48."""
