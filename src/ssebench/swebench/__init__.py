"""SWE-bench-format instances as ssebench tasks (docs/datasets.md).

instances.py reads and checks the JSONL instances, specs.py the install
specifications of classic instances (--specs), importer.py writes the task folders,
markers.py the hidden-test command and its output markers, grading.py decides a
run with the official `swebench` package (the `datasets` extra) on the host.
"""
