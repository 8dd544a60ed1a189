"""Render the chart offline with helm-python-sdk (Helm's own engine, through its C
library) and hand the tests the objects, parsed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

helm = pytest.importorskip("helm_python", reason="the dev extra's helm-python-sdk is missing")

CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "ssebench"


class Rendered:
    """The objects of one render, and NOTES.txt."""

    def __init__(self, manifests: dict[str, str]) -> None:
        self.notes = ""
        self.objects: list[dict[str, Any]] = []
        for path, text in manifests.items():
            if path.endswith("NOTES.txt"):
                self.notes = text
                continue
            self.objects.extend(doc for doc in yaml.safe_load_all(text) if doc)

    def get(self, kind: str, name: str) -> dict[str, Any]:
        for item in self.objects:
            if item["kind"] == kind and item["metadata"]["name"] == name:
                return item
        present = sorted(f"{o['kind']}/{o['metadata']['name']}" for o in self.objects)
        raise AssertionError(f"no {kind}/{name} in {present}")

    def has(self, kind: str, name: str) -> bool:
        return any(o["kind"] == kind and o["metadata"]["name"] == name for o in self.objects)

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    def container(self, kind: str, name: str) -> dict[str, Any]:
        container: dict[str, Any] = self.pod(kind, name)["containers"][0]
        return container

    def pod(self, kind: str, name: str) -> dict[str, Any]:
        spec: dict[str, Any] = self.get(kind, name)["spec"]["template"]["spec"]
        return spec

    def env(self, kind: str, name: str) -> dict[str, Any]:
        """name -> value, or the valueFrom mapping for a variable from a Secret."""
        return {
            item["name"]: item.get("value", item.get("valueFrom"))
            for item in self.container(kind, name).get("env", [])
        }


RenderFunction = Callable[..., Rendered]


@pytest.fixture(scope="session")
def chart() -> Any:
    return helm.Chart.load(CHART)


@pytest.fixture
def render(chart: Any) -> RenderFunction:
    def render(
        values: dict[str, Any] | None = None, *, name: str = "ssebench", namespace: str = "ssebench"
    ) -> Rendered:
        chart.validate_schema(values or {})
        manifests = chart.render(values or {}, name=name, namespace=namespace, is_install=True)
        return Rendered(manifests)

    return render
