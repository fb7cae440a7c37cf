"""What a call costs (core.llm.prices): the genai-prices table for hosted models, cached input at its own rate,
the user's prices first, local servers free, and an unknown model said to be unknown, never guessed."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.llm.prices import CostTally, ModelPrice, Pricer, PriceSource, cost_cell, cost_text, is_local_url
from core.runtime.config import ConfigError
from core.runtime.config_file import load_config_file

OPENAI = "https://api.openai.com/v1"


def test_the_table_prices_a_hosted_model_and_cached_input_costs_less() -> None:
    pricer = Pricer()
    plain = pricer.price("gpt-4o-mini", OPENAI, 100_000, 1_000, None)
    cached = pricer.price("gpt-4o-mini", OPENAI, 100_000, 1_000, 80_000)
    assert plain.source is PriceSource.TABLE and plain.usd is not None and plain.usd > 0
    assert cached.usd is not None and 0 < cached.usd < plain.usd  # the table's cache-read rate, not the input rate
    more = pricer.price("gpt-4o-mini", OPENAI, 200_000, 2_000, None)
    assert more.usd == pytest.approx(2 * plain.usd)


def test_a_local_server_is_free_unless_the_user_prices_it() -> None:
    local = "http://127.0.0.1:8080/v1"
    assert Pricer().price("gpt-4o-mini", local, 10_000, 100).usd == 0.0
    assert (Pricer(price_local=True).price("gpt-4o-mini", local, 10_000, 100).usd or 0) > 0
    own = Pricer({"qwen3:8b": ModelPrice(input=1.0, output=2.0, cached_input=0.5)})
    cost = own.price("qwen3:8b", local, 1_000_000, 500_000, 400_000)
    assert cost.source is PriceSource.USER and cost.usd == pytest.approx(0.6 + 0.2 + 1.0)


def test_a_free_local_run_is_said_free_and_a_priced_zero_stays_a_number() -> None:
    tally = CostTally()
    tally.add(Pricer().price("gpt-4o-mini", "http://127.0.0.1:8080/v1", 10_000, 100))
    assert tally.local and tally.usd == 0
    assert cost_text(tally.usd, tally.unknown, tally.local) == "cost: free (local server)"
    assert cost_cell(tally.usd, tally.unknown, tally.local) == "free (local server)"
    # A user's price of 0 on a hosted endpoint is a price, not a local server; a run saved before costs says so.
    own = CostTally()
    own.add(Pricer({"m": ModelPrice(0.0, 0.0)}).price("m", OPENAI, 10, 10))
    assert not own.local and cost_text(own.usd, own.unknown, own.local) == "cost $0"
    assert cost_cell(None, (), True) == "—" and cost_text(None, (), True) == "cost not recorded"
    # A local call beside a priced hosted one: the sum is what it cost.
    tally.add(Pricer().price("gpt-4o-mini", OPENAI, 10_000, 100))
    assert cost_text(tally.usd, tally.unknown, tally.local).startswith("cost $0.0")


@pytest.mark.parametrize("url", ["http://localhost:1234/v1", "http://192.168.1.9:8000/v1", "http://[::1]:8000/v1",
                                 "http://gpu.local:8000/v1"])
def test_local_addresses_are_local(url: str) -> None:
    assert is_local_url(url) and not is_local_url(OPENAI)


def test_an_unknown_model_is_unknown_never_guessed() -> None:
    cost = Pricer().price("no-such-model-xyz", OPENAI, 1_000, 100)
    assert cost.usd is None and cost.source is PriceSource.UNKNOWN
    tally = CostTally()
    tally.add(cost)
    tally.add(Pricer().price("gpt-4o-mini", OPENAI, 1_000, 100))
    text = cost_text(tally.usd, tally.unknown)
    assert text.startswith("cost: unknown for model no-such-model-xyz") and "$" in text


def test_prices_in_the_config_file_are_read_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[swarm]\nmax_cost = 0.5\n\n[prices."my-model"]\ninput = 0.2\noutput = 0.8\n', encoding="utf-8")
    values = load_config_file(path)
    assert values["max_cost"] == 0.5 and values["prices"] == {"my-model": {"input": 0.2, "output": 0.8}}
    path.write_text('[prices."my-model"]\ninput = -1\noutput = 0.8\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"input must be a number of USD per million tokens, 0 or more, got -1"):
        load_config_file(path)
    path.write_text('[prices."my-model"]\nprompt = 1\noutput = 0.8\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown key 'prompt'"):
        load_config_file(path)
