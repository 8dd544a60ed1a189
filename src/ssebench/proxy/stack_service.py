"""The local stack's proxy service, by the names a run reaches it under: its Compose
project and service, and the URL every run of the Docker backend is given. Apart from
stack.py so that the Docker backend's network module names the proxy without importing
the stack's build and configuration code (docs/performance.md, start-up)."""

from __future__ import annotations

PROJECT = "ssebench"
SERVICE = "litellm"
CONTAINER_PORT = 4000
SERVICE_URL = f"http://{SERVICE}:{CONTAINER_PORT}"
