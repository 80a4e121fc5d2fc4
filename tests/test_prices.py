"""The price profiles (envs_data/prices) and what the ledger bills for each action at them."""

from __future__ import annotations

import dataclasses
import json

import gymnasium as gym
import pytest

from examples.toy_domain.domain import HERE as TOY_DIR
from examples.toy_domain.domain import ToyDomain
from harness_gym.core.actions import Action
from harness_gym.core.cost import COST_KEYS, estimate_tokens
from harness_gym.core.paths import data_path
from harness_gym.core.prices import BASE_ITEMS, PriceBook, PriceProfileError, price_profiles, price_table
from harness_gym.core.types import CheckResult, ToolCall
from harness_gym.env import HarnessEnv

A = Action


def test_every_price_has_its_source_and_the_date_it_was_read():
    for path in sorted(data_path("prices").glob("*.json")):
        raw = json.loads(path.read_text())
        assert raw["profile"] == path.stem and raw["description"]
        for item, entry in raw["items"].items():
            assert entry["source"] and entry["read"][:4].isdigit(), f"{path.name}: {item}"
            assert entry["usd"] == 0.0 or entry["source"] != "-", f"{path.name}: {item} is priced without a source"
        for key, entry in raw.get("billing", {}).items():
            assert entry["source"], f"{path.name}: billing.{key}"


def test_docs_cost_lists_every_price_with_its_source():
    doc = (data_path("..") / "docs" / "cost.md").read_text() if (data_path("..") / "docs").is_dir() else None
    if doc is None:
        pytest.skip("docs/ is not installed beside envs_data")
    for path in sorted(data_path("prices").glob("*.json")):
        for item, entry in json.loads(path.read_text())["items"].items():
            row = f"| {path.stem} | `{item}` | {entry['usd']:g} |"
            assert row in doc, f"docs/cost.md lacks the row of {path.stem} {item}"
            assert entry["source"] in doc and entry["read"] in doc


def test_profiles_resolve_with_their_default_retrieval_and_the_shared_services():
    cheap = price_table(None)
    assert cheap.name == "cheap-hosted" and cheap.retrieval == "local-index" and cheap.retrieval_mode == "index"
    assert set(BASE_ITEMS) <= set(cheap.usd) and {"api_call:fx_rates", "api_call:internal", "api_call:free"} <= set(
        cheap.usd)
    assert cheap.price("prompt_token") == 1.5e-7 and cheap.price("sandbox_request") == 2e-7
    assert cheap.sandbox_seconds_per_job == 0.1 and cheap.sandbox_gb == 1.0
    web = price_table("cheap-hosted+web-search")
    assert web.retrieval_mode == "search" and web.price("search_query") == 0.008 and web.price("index_query") == 0.0
    assert web.price("prompt_token") == cheap.price("prompt_token")
    local = price_table("self-hosted")
    assert local.retrieval == "self-hosted-index" and local.price("index_query") == 0.0
    assert price_table("frontier-hosted").price("completion_token") == 1.5e-5
    assert price_table("self-hosted+local-index").price("index_query") == cheap.price("index_query")
    assert "cheap-hosted" in price_profiles() and "self-hosted+web-search" in price_profiles()
    # the entries keep where they come from
    assert web.entries["search_query"].profile == "web-search" and "tavily" in web.entries["search_query"].source
    assert cheap.entries["db_query"].profile == "services"


def test_a_dict_is_prices_over_the_default_profile_or_the_one_it_names():
    table = price_table({"prompt_token": 0.0, "sandbox_seconds_per_job": 0.5})
    assert table.price("prompt_token") == 0.0 and table.price("completion_token") == 6e-7
    assert table.sandbox_seconds_per_job == 0.5 and table.entries["prompt_token"].source == "given by the caller"
    assert price_table({"profile": "frontier-hosted", "search_query": 1.0}).price("prompt_token") == 3e-6
    assert table.digest() != price_table(None).digest() == price_table("cheap-hosted+local-index").digest()


@pytest.mark.parametrize(("spec", "message"), [
    ("cheap-hostd", "unknown price profile 'cheap-hostd'; did you mean 'cheap-hosted'"),
    ("cheap-hosted+web-serch", "unknown overlay 'web-serch'; did you mean 'web-search'"),
    ("services", "'services' is a fragment, not a base profile"),
    ("web-search", "'web-search' is a retrieval overlay, not a base profile"),
    ({"prompt_tokens": 1.0}, "unknown item 'prompt_tokens'; did you mean 'prompt_token'"),
    ({"api_call:fx_rate": 1.0}, "did you mean 'api_call:fx_rates'"),
    ({"db_query": -1.0}, r"prices\['db_query'\]: must be a finite number >= 0"),
])
def test_unknown_profiles_and_items_are_named_with_the_closest(spec, message):
    with pytest.raises(PriceProfileError, match=message):
        price_table(spec)


def test_a_malformed_price_file_is_named(tmp_path):
    for path in data_path("prices").glob("*.json"):
        (tmp_path / path.name).write_text(path.read_text())
    raw = json.loads((tmp_path / "web-search.json").read_text())
    del raw["items"]["search_query"]["read"]
    (tmp_path / "web-search.json").write_text(json.dumps(raw))
    with pytest.raises(PriceProfileError, match=r"web-search.json: items.search_query: missing field\(s\) \['read'\]"):
        PriceBook(tmp_path)
    raw["items"]["search_query"]["read"] = "2026-12-02"
    raw["items"]["serch_query"] = raw["items"].pop("search_query")
    (tmp_path / "web-search.json").write_text(json.dumps(raw))
    with pytest.raises(PriceProfileError, match="items.serch_query: unknown billable item; did you mean 'search_query'"):
        PriceBook(tmp_path)


# ----- what each action bills ------------------------------------------------------------------------------
def test_retrieve_bills_one_query_in_the_profiles_retrieval_mode():
    for prices, expect in (("cheap-hosted", "index"), ("cheap-hosted+web-search", "search")):
        env = gym.make("HarnessPlan-v1", prices=prices, budget_units=None)
        env.reset(seed=0)
        cost = env.step(int(A.RETRIEVE))[4]["cost"]
        henv = env.unwrapped
        if expect == "index":
            tokens = estimate_tokens(henv.domain.query(henv.task))
            assert (cost["index_queries"], cost["search_queries"], cost["embedding_tokens"]) == (1, 0, tokens)
            assert cost["units"] == pytest.approx((1.6e-5 + tokens * 2e-8) / 1e-4)
        else:
            assert (cost["index_queries"], cost["search_queries"], cost["embedding_tokens"]) == (0, 1, 0)
            assert cost["units"] == pytest.approx(80.0)
        env.close()


class BilledToy(ToyDomain):
    """The toy domain with what a deployed version would pay: observations from an internal service, the tool
    an FX-rate API (one call on the declared bill, two when the result says so), the check a database query."""

    name = "toy"

    def __init__(self) -> None:
        super().__init__()
        self.tools = {name: dataclasses.replace(spec, bills={"api_call:fx_rates": 1})
                      for name, spec in self.tools.items()}

    def observe_bill(self, task, index):
        return {"api_call:internal": 1}

    def call_tool(self, task, call, ctx, sandbox, *, resource=None):
        result = super().call_tool(task, call, ctx, sandbox, resource=resource)
        return dataclasses.replace(result, billed={"api_call:fx_rates": 2}) if call.args.get("a") == 99 else result

    def check(self, task, draft, sandbox, *, resource=None):
        return dataclasses.replace(super().check(task, draft, sandbox), billed={"db_query": 3})


def billed_env(**kwargs) -> HarnessEnv:
    return HarnessEnv(BilledToy(), profile=str(TOY_DIR / "profiles" / "toy.json"), prompts_dir=str(TOY_DIR / "prompts"),
                      budget_units=None, **kwargs)


def run_tool_call(env: HarnessEnv, call: ToolCall) -> dict:
    env.worker.propose_tool_call = lambda ctx: call
    return env.step(int(A.TOOL))[4]["cost"]


def test_observe_tool_and_check_bill_what_the_domain_declares():
    env = billed_env()
    env.reset(seed=0, options={"task_id": "toy-0"})
    fx, internal, db = (env.prices.price(i) for i in ("api_call:fx_rates", "api_call:internal", "db_query"))
    cost = env.step(int(A.OBSERVE))[4]["cost"]
    assert cost["api_calls"] == 1 and cost["units"] == pytest.approx(internal / 1e-4)
    valid = run_tool_call(env, ToolCall("add", {"a": 3, "b": 1}))
    assert valid["api_calls"] == 1 and valid["units"] == pytest.approx(fx / 1e-4)  # the tool's declared bill
    rejected = run_tool_call(env, ToolCall("add", {"a": "three"}))  # the schema rejects it: never sent
    assert not env.context.tool_history[-1][1].ok and rejected["api_calls"] == 0 and rejected["units"] == 0.0
    own = run_tool_call(env, ToolCall("add", {"a": 99, "b": 1}))  # the result's own bill replaces the declared one
    assert own["api_calls"] == 2 and own["units"] == pytest.approx(2 * fx / 1e-4)
    env.step(int(A.DRAFT))
    check = env.step(int(A.CHECK))[4]["cost"]
    assert check["db_queries"] == 3 and check["units"] == pytest.approx(3 * db / 1e-4)
    assert tuple(check) == COST_KEYS
    submit = env.step(int(A.SUBMIT))[4]["cost"]
    assert submit["units"] == 0.0  # the hidden grader is evaluation, never billed
    assert env.episode_bill["api_call:fx_rates"] == 3 and env.episode_bill["db_query"] == 3
    env.close()


def test_an_unpriced_bill_is_an_error_naming_who_billed_it():
    domain = BilledToy()
    domain.tools = {n: dataclasses.replace(s, bills={"api_call:weather": 1}) for n, s in domain.tools.items()}
    with pytest.raises(PriceProfileError, match="toy: tool 'add': bills 'api_call:weather'"):
        HarnessEnv(domain, profile=str(TOY_DIR / "profiles" / "toy.json"), prompts_dir=str(TOY_DIR / "prompts"))
    env = billed_env()
    env.domain.check = lambda task, draft, sandbox, resource=None: CheckResult(True, "ok", billed={"db_queries": 1})
    env.reset(seed=0, options={"task_id": "toy-0"})
    env.step(int(A.DRAFT))
    with pytest.raises(PriceProfileError, match="the check of task toy-0: bills 'db_queries'.*did you mean 'db_query'"):
        env.step(int(A.CHECK))
    env.close()


def test_sandbox_jobs_bill_requests_and_gb_seconds():
    env = gym.make("HarnessCode-v1", budget_units=None)
    env.reset(seed=0)
    env.step(int(A.DRAFT))
    cost = env.step(int(A.CHECK))[4]["cost"]
    jobs, prices = cost["sandbox_jobs"], env.unwrapped.prices
    assert jobs >= 1 and cost["tool_seconds"] == pytest.approx(0.1 * jobs)
    assert cost["units"] == pytest.approx(jobs * (2e-7 + 0.1 * 1.0 * 1.66667e-5) / 1e-4)
    assert prices.units(prices.sandbox_bill(jobs)) == pytest.approx(cost["units"])
    env.close()


def test_a_profile_changes_what_an_episode_costs_not_what_happens():
    runs = {}
    for prices in ("cheap-hosted", "frontier-hosted", "self-hosted", "cheap-hosted+web-search"):
        env = gym.make("HarnessMultiTool-v1", prices=prices, budget_units=None)
        env.reset(seed=4)
        infos = [env.step(int(a))[4] for a in (A.OBSERVE, A.RETRIEVE, A.TOOL, A.DRAFT, A.CHECK, A.SUBMIT)]
        runs[prices] = ([i["cost"]["prompt_tokens"] for i in infos], infos[-1]["quality"],
                        sum(i["cost"]["units"] for i in infos))
        env.close()
    assert len({(tuple(tokens), q) for tokens, q, _ in runs.values()}) == 1
    cost = {p: c for p, (_, _, c) in runs.items()}
    assert cost["frontier-hosted"] > 10 * cost["cheap-hosted"] and cost["cheap-hosted"] > cost["self-hosted"] > 0
    assert cost["cheap-hosted+web-search"] - cost["cheap-hosted"] == pytest.approx(80.0, abs=0.5)
