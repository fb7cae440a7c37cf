"""One model call as every method makes it: the request, its parse, one re-ask, and the context's limits.

``ModelCalls.call_and_parse`` sends a prompt through the run's client (or an agent's own), streams its
text as AgentDelta events, parses the reply into the caller's contract and asks once more when it does not
parse or was cut off; it fits the prompt to a known context (``fit_context``) and retries once, smaller,
when the server refuses it as over its context (``after_overflow``). It also keeps the run's accounting:
calls started (the call budget), tokens (with how many are estimates), what they cost (the cost budget,
core.llm.prices) and replies parsed.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from core.llm.call_id import CallId
from core.llm.prices import CallCost, CostTally, Pricer, load_table, model_prices, usd_text
from core.llm.tokens import CutOffCost
from core.runtime import events as ev
from core.runtime.config import CallLimits, Settings
from core.runtime.context import Shrink, cut_text, prompt_chars
from core.runtime.faults import FailureStreak
from core.runtime.parsing import ParseError, ReplyTally, TemplateCopied, response_schema
from core.runtime.prompts import JSON_REPLY, repair_request
from core.runtime.rosters import Role

if TYPE_CHECKING:  # the openai SDK takes ~0.8 s to import: the launch form's first frame does not wait for it
    from core.llm.client import ChatResult, LLMClient


class CallOutcome(NamedTuple):
    """What call_and_parse ends with."""

    parsed: Any | None
    usage: Usage | None
    error: str
    unreachable: bool  # no later call can succeed either (the endpoint is down, refuses us, ...)
    overflow: bool = False  # the prompt does not fit the model's context, even trimmed


@dataclass(frozen=True)
class CallRequest:
    """One model call as a method asks for it (ModelCalls.call_and_parse).

    ``parser`` reads the reply into the caller's contract (ParseError: asked once more); ``client``: another
    endpoint or model for this call (e.g. a method's own orchestrator model); ``reply_format``: what a re-ask
    asks for (else the parser's own, else by ``json_mode``); ``shrink``: how the method trims this prompt
    (core.runtime.context) to fit a known context, and once when the server refuses it as over its context."""

    agent: str
    call: str
    messages: list[dict[str, str]]
    limits: CallLimits
    parser: Callable[[str], Any]
    json_mode: bool = True
    top_logprobs: int = 0
    client: LLMClient | None = None
    reply_format: str | None = None
    shrink: Shrink | None = None


@dataclass
class _Attempts:
    """One call's attempts so far: the client and limits it runs with, the method's prompt and a re-ask's
    turns after it, the usage summed, and which retries are spent."""

    request: CallRequest
    llm: LLMClient
    limits: CallLimits
    usage: Usage | None = None
    attempt: int = 1
    overflow_retried: bool = False
    base: list[dict[str, str]] = field(default_factory=list)
    extra: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.base = self.base or self.request.messages

    @property
    def decision(self) -> bool:
        return self.request.call in (ev.CallKind.PLAN, ev.CallKind.MANAGER)

    @property
    def reask_format(self) -> str:
        """The format this call's role must write, for a re-ask: the caller's, the parser's own, or by mode."""
        request = self.request
        return request.reply_format or getattr(request.parser, "reply_format", None) or (
            JSON_REPLY if request.json_mode else "your reply in the format you were asked for, shorter")


class CallHost(Protocol):
    """What a call needs of its run (the engine): the clients, the settings, the round, events and the
    call budget's stop."""

    settings: Settings
    round: int

    @property
    def llm(self) -> LLMClient: ...

    @property
    def agent_clients(self) -> Mapping[str, LLMClient]: ...

    def emit(self, event: ev.Event) -> None: ...

    def notice(self, message: str, severity: ev.SeverityName = ev.Severity.WARNING, agent: str = "") -> None: ...

    def stop_for_budget(self, why: str, *, let_running_finish: bool = False) -> None: ...


class ModelCalls:
    """The run's model calls and what they cost: one per run, owned by the engine."""

    def __init__(self, host: CallHost, roles: Mapping[str, Role], failures: FailureStreak) -> None:
        self.host = host
        self.roles = dict(roles)  # a team file's per-agent temperature and max_tokens (steering may replace one)
        self.calls_started = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        # Of those, how many are estimates (calls cut off in flight, servers that report no usage): RunFinished.
        self.estimated_tokens = 0
        # Of prompt_tokens, those the server took from its prefix cache (None: no reply said): RunFinished.
        self.cached_tokens: int | None = None
        self.reply_tally = ReplyTally()  # model calls that got a reply / that parsed, for RunFinished
        # What the app itself sent (prompts, re-asks): a final answer that merely echoes it is refused.
        self.sent_texts: deque[str] = deque(maxlen=400)
        self.failures = failures  # calls failed in a row (core.runtime.faults)
        settings = host.settings
        self.pricer = Pricer(model_prices(settings.prices), settings.price_local_endpoints)
        self.cost = CostTally()  # what the replies cost (USD) and the models no price was found for: RunFinished
        self._table_load: asyncio.Future[None] | None = None  # the price table, loading in a thread (load_table)

    async def call_and_parse(self, request: CallRequest) -> CallOutcome:
        """(parsed or None, usage summed over attempts, error text, connection failed, context overflow).
        A reply that does not parse, was cut off at max_tokens or copied the reply template is asked for once
        more, with the error (a copy counted apart). The endpoint is asked for the contract's JSON schema
        (core.runtime.parsing.response_schema). A prompt fits a known context from the start (the request's
        ``shrink``), and is trimmed once more when the server refuses it as over its context."""
        import openai  # loaded with the client already; not at the top (see TYPE_CHECKING above)

        host = self.host
        state = _Attempts(request, request.client or host.agent_clients.get(request.agent) or host.llm,
                          self._limits(request.agent, request.limits))
        # App-authored only: system prompts and re-asks (user messages also carry the team's own outputs).
        self.sent_texts.extend(str(m.get("content", "")) for m in request.messages if m.get("role") == "system")
        while True:
            sent, max_tokens = self._fit(state)
            self._within_budgets()
            self.calls_started += 1
            llm = state.llm
            if self._table_load is None and self.pricer.needs_table(llm.model, llm.base_url):
                self._table_load = asyncio.ensure_future(asyncio.to_thread(load_table))  # while this call is out
            try:
                chat = await self._send(state, sent, max_tokens)
            except openai.OpenAIError as exc:
                failed = self._failed(state, exc, sent, max_tokens)
                if failed is None:
                    continue  # asked once more, smaller
                return failed
            self.failures.replied()
            if chat.cut_short:
                host.notice(f"{request.agent}: {chat.cut_short}", "warning", request.agent)
            await self._account(state, chat)
            outcome = self._parsed(state, chat, max_tokens)
            if outcome is not None:
                return outcome

    def _limits(self, agent: str, limits: CallLimits) -> CallLimits:
        """A team file's per-agent temperature and max_tokens over the call's, then --max-tokens over all."""
        role = self.roles.get(agent)
        if role is not None and (role.temperature is not None or role.max_tokens is not None):
            limits = CallLimits(
                limits.temperature if role.temperature is None else role.temperature,
                limits.max_tokens if role.max_tokens is None else role.max_tokens,
            )
        cap = self.host.settings.max_tokens
        if cap is not None and limits.max_tokens > cap:
            limits = CallLimits(limits.temperature, cap)  # --max-tokens caps every call
        return limits

    def _fit(self, state: _Attempts) -> tuple[list[dict[str, str]], int]:
        """The messages to send and their max_tokens, within the model's context when it is known."""
        request, llm = state.request, state.llm
        state.base, sent, max_tokens, before = fit_context(llm, state.base, state.extra, request.shrink,
                                                           state.limits.max_tokens)
        if before:
            self.host.notice(f"{request.agent}: prompt trimmed to fit the model's context of {llm.context_size} "
                             f"tokens ({before} → {prompt_chars(sent)} characters, oldest messages first)", "info",
                             request.agent)
        return sent, max_tokens

    def _within_budgets(self) -> None:
        """The call and cost budgets: a call past either is never sent, and the run ends as "budget"."""
        host = self.host
        if host.settings.max_calls is not None and self.calls_started >= host.settings.max_calls:
            host.stop_for_budget(f"the budget of {host.settings.max_calls} model calls was reached",
                                 let_running_finish=True)
            raise asyncio.CancelledError
        max_cost = host.settings.max_cost
        if max_cost is not None and self.cost.usd >= max_cost:
            host.stop_for_budget(f"the cost budget of {usd_text(max_cost)} was reached ({usd_text(self.cost.usd)}"
                                 " spent)", let_running_finish=True)
            raise asyncio.CancelledError

    async def _send(self, state: _Attempts, sent: list[dict[str, str]], max_tokens: int) -> ChatResult:
        """One attempt, streamed as AgentDelta events; a cancel in flight still counts what it cost."""
        request, llm, host = state.request, state.llm, self.host
        agent, call = request.agent, request.call
        cut_off = CutOffCost()
        try:
            return await llm.chat(
                sent,
                temperature=state.limits.temperature,
                max_tokens=max_tokens,
                json_mode=request.json_mode,
                schema=response_schema(request.parser) if request.json_mode else None,
                on_delta=lambda text: host.emit(ev.AgentDelta(round=host.round, agent=agent, call=call, text=text)),
                on_retry=lambda message: self._retrying(agent, call, message),
                # A decision call is named by its kind, "Manager", whatever the team calls its Manager.
                call_id=CallId("Manager" if state.decision else agent, call, host.round),
                **({"top_logprobs": request.top_logprobs} if request.top_logprobs > 0 else {}),
                cut_off=cut_off,
            )
        except asyncio.CancelledError:
            self._count_cut_off(agent, call, cut_off, llm)
            raise

    def _failed(self, state: _Attempts, exc: Exception, sent: list[dict[str, str]],
                max_tokens: int) -> CallOutcome | None:
        """What an endpoint error ends the call with; None when a prompt over the context is asked for once
        more, trimmed. No later call can succeed when the server is gone, refuses the key, has no such model
        (a name it does not serve answers 404), never answers or rate-limits us."""
        from core.llm.client import endpoint_down
        from core.llm.overflow import context_overflow

        request, llm, host = state.request, state.llm, self.host
        agent = request.agent
        replied = state.usage is not None
        overflow = context_overflow(exc)
        if overflow is not None:
            self.failures.replied()  # the server answered: it is up
            retry = None if state.overflow_retried else after_overflow(
                llm, state.base, state.extra, request.shrink, state.limits.max_tokens, sent, max_tokens)
            if retry is not None:
                state.overflow_retried, state.base = True, retry[0]
                host.notice(f"{agent}: {overflow.describe()}; asking once more with {retry[1]}", "warning", agent)
                host.emit(ev.AgentStarted(round=host.round, agent=agent, call=request.call))
                return None
            self.reply_tally.count(replied=replied, parsed=False)
            why = "even after trimming it once" if state.overflow_retried else "and nothing in it can be trimmed"
            return CallOutcome(None, state.usage, f"{overflow.describe()}, {why}", False, True)
        unreachable = endpoint_down(exc)
        self.reply_tally.count(replied=replied, parsed=False)
        error = llm.describe_error(exc)
        if agent in host.agent_clients and request.client is None:  # say whose endpoint failed
            error = f"agent {agent} (model {llm.model or '?'} at {llm.shown_url}): {error}"
        ended = self.failures.failed(error)
        if ended:
            return CallOutcome(None, state.usage, ended, True)
        return CallOutcome(None, state.usage, error if unreachable else f"{error}; {self.failures.goes_on()}",
                           unreachable)

    async def _account(self, state: _Attempts, chat: ChatResult) -> None:
        """A reply's tokens and cost into the call's usage and the run's totals."""
        if self._table_load is not None:
            await asyncio.shield(self._table_load)  # a cancelled call must not cancel the shared load
        cost = self._charge(state.llm, chat.prompt_tokens, chat.completion_tokens, chat.cached_tokens)
        state.usage = Usage.add(state.usage, chat, cost)
        self.prompt_tokens += chat.prompt_tokens
        self.completion_tokens += chat.completion_tokens
        if chat.usage_estimated:
            self.estimated_tokens += chat.prompt_tokens + chat.completion_tokens
        if chat.cached_tokens is not None:
            self.cached_tokens = (self.cached_tokens or 0) + chat.cached_tokens

    def _parsed(self, state: _Attempts, chat: ChatResult, max_tokens: int) -> CallOutcome | None:
        """The reply parsed into the caller's contract, or the second failure; None: asked once more."""
        tally = self.reply_tally
        try:
            parsed = state.request.parser(chat.text)
            if chat.finish_reason == "length" and (state.decision or state.attempt == 1):
                # json-repair may complete a cut-off object: never take it as a decision, and ask a
                # worker once more before using what it got.
                raise ParseError(f"the reply was cut off at max_tokens ({max_tokens} tokens): be shorter")
            tally.count(replied=True, parsed=True)
            return CallOutcome(parsed, state.usage, "", False)
        except ParseError as exc:
            copied = isinstance(exc, TemplateCopied)  # counted apart: it parsed, but said nothing of its own
            if state.attempt == 2:
                tally.count(replied=True, parsed=False, copied=copied)
                return CallOutcome(None, state.usage, str(exc), False)
            state.attempt = 2
            self._retrying(state.request.agent, state.request.call,
                           "reply copied the reply template; asking again" if copied
                           else f"reply did not parse ({exc}); asking again")
            state.extra = [
                {"role": "assistant", "content": chat.text},
                {"role": "user", "content": repair_request(str(exc), state.reask_format)},
            ]
            self.sent_texts.append(state.extra[-1]["content"])
            return None

    def _charge(self, llm: LLMClient, prompt_tokens: int, completion_tokens: int, cached: int | None) -> CallCost:
        """Price one reply (core.llm.prices) into the run's cost; a model with no price is said once, the
        first time, since the cost budget cannot bound its calls."""
        cost = self.pricer.price(llm.model, llm.base_url, prompt_tokens, completion_tokens, cached)
        if cost.usd is None and cost.model not in self.cost.unknown:
            bound = " (--max-cost cannot bound its calls)" if self.host.settings.max_cost is not None else ""
            self.host.notice(f"cost: unknown for model {cost.model}: the price table has no such model; set its "
                             f"price in the config's [prices] table{bound}", "info")
        self.cost.add(cost)
        return cost

    def _count_cut_off(self, agent: str, call: str, cost: CutOffCost, llm: LLMClient) -> None:
        """A call cancelled in flight (the time budget, a cancel) still cost what the server did: its tokens
        go into the run's totals, and a notice records them (the call itself never finishes)."""
        if not cost.sent:
            return
        self.prompt_tokens += cost.prompt_tokens
        self.completion_tokens += cost.completion_tokens
        if cost.estimated:
            self.estimated_tokens += cost.tokens
        self._charge(llm, cost.prompt_tokens, cost.completion_tokens, None)
        self.host.notice(
            f"{agent}: {call} call cut off in flight; its {'~' if cost.estimated else ''}{cost.prompt_tokens} prompt "
            f"+ {cost.completion_tokens} completion tokens{' (estimated)' if cost.estimated else ''} are counted",
            "info", agent,
        )

    def _retrying(self, agent: str, call: str, message: str) -> None:
        self.host.notice(f"{agent}: {message}", "info", agent)
        # A fresh AgentStarted tells panes to clear the partial text of the attempt that failed.
        self.host.emit(ev.AgentStarted(round=self.host.round, agent=agent, call=call))


def fit_context(
    llm: LLMClient, base: list[dict[str, str]], extra: list[dict[str, str]], shrink: Shrink | None, max_tokens: int
) -> tuple[list[dict[str, str]], list[dict[str, str]], int, int]:
    """Plan a request within the model's context when it is known (llama.cpp's /props, or an earlier
    overflow error): the prompt keeps room for the reply (max_tokens, at most a quarter of it) and is
    trimmed by ``shrink`` when it does not; max_tokens never asks for more than the context leaves.
    (the method's prompt, the messages to send, max_tokens, the prompt's characters before a trim or 0)."""
    sent = [*base, *extra]
    n_ctx = llm.context_size
    if not n_ctx:
        return base, sent, max_tokens, 0
    margin = max(16, n_ctx // 32)  # the character estimate of a prompt's tokens is not exact
    limit = n_ctx - min(max_tokens, n_ctx // 4) - margin
    before = 0
    if shrink is not None and llm.estimate_prompt_tokens(sent) > limit:
        most = int((limit - 4 * len(sent)) * llm.chars_per_token) - prompt_chars(extra)
        smaller = shrink(max(0, most))
        if smaller is not None and prompt_chars(smaller) < prompt_chars(base):
            before, base = prompt_chars(sent), smaller
            sent = [*base, *extra]
    over = llm.estimate_prompt_tokens(sent) - limit
    if extra and over > 0:  # a re-ask: the reply it quotes is cut (it only shows what was wrong)
        reply = extra[0]["content"]
        keep = max(0, len(reply) - int(over * llm.chars_per_token))
        if keep < len(reply):
            before = before or prompt_chars(sent)
            sent = [*base, {**extra[0], "content": cut_text(reply, keep)}, *extra[1:]]
    room = n_ctx - llm.estimate_prompt_tokens(sent) - margin
    if room >= min(max_tokens, 32):
        max_tokens = min(max_tokens, room)
    return base, sent, max_tokens, before


def after_overflow(
    llm: LLMClient,
    base: list[dict[str, str]],
    extra: list[dict[str, str]],
    shrink: Shrink | None,
    max_tokens: int,
    sent: list[dict[str, str]],
    sent_max_tokens: int,
) -> tuple[list[dict[str, str]], str] | None:
    """The prompt to retry with after the server refused ``sent`` as over its context, and what changed;
    None when nothing can be made smaller. The client has learned what the error said (the context size,
    the prompt's tokens); without a context size the prompt is cut to half."""
    new_base, new_sent, new_max, _ = fit_context(llm, base, extra, shrink, max_tokens)
    if prompt_chars(new_sent) >= prompt_chars(sent) and new_max >= sent_max_tokens:
        smaller = shrink(prompt_chars(base) // 2) if shrink is not None else None
        if smaller is None:
            return None
        new_base, new_sent = smaller, [*smaller, *extra]
        new_max = fit_context(llm, new_base, extra, None, max_tokens)[2]
    changes = []
    if prompt_chars(new_sent) < prompt_chars(sent):
        changes.append(f"the prompt trimmed from {prompt_chars(sent)} to {prompt_chars(new_sent)} characters "
                       "(oldest messages first)")
    if new_max < sent_max_tokens:
        changes.append(f"max_tokens {new_max}")
    if not changes:
        return None
    return new_base, " and ".join(changes)


@dataclass
class Usage:
    """What one call cost, summed over its attempts (a re-ask, an overflow retry)."""

    prompt_tokens: int
    completion_tokens: int
    usage_estimated: bool
    latency_s: float
    attempts: int
    text: str  # the last attempt's text
    top_logprobs: list[list[float]] | None = None  # the last attempt's, when asked for
    cached_tokens: int | None = None  # from the server's prefix cache, summed; None when no attempt's reply said
    model: str = ""  # the model the call asked for (its price's name)
    cost_usd: float | None = None  # what its attempts cost (core.llm.prices); None: unknown (no price for the model)

    @staticmethod
    def add(total: Usage | None, chat: ChatResult, cost: CallCost | None = None) -> Usage:
        priced = cost.usd if cost is not None else None
        if total is None:
            return Usage(
                chat.prompt_tokens,
                chat.completion_tokens,
                chat.usage_estimated,
                chat.latency_s,
                chat.attempts,
                chat.text,
                chat.top_logprobs,
                chat.cached_tokens,
                cost.model if cost is not None else "",
                priced,
            )
        cached = total.cached_tokens
        if chat.cached_tokens is not None:
            cached = (cached or 0) + chat.cached_tokens
        summed = None if total.cost_usd is None or priced is None else total.cost_usd + priced
        return Usage(
            total.prompt_tokens + chat.prompt_tokens,
            total.completion_tokens + chat.completion_tokens,
            total.usage_estimated or chat.usage_estimated,
            total.latency_s + chat.latency_s,
            total.attempts + chat.attempts,
            chat.text,
            chat.top_logprobs,
            cached,
            total.model,
            summed,
        )


class CallResult(Protocol):
    """What a finished call produced, as the engine keeps it (core.runtime.engine.AgentResult)."""

    agent: str
    status: ev.CallStatus
    public: str
    private: dict[str, str]
    query: str
    key: str
    answer: str
    raw: str
    error: str


def finished_event(round_no: int, call: str, result: CallResult, chat: Usage | None) -> ev.AgentFinished:
    """The AgentFinished of one call: its result, and what it cost over its attempts (nothing without a reply)."""
    return ev.AgentFinished(
        round=round_no,
        agent=result.agent,
        call=call,
        status=result.status,
        public=result.public,
        private=result.private,
        query=result.query,
        key=result.key,
        answer=result.answer,
        raw=result.raw,
        error=result.error,
        prompt_tokens=chat.prompt_tokens if chat else 0,
        completion_tokens=chat.completion_tokens if chat else 0,
        usage_estimated=chat.usage_estimated if chat else False,
        latency_s=round(chat.latency_s, 4) if chat else 0.0,
        attempts=chat.attempts if chat else 1,
        cached_tokens=chat.cached_tokens if chat else None,
        model=chat.model if chat else "",
        cost_usd=chat.cost_usd if chat else None,
    )
