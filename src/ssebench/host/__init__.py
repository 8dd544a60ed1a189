"""Plumbing on this machine that the backends, the images and the commands share:
processes and their liveness (processes.py), output to a reader that may be gone
(output.py), scratch folders a killed runner leaves for prune (scratch.py), and the
installed entry points and modules read without importing their machinery
(entry_points.py, lazy_modules.py). It imports nothing of ssebench but itself and
errors: labels and the public interface build on it."""
