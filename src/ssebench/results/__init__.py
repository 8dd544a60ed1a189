"""The run directory on the host: writing it (directory.py: its layout, summary.json,
the latest link, reading every summary), reading what the agent left there without
following anything (files.py), the archive read out of a tar stream (safe_tar.py), and
the runs of runners killed before they recorded them (unrecorded.py). See
docs/results-format.md."""
