"""What a model call costs, in US dollars: the user's own price, else the maintained ``genai-prices`` table.

A leaf (it knows nothing of runs): the run's call path (core.runtime.calls) prices each reply with a
``Pricer`` and sums the results in a ``CostTally``; every face shows the total with ``cost_text``.

* A model the user priced (the config's ``[prices.MODEL]`` table, USD per million tokens) costs that, on any
  endpoint.
* A local server (loopback, a private address, ``localhost``, ``*.local``) is free: the same model name on
  one's own machine costs nothing. ``price_local_endpoints`` prices it from the table anyway (a local proxy
  in front of a hosted API, e.g. LiteLLM).
* Otherwise the ``genai-prices`` table (pydantic/genai-prices), matched by the endpoint's URL and the model
  name, with the server's cached prompt tokens at the table's cache-read rate where it has one. A model the
  table does not know is *unknown*, never guessed: the faces say "cost: unknown for model X".

The table ships inside the package (no download at run time); upgrading the package updates it
(``pip install -U genai-prices``; docs/configuration.md says which version is pinned).
"""

from __future__ import annotations

import ipaddress
import math
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

PER_MILLION = 1_000_000


class PriceSource(StrEnum):
    """Where a call's price came from."""

    USER = "user"  # the config's [prices.MODEL]
    TABLE = "table"  # genai-prices
    LOCAL = "local"  # a local server: free
    UNKNOWN = "unknown"  # no price: the table lacks the model


@dataclass(frozen=True)
class ModelPrice:
    """A user's price for one model, in US dollars per million tokens; ``cached_input`` for prompt tokens the
    server took from its prefix cache (None: they cost ``input``)."""

    input: float
    output: float
    cached_input: float | None = None

    def cost(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int | None) -> float:
        cached = min(cached_tokens or 0, prompt_tokens) if self.cached_input is not None else 0
        return ((prompt_tokens - cached) * self.input + cached * (self.cached_input or 0.0)
                + completion_tokens * self.output) / PER_MILLION


PRICE_KEYS = ("input", "output", "cached_input")


class PriceError(ValueError):
    """A user's price table that cannot be used; the message is one line."""


def model_prices(table: Mapping[str, Any], source: str = "[prices]") -> dict[str, ModelPrice]:
    """The config's ``[prices.MODEL]`` tables, checked: ``input`` and ``output`` required, ``cached_input``
    optional, each a finite number of US dollars per million tokens, 0 or more."""
    out: dict[str, ModelPrice] = {}
    for model, values in table.items():
        where = f"{source}: [prices.{model!r}]" if source else f"[prices.{model!r}]"
        if not isinstance(values, Mapping):
            raise PriceError(f"{where} must be a table with input, output (and cached_input), USD per million tokens")
        extra = set(values) - set(PRICE_KEYS)
        if extra:
            raise PriceError(f"{where}: unknown key {sorted(extra)[0]!r} (use {', '.join(PRICE_KEYS)})")
        for key in ("input", "output"):
            if key not in values:
                raise PriceError(f"{where} needs {key} (USD per million tokens)")
        for key, value in values.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise PriceError(f"{where}: {key} must be a number of USD per million tokens, 0 or more, got {value!r}")
        cached = values.get("cached_input")
        out[str(model)] = ModelPrice(float(values["input"]), float(values["output"]),
                                     None if cached is None else float(cached))
    return out


def is_local_url(base_url: str) -> bool:
    """A server on this machine or its network (loopback, private, link-local, ``localhost``, ``*.local``)."""
    try:
        host = (urlsplit(base_url).hostname or "").lower()
    except ValueError:
        return False
    if host in ("localhost", "") or host.endswith((".localhost", ".local")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


@dataclass(frozen=True)
class CallCost:
    """One call's price: ``usd`` None when unknown."""

    usd: float | None
    source: PriceSource
    model: str


def load_table() -> None:
    """Load the genai-prices table: about 2 s of imports, so the run does it in a thread while its first
    request is out (core.runtime.calls), never on the event loop and never before a run's first request."""
    import genai_prices

    genai_prices.data_snapshot.get_snapshot()


def table_loaded() -> bool:
    return "genai_prices.data" in sys.modules


def _table_price(model: str, base_url: str | None, prompt: int, completion: int, cached: int | None) -> float | None:
    """The genai-prices table's price, or None when it knows no such model (by URL first, then by name)."""
    import genai_prices  # loaded already by load_table, in a thread (see there)

    usage = genai_prices.Usage(input_tokens=prompt, output_tokens=completion,
                               cache_read_tokens=min(cached or 0, prompt))
    for url in ((base_url, None) if base_url else (None,)):
        try:
            found = genai_prices.calc_price(usage, model, provider_api_url=url)
        except LookupError:
            continue
        return float(found.total_price)
    return None


@dataclass
class Pricer:
    """Prices calls by the rules in the module's docstring; one per run."""

    prices: Mapping[str, ModelPrice] = field(default_factory=dict)
    price_local: bool = False  # price local endpoints from the table too

    def needs_table(self, model: str, base_url: str) -> bool:
        """Whether pricing this model at this endpoint reads the genai-prices table (not loaded yet)."""
        return (model not in self.prices and bool(model) and (self.price_local or not is_local_url(base_url))
                and not table_loaded())

    def price(self, model: str, base_url: str, prompt_tokens: int, completion_tokens: int,
              cached_tokens: int | None = None) -> CallCost:
        own = self.prices.get(model)
        if own is not None:
            return CallCost(own.cost(prompt_tokens, completion_tokens, cached_tokens), PriceSource.USER, model)
        local = is_local_url(base_url)
        if local and not self.price_local:
            return CallCost(0.0, PriceSource.LOCAL, model)
        if not model:
            return CallCost(None, PriceSource.UNKNOWN, "?")
        usd = _table_price(model, None if local else base_url, prompt_tokens, completion_tokens, cached_tokens)
        return CallCost(usd, PriceSource.TABLE if usd is not None else PriceSource.UNKNOWN, model)


@dataclass
class CostTally:
    """A run's cost so far: the priced calls' sum, the models no price was found for, and whether a call went
    to a local server (free), so the faces can say "free (local server)" rather than "$0"."""

    usd: float = 0.0
    unknown: set[str] = field(default_factory=set)
    local: bool = False

    def add(self, cost: CallCost) -> None:
        self.local = self.local or cost.source == PriceSource.LOCAL
        if cost.usd is None:
            self.unknown.add(cost.model)
        else:
            self.usd += cost.usd


def usd_text(usd: float) -> str:
    """Dollars as every face shows them: "$0", "$0.000042", "$0.0123", "$1.25" (a small sum keeps its digits)."""
    if usd == 0:
        return "$0"
    if usd >= 1:
        return f"${usd:.2f}"
    if usd >= 0.01:
        return f"${usd:.4f}"
    text = f"{usd:.6f}".rstrip("0").rstrip(".")
    return f"${text}" if text != "0" else "<$0.000001"


FREE_LOCAL = "free (local server)"  # every face's word for a run whose calls went to a local server, unpriced


def cost_cell(usd: float | None, unknown: Iterable[str] = (), local: bool = False) -> str:
    """A run's cost in a table cell: "$0.0042", "unknown (model X)", "free (local server)" (``local``: its calls
    went to a local server and nothing was priced; the run header shows nothing then), or "—" (not recorded)."""
    missing = sorted(unknown)
    if missing:
        return f"unknown ({', '.join(missing)})"
    if usd is None:
        return "—"
    return FREE_LOCAL if local and usd == 0 else usd_text(usd)


def cost_text(usd: float | None, unknown: Iterable[str] = (), local: bool = False) -> str:
    """A run's cost in one phrase: "cost $0.0042", "cost: unknown for model X" (with what the priced calls
    cost, when any did), "cost: free (local server)" (as ``cost_cell``), or "cost not recorded" (a session
    saved before costs were kept)."""
    missing = sorted(unknown)
    if missing:
        priced = f" (the rest {usd_text(usd)})" if usd else ""
        return f"cost: unknown for model {', '.join(missing)}{priced}"
    if usd is None:
        return "cost not recorded"
    return f"cost: {FREE_LOCAL}" if local and usd == 0 else f"cost {usd_text(usd)}"
