"""models/*.yaml, the proxy configuration made from them, and what a run with a model
checks before it builds or starts anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ssebench.errors import UserError
from ssebench.extensions import ProxyEndpoint
from ssebench.proxy import ModelCatalog, plan_model_access
from ssebench.proxy.models import KEYLESS_API_KEY, MODELS_DIR_VARIABLE, default_models_dir
from tests.conftest import PILOT_DATASET

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_models_are_the_ones_users_ask_for() -> None:
    catalog = ModelCatalog.load(ROOT / "models")
    assert {"claude-sonnet-4-6", "gpt-5", "gemini-2.5-pro"} <= set(catalog.names)
    assert {path.name for path in (ROOT / "models").glob("*.yaml")} == {
        "anthropic-claude.yaml",
        "openai-gpt.yaml",
        "google-gemini.yaml",
    }
    claude = catalog.get("claude-sonnet-4-6")
    assert (claude.provider, claude.key_variable) == ("anthropic", "ANTHROPIC_API_KEY")
    assert catalog.get("gemini-2.5-pro").key_variable == "GOOGLE_API_KEY"
    assert default_models_dir() == ROOT / "models" or MODELS_DIR_VARIABLE in os.environ


def test_the_proxy_configuration_names_keys_by_variable_only() -> None:
    catalog = ModelCatalog.load(ROOT / "models")
    text = catalog.litellm_config_text()
    config = yaml.safe_load(text)
    entries = {entry["model_name"]: entry["litellm_params"] for entry in config["model_list"]}
    assert set(entries) == set(catalog.names)
    assert entries["claude-sonnet-4-6"] == {
        "model": "anthropic/claude-sonnet-4-6",
        "api_key": "os.environ/ANTHROPIC_API_KEY",
    }
    assert all(params["api_key"].startswith("os.environ/") for params in entries.values())
    assert config["general_settings"]["master_key"] == "os.environ/LITELLM_MASTER_KEY"


def test_an_unknown_model_lists_the_known_ones() -> None:
    catalog = ModelCatalog.load(ROOT / "models")
    with pytest.raises(UserError) as caught:
        catalog.get("claude-9")
    message = str(caught.value)
    assert message.startswith("Unknown model 'claude-9'; the models are: ")
    assert "claude-sonnet-4-6" in message and "gpt-5" in message and "\n" not in message


def write(folder: Path, name: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("provider: x\nmodels: [{name: a, litellm_model: x/a}]\n", "give api_base"),
        ("provider: x\nkey_variable: lower\nmodels: [{name: a, litellm_model: x/a}]\n", "lower"),
        ("provider: x\nkey_variable: X_KEY\nmodels: []\n", "'models'"),
        ("provider: x\nkey_variable: X_KEY\nmodels: [{name: 'a b', litellm_model: m}]\n", "a b"),
        ("- not a mapping\n", "a model list is a mapping"),
    ],
)
def test_a_bad_model_list_names_its_file(tmp_path: Path, text: str, complaint: str) -> None:
    write(tmp_path, "bad.yaml", text)
    with pytest.raises(UserError) as caught:
        ModelCatalog.load(tmp_path)
    assert "bad.yaml" in str(caught.value) and complaint in str(caught.value)


def test_a_model_listed_twice_is_refused(tmp_path: Path) -> None:
    entry = "key_variable: K\nmodels: [{name: same, litellm_model: p/same}]\n"
    write(tmp_path, "a.yaml", "provider: a\n" + entry)
    write(tmp_path, "b.yaml", "provider: b\n" + entry)
    with pytest.raises(UserError, match="listed twice"):
        ModelCatalog.load(tmp_path)


def test_api_base_goes_into_the_configuration(tmp_path: Path) -> None:
    write(
        tmp_path,
        "local.yaml",
        "provider: local\nkey_variable: LOCAL_KEY\napi_base: http://model:8000/v1\n"
        "models:\n  - {name: coder, litellm_model: openai/coder}\n"
        "  - {name: other, litellm_model: openai/other, api_base: http://other/v1}\n",
    )
    entries = ModelCatalog.load(tmp_path).litellm_config()["model_list"]
    assert [(e["model_name"], e["litellm_params"]["api_base"]) for e in entries] == [
        ("coder", "http://model:8000/v1"),
        ("coder@responses-via-chat", "http://model:8000/v1"),
        ("other", "http://other/v1"),
        ("other@responses-via-chat", "http://other/v1"),
    ]


def test_an_openai_model_at_a_server_of_its_own_gets_a_responses_bridge(tmp_path: Path) -> None:
    write(
        tmp_path,
        "own.yaml",
        "provider: own\napi_base: http://model:8000/v1\nmodels:\n"
        "  - {name: chat-only, litellm_model: openai/served-name}\n"
        "  - {name: with-responses, litellm_model: openai/x, responses_api: native}\n"
        "  - {name: vllm, litellm_model: hosted_vllm/y}\n",
    )
    write(
        tmp_path,
        "openai.yaml",
        "provider: openai\nkey_variable: OPENAI_API_KEY\n"
        "models: [{name: g, litellm_model: openai/g}]\n",
    )
    entries = {
        e["model_name"]: e["litellm_params"]["model"]
        for e in ModelCatalog.load(tmp_path).litellm_config()["model_list"]
    }
    # Only the openai/ model at a server of its own, which did not say native, is bridged;
    # the bridge reaches the same served name as hosted_vllm/, which LiteLLM bridges.
    assert entries == {
        "chat-only": "openai/served-name",
        "chat-only@responses-via-chat": "hosted_vllm/served-name",
        "with-responses": "openai/x",
        "vllm": "hosted_vllm/y",
        "g": "openai/g",
    }


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("{name: m, litellm_model: openai/m, responses_api: bridge}", "responses_api is"),
        (
            "{name: m, litellm_model: anthropic/m, responses_api: chat-bridge}",
            "is for an openai/ model with an api_base",
        ),
    ],
)
def test_a_wrong_responses_api_is_one_line(tmp_path: Path, entry: str, message: str) -> None:
    write(tmp_path, "own.yaml", f"provider: own\napi_base: http://m:1/v1\nmodels: [{entry}]\n")
    with pytest.raises(UserError) as caught:
        ModelCatalog.load(tmp_path)
    assert message in str(caught.value) and "\n" not in str(caught.value)


KEYLESS_LIST = (
    "provider: own\napi_base: http://172.18.0.1:8000/v1\n"
    "models:\n  - {name: my-coder, litellm_model: openai/coder}\n"
)


def test_a_keyless_list_needs_no_variable_and_sends_a_placeholder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "own.yaml", KEYLESS_LIST)
    catalog = ModelCatalog.load(tmp_path)
    assert catalog.get("my-coder").key_variable is None
    entry, bridge = catalog.litellm_config()["model_list"]
    assert bridge["litellm_params"]["api_key"] == KEYLESS_API_KEY
    assert entry["litellm_params"] == {
        "model": "openai/coder",
        "api_key": KEYLESS_API_KEY,
        "api_base": "http://172.18.0.1:8000/v1",
    }
    # A run needs the master key, and no provider key at all.
    monkeypatch.setenv(MODELS_DIR_VARIABLE, str(tmp_path))
    monkeypatch.setenv("LITELLM_MASTER_KEY", "sk-master-abc")
    for variable in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    assert plan_model_access("my-coder", None, None).model == "my-coder"
    done = cli("proxy", "models", env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["my-coder\town\tno key"]
    done = cli("proxy", "models", "--json", env=dict(os.environ))
    assert yaml.safe_load(done.stdout)["models"][0]["key_variable"] is None


def test_a_keyless_model_without_an_address_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "own.yaml", "provider: own\nmodels: [{name: m, litellm_model: openai/m}]\n")
    with pytest.raises(UserError) as caught:
        ModelCatalog.load(tmp_path)
    assert str(caught.value) == (
        f"{tmp_path / 'own.yaml'}: a list without key_variable is for a server of your own: "
        "give api_base (for the file, or for model m)"
    )


def test_a_run_with_the_local_stack_needs_the_provider_key_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(MODELS_DIR_VARIABLE, str(ROOT / "models"))
    monkeypatch.setenv("LITELLM_MASTER_KEY", "sk-master-abc")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(UserError, match=r"\$ANTHROPIC_API_KEY"):
        plan_model_access("claude-sonnet-4-6", None, None)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "provider-secret")
    plan = plan_model_access("claude-sonnet-4-6", None, None)
    assert plan.budget == 10.0 and plan.endpoint is None
    assert "sk-master-abc" not in repr(plan)
    with pytest.raises(UserError, match="positive"):
        plan_model_access("claude-sonnet-4-6", 0, None)
    monkeypatch.delenv("LITELLM_MASTER_KEY")
    with pytest.raises(UserError, match="LITELLM_MASTER_KEY"):
        plan_model_access("claude-sonnet-4-6", None, None)


def test_a_backend_with_its_own_proxy_needs_no_provider_key_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LITELLM_MASTER_KEY", "sk-master-abc")
    for variable in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    own = ProxyEndpoint(host_url="http://127.0.0.1:1", service_url="http://litellm.ns.svc:4000")
    plan = plan_model_access("any-model-the-cluster-serves", 3, own)
    assert plan.endpoint == own and plan.catalog is None and plan.budget == 3


def cli(*arguments: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ssebench.cli.main", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_run_with_an_unknown_model_is_one_clear_line(tmp_path: Path) -> None:
    env = {**os.environ, "LITELLM_MASTER_KEY": "sk-master-abc"}
    done = cli(
        "run", "--local", str(PILOT_DATASET), "--task", "py-semver-prerelease",
        "--agent", "mini", "--model", "gpt-9", "--results", str(tmp_path), env=env,
    )  # fmt: skip
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ssebench: error: Unknown model 'gpt-9'")
    assert "claude-sonnet-4-6" in lines[0]
    assert not list(tmp_path.iterdir()), "nothing was started"


def test_run_of_mini_without_a_model_and_budget_without_model(tmp_path: Path) -> None:
    base = ["run", "--local", str(PILOT_DATASET), "--task", "py-semver-prerelease"]
    done = cli(*base, "--agent", "mini", env=dict(os.environ))
    assert done.returncode == 1 and "needs a model" in done.stderr
    done = cli(*base, "--agent", "dummy", "--budget", "3", env=dict(os.environ))
    assert done.returncode == 1 and "--budget" in done.stderr and "--model" in done.stderr


def test_proxy_models_and_config_commands() -> None:
    done = cli("proxy", "models", "--json", env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    names = [m["name"] for m in yaml.safe_load(done.stdout)["models"]]
    assert "claude-sonnet-4-6" in names
    done = cli("proxy", "config", env=dict(os.environ))
    assert done.returncode == 0
    assert yaml.safe_load(done.stdout) == ModelCatalog.load().litellm_config()
