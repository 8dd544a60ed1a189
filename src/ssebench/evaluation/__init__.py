"""Many runs at once (`ssebench eval`, `dataset check`, `grade`): the matrix of an
evaluation (matrix.py), the grades already recorded (recorded.py), a run's scheduled
view of the backend (scheduled_backend.py), the scheduler itself (scheduler.py) and the
verdicts of `dataset check` (dataset_check.py)."""
