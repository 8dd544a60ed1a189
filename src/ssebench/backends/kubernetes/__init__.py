"""The Kubernetes backend: one Job per run (spec: kubernetes.txt).

Import-light on purpose: nothing here imports the kubernetes client, which the backend
loads only when it first talks to a cluster, so `ssebench --help` never loads it and a
missing client is one line telling what to install.
"""

from __future__ import annotations

from ssebench.backends.kubernetes.backend import KubernetesBackend

__all__ = ["KubernetesBackend"]
