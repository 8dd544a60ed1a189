"""`ssebench images publish-chart` without a registry to push to: where the registry
comes from, the packaged values, and the one-line refusals (the push itself:
tests/helm/test_publish_chart.py)."""

from __future__ import annotations

import pytest
import yaml

from ssebench import __version__
from ssebench.errors import UserError
from ssebench.release.chart import (
    RELEASE_REGISTRY_VARIABLE,
    chart_folder,
    release_registry,
    with_registry,
)
from tests.cli import ssebench


def test_the_registry_is_the_option_else_the_one_variable() -> None:
    assert release_registry("r.test/x/", {}) == "r.test/x"
    assert release_registry(None, {RELEASE_REGISTRY_VARIABLE: "r.test/y"}) == "r.test/y"
    assert release_registry("r.test/z", {RELEASE_REGISTRY_VARIABLE: "r.test/y"}) == "r.test/z"
    with pytest.raises(UserError, match=RELEASE_REGISTRY_VARIABLE):
        release_registry(None, {})
    with pytest.raises(UserError, match="no scheme"):
        release_registry("https://r.test/x", {})


def test_the_packaged_chart_pulls_from_the_registry_it_is_published_to() -> None:
    text = (chart_folder() / "values.yaml").read_text()
    changed = yaml.safe_load(with_registry(text, "127.0.0.1:5000/sse"))
    original = yaml.safe_load(text)
    assert changed["image"]["registry"] == "127.0.0.1:5000/sse"
    assert {**changed, "image": original["image"]} == original
    meta = yaml.safe_load((chart_folder() / "Chart.yaml").read_text())
    assert meta["version"] == meta["appVersion"] == __version__


def test_without_a_registry_it_is_one_line_and_exit_1() -> None:
    done = ssebench("images", "publish-chart", env={RELEASE_REGISTRY_VARIABLE: ""})
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--registry" in lines[0] and RELEASE_REGISTRY_VARIABLE in lines[0]
