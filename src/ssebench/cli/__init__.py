"""The `ssebench` command: one module per command group, wired up in main.py."""
