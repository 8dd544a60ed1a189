"""Evaluation reports: what `ssebench eval` writes and `ssebench report` shows.

statistics.py  pass@k, Wilson intervals, the bootstrap, McNemar (standard library)
summary.py     reading a report (schema 1 or 2) and the statistics of each matrix entry
comparison.py  two evaluations side by side: flipped tasks and a paired test
markdown.py    the report as a markdown document
html.py        the report as one self-contained HTML page with a chart

The schema is documented in docs/evaluation.md.
"""
