"""ssebench: run coding agents on software-engineering tasks in containers and grade them.

This module stays import-light on purpose: the in-container runtime is shipped as a
copy of ssebench/runtime and must not drag in host-side code."""

__version__ = "0.1.0"
