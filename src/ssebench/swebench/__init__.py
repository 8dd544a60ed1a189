"""SWE-bench-format instances as ssebench tasks (docs/datasets.md).

instances.py reads and checks the instances as published, specs.py the install
specifications of classic instances (the official tables, offline_additions.yaml and
--specs), importer.py writes the task folders, builds.py what each environment is
built from (environments.py writes a classic one, python_images.py chooses its
Python), repositories.py the clones the trees come from, markers.py the hidden-test
command and its output markers, grading.py decides a run with the official
`swebench` package (the `datasets` extra) on the host, predictions.py grades
predictions made elsewhere.
"""
