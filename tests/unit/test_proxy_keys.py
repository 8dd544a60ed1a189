"""The key client and a run's model session, against a stand-in of LiteLLM's admin API."""

from __future__ import annotations

import hashlib
import io
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench.agents import load_agent
from ssebench.evaluation.matrix import Limits, MatrixEntry
from ssebench.evaluation.scheduler import Evaluation
from ssebench.extensions import ProxyEndpoint
from ssebench.proxy import ModelAccessPlan, ProxyClient, ProxyError, open_model_session
from ssebench.proxy.session import MASTER_KEY_FOR_RUNS_VARIABLE
from ssebench.runner import Runner, RunSettings
from ssebench.tasks import load_dataset
from ssebench.testing.fake import STATE_VARIABLE, FakeBackend
from tests.conftest import TINY_DATASET
from tests.fixtures.litellm_admin_standin import StandIn, litellm_standin
from tests.unit.test_runner import GoneTerminal, RecordingBackend, settings

MASTER = "sk-master-9f8e7d6c5b4a"
MODEL = "claude-sonnet-4-6"


@pytest.fixture
def proxy() -> Iterator[StandIn]:
    with litellm_standin(MASTER, [MODEL, "gpt-5"]) as state:
        yield state


def endpoint(state: StandIn) -> ProxyEndpoint:
    return ProxyEndpoint(host_url=state.url, service_url="http://litellm:4000")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_key_is_limited_to_the_model_and_the_budget(proxy: StandIn) -> None:
    client = ProxyClient(proxy.url, MASTER)
    key = client.generate_key(MODEL, 2.5, "run-7")
    assert key.managed and key.model == MODEL and key.budget == 2.5
    stored = proxy.keys[key.hashed]
    assert stored["models"] == [MODEL]
    assert stored["max_budget"] == 2.5
    assert stored["key_alias"] == "ssebench-run-7"
    assert [r.path for r in proxy.requests] == ["/v1/models", "/key/generate"]
    assert all(r.authorization == f"Bearer {MASTER}" for r in proxy.requests)


def test_secrets_are_in_no_repr(proxy: StandIn) -> None:
    client = ProxyClient(proxy.url, MASTER)
    session = open_model_session(
        endpoint(proxy), MASTER, model=MODEL, budget=10, run_id="r", say=lambda m: None
    )
    secret = session.key.secret
    for shown in (repr(client), repr(session), repr(session.key), str(session.key)):
        assert MASTER not in shown and secret not in shown
    assert session.env() == {
        "SSE_BASE_URL": "http://litellm:4000",
        "SSE_API_KEY": secret,
        "SSE_MODEL_NAME": MODEL,
    }


def test_spend_and_revocation_name_the_key_by_its_hash(proxy: StandIn) -> None:
    said: list[str] = []
    session = open_model_session(
        endpoint(proxy), MASTER, model=MODEL, budget=10, run_id="r", say=said.append
    )
    secret = session.key.secret
    proxy.set_spend(session.key.hashed, 0.1234)
    spend = session.finish(said.append)
    assert spend is not None and spend.usd == pytest.approx(0.1234) and not spend.exceeded
    assert proxy.keys == {}, "the key is revoked"
    after = proxy.requests[2:]
    assert [r.path for r in after] == ["/key/info", "/key/delete"]
    assert after[0].query == {"key": [hashlib.sha256(secret.encode()).hexdigest()]}
    for request in after:
        assert secret not in request.raw and secret not in json.dumps(request.query)
    assert any("0.1234 USD of a 10 USD budget" in line for line in said)
    assert session.finish(said.append) is None, "finish runs once"
    assert len(proxy.requests) == 4
    assert not any(secret in line or MASTER in line for line in said)


def test_over_budget_is_reported(proxy: StandIn) -> None:
    said: list[str] = []
    session = open_model_session(
        endpoint(proxy), MASTER, model=MODEL, budget=1, run_id="r", say=said.append
    )
    proxy.set_spend(session.key.hashed, 1.02)
    spend = session.finish(said.append)
    assert spend is not None and spend.exceeded
    assert "budget exceeded" in said[-1]


def test_a_proxy_that_refuses_new_keys_over_budget(proxy: StandIn) -> None:
    proxy.refuse_budget = True
    with pytest.raises(ProxyError) as caught:
        ProxyClient(proxy.url, MASTER).generate_key(MODEL, 10, "r")
    assert caught.value.reason == "budget"
    assert "over budget" in str(caught.value)


def test_an_unknown_model_lists_what_the_proxy_serves(proxy: StandIn) -> None:
    with pytest.raises(ProxyError) as caught:
        ProxyClient(proxy.url, MASTER).generate_key("gpt-9", 10, "r")
    assert caught.value.reason == "model"
    assert "'gpt-9'" in str(caught.value) and f"{MODEL}, gpt-5" in str(caught.value)
    assert [r.path for r in proxy.requests] == ["/v1/models"], "no key is made"


def test_a_bridged_model_gets_a_key_for_both_entries_and_the_run_the_bridge(
    proxy: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A chat-only server's model, as `ssebench proxy config` writes it (models.py).
    proxy.models[:] = ["coder", "coder@responses-via-chat"]
    client = ProxyClient(proxy.url, MASTER)
    assert client.offered_models() == ["coder"]
    session = open_model_session(
        endpoint(proxy), MASTER, model="coder", budget=10, run_id="r", say=lambda m: None
    )
    assert proxy.keys[session.key.hashed]["models"] == ["coder", "coder@responses-via-chat"]
    assert session.env()["SSE_RESPONSES_MODEL_NAME"] == "coder@responses-via-chat"
    # The bridge entry is not a model to run with, and is not offered in the refusal.
    with pytest.raises(ProxyError) as caught:
        client.generate_key("coder@responses-via-chat", 10, "r")
    assert caught.value.reason == "model" and str(caught.value).count("coder") == 2
    # A master-key run (no database) is told of the bridge as well.
    proxy.database = False
    monkeypatch.setenv(MASTER_KEY_FOR_RUNS_VARIABLE, "1")
    session = open_model_session(
        endpoint(proxy), MASTER, model="coder", budget=10, run_id="r", say=lambda m: None
    )
    assert session.env()["SSE_RESPONSES_MODEL_NAME"] == "coder@responses-via-chat"


def test_a_key_refused_for_its_model(proxy: StandIn) -> None:
    # A proxy whose model list and key checks disagree: the refusal is reported.
    proxy.models.append("gpt-9")
    client = ProxyClient(proxy.url, MASTER)
    proxy.models.remove("gpt-9")
    client.check_model = lambda model: None  # type: ignore[method-assign]
    with pytest.raises(ProxyError) as caught:
        client.generate_key("gpt-9", 10, "r")
    assert caught.value.reason == "model" and caught.value.status == 400


def test_a_proxy_that_is_down() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ProxyError) as caught:
        ProxyClient(url, MASTER, timeout=5).generate_key(MODEL, 10, "r")
    assert caught.value.reason == "down"
    assert "does not answer" in str(caught.value) and "ssebench proxy up" in str(caught.value)


def test_a_bad_master_key_is_named_but_never_shown(proxy: StandIn) -> None:
    wrong = "sk-wrong-master-1234567890"
    with pytest.raises(ProxyError) as caught:
        ProxyClient(proxy.url, wrong).generate_key(MODEL, 10, "r")
    assert caught.value.reason == "auth" and caught.value.status == 401
    message = str(caught.value)
    assert "LITELLM_MASTER_KEY" in message
    assert wrong not in message and wrong[-4:] not in message and MASTER not in message


def test_an_empty_master_key_is_refused_before_any_request() -> None:
    with pytest.raises(ProxyError.__mro__[1]):  # UserError
        ProxyClient("http://127.0.0.1:9", "")


def test_a_proxy_without_database_refuses_unless_the_run_may_use_the_master_key(
    proxy: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy.database = False
    monkeypatch.delenv(MASTER_KEY_FOR_RUNS_VARIABLE, raising=False)
    with pytest.raises(ProxyError) as caught:
        open_model_session(
            endpoint(proxy), MASTER, model=MODEL, budget=10, run_id="r", say=lambda m: None
        )
    assert caught.value.reason == "no_database"
    assert MASTER_KEY_FOR_RUNS_VARIABLE in str(caught.value)
    assert "only master-key runs work" in str(caught.value) and "\n" not in str(caught.value)
    assert "whole master key" in str(caught.value) and "never revoked" in str(caught.value)
    monkeypatch.setenv(MASTER_KEY_FOR_RUNS_VARIABLE, "1")
    said: list[str] = []
    session = open_model_session(
        endpoint(proxy), MASTER, model=MODEL, budget=10, run_id="r", say=said.append
    )
    assert not session.key.managed and session.env()["SSE_API_KEY"] == MASTER
    count = len(proxy.requests)
    assert session.finish(said.append) is None
    assert len(proxy.requests) == count, "nothing to read or revoke"
    assert not any(MASTER in line for line in said)


def test_a_wrong_master_key_for_runs_is_an_error_naming_the_key(
    proxy: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a database the proxy answers a wrong key as if the database were the
    problem: the run must not get that key (every model call would fail, graded as a
    failed task); the session refuses to open, naming the master key."""
    proxy.database = False
    monkeypatch.setenv(MASTER_KEY_FOR_RUNS_VARIABLE, "1")
    wrong = "sk-wrong-master-1234567890"
    with pytest.raises(ProxyError) as caught:
        open_model_session(
            endpoint(proxy), wrong, model=MODEL, budget=10, run_id="r", say=lambda m: None
        )
    assert caught.value.reason == "auth"
    message = str(caught.value)
    assert "did not accept the master key" in message and "LITELLM_MASTER_KEY" in message
    assert wrong not in message and wrong[-4:] not in message and MASTER not in message
    assert [r.path for r in proxy.requests] == ["/v1/models", "/v1/models"]


def test_an_evaluation_with_a_wrong_master_key_records_an_error_naming_it(
    proxy: StandIn, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The task is an error naming the key, not a failed task (the agent never ran)."""
    proxy.database = False
    monkeypatch.setenv(MASTER_KEY_FOR_RUNS_VARIABLE, "1")
    monkeypatch.setenv(STATE_VARIABLE, str(tmp_path / "fake-state"))
    task = load_dataset(TINY_DATASET).task("tiny-add")
    plan = ModelAccessPlan(
        model=MODEL, budget=10, endpoint=endpoint(proxy), catalog=None, master_key="sk-wrong-1"
    )
    entry = MatrixEntry("dummy", MODEL)
    job = Evaluation(
        FakeBackend(),
        [task],
        lambda run: RunSettings(
            task=run.task,
            agent=load_agent("dummy"),
            model=MODEL,
            run_id="wrong-key-1",
            results_root=tmp_path / "results",
            backend="fake",
        ),
        entries=[entry],
        results_root=tmp_path / "results",
        limits=Limits.for_jobs(1),
        log=io.StringIO(),
        model_access={entry: plan},
    )
    job.run()
    [run] = job.runs
    assert run.status == "error"
    assert run.error_msg is not None and "did not accept the master key" in run.error_msg
    assert "sk-wrong-1" not in json.dumps(job.report({}))


def test_a_revocation_the_proxy_does_not_confirm_is_reported(proxy: StandIn) -> None:
    proxy.confirm_delete = False
    said: list[str] = []
    session = open_model_session(
        endpoint(proxy), MASTER, model=MODEL, budget=10, run_id="r", say=said.append
    )
    session.finish(said.append)
    assert "could not revoke" in said[-1]


def test_the_runner_records_the_spend_and_revokes_the_key(proxy: StandIn, tmp_path: Path) -> None:
    session = open_model_session(
        endpoint(proxy), MASTER, model=MODEL, budget=10, run_id="run-1", say=lambda m: None
    )
    proxy.set_spend(session.key.hashed, 0.5)
    out = io.StringIO()
    runner = Runner(RecordingBackend(), out=out)
    run_settings = settings(tmp_path, agent="dummy", model=MODEL, model_env=session.env())
    outcome = runner.run(run_settings, runner.prepare(run_settings), model_session=session)
    assert outcome.summary["spend"] == 0.5
    assert json.loads((outcome.run_dir / "summary.json").read_text())["spend"] == 0.5
    assert proxy.keys == {}
    written = [p.read_text() for p in outcome.run_dir.rglob("*") if p.is_file()]
    assert not any(session.key.secret in text for text in [*written, out.getvalue()])


def test_the_runner_revokes_the_key_when_its_terminal_is_gone(
    proxy: StandIn, tmp_path: Path
) -> None:
    """`ssebench run --model ... 2>&1 | head`: the runner's first line after the reader
    left used to raise, and the key, whose revocation says a line first, stayed valid."""
    session = open_model_session(
        endpoint(proxy), MASTER, model=MODEL, budget=10, run_id="run-1", say=lambda m: None
    )
    proxy.set_spend(session.key.hashed, 0.25)
    runner = Runner(RecordingBackend(), out=GoneTerminal())
    run_settings = settings(tmp_path, agent="dummy", model=MODEL, model_env=session.env())
    outcome = runner.run(run_settings, runner.prepare(run_settings), model_session=session)
    assert proxy.keys == {}
    assert outcome.summary["spend"] == 0.25


def test_the_runner_revokes_the_key_when_the_backend_fails(proxy: StandIn, tmp_path: Path) -> None:
    session = open_model_session(
        endpoint(proxy), MASTER, model=MODEL, budget=10, run_id="run-1", say=lambda m: None
    )
    runner = Runner(RecordingBackend(fail_in="start"), out=io.StringIO())
    run_settings = settings(tmp_path, agent="dummy", model=MODEL, model_env=session.env())
    with pytest.raises(Exception, match="injected"):
        runner.run(run_settings, runner.prepare(run_settings), model_session=session)
    assert proxy.keys == {}
    summary = json.loads(next((tmp_path / "results").rglob("summary.json")).read_text())
    assert summary["spend"] == 0.0 and summary["status"] == "error"
