"""One agent's requests as one growing conversation (chat clients' and agent frameworks' layout).

The first request is the system prompt (the team-wide preamble, then the agent's role) and one user turn;
every later request is the previous request, its reply as an assistant turn, and the new user turn, byte
for byte, so a server's prefix cache (llama.cpp slots, vLLM's automatic prefix caching, SGLang's radix
cache) prefills only what is new. What a method shows of an agent's memory (DyTopo eq. 3: every earlier
output and received message, arXiv 2602.06039 §3.1) is what the transcript holds: its own outputs are its
assistant turns, what it received arrives in the user turns.

Side requests (a re-ask, a call whose reply is not kept) read the conversation and add nothing to it; a
reply is appended only when the caller keeps it (``commit``). When the conversation outgrows its budget the
oldest turns go in one step, down to half the budget (``trim``): the prefix breaks once and then grows
again, and the caller reports what was dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from core.llm.tokens import estimate_tokens

Messages = list[dict[str, str]]

TRIMMED_NOTE = "[{turns} earlier turns of this conversation were dropped to fit the context]"


@dataclass
class Trimmed:
    """What one trim dropped: whole exchanges (a user turn and its reply) and their estimated tokens."""

    exchanges: int
    tokens: int


@dataclass
class Conversation:
    """An agent's system prompt and its kept exchanges, oldest first (user, assistant, user, assistant, ...)."""

    system: str
    turns: Messages = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)  # the round of each kept exchange
    dropped: int = 0  # exchanges dropped so far

    def request(self, user: str) -> Messages:
        """The next request: everything kept, then the new user turn."""
        return [{"role": "system", "content": self.system}, *self.turns, {"role": "user", "content": user}]

    def commit(self, user: str, reply: str, round_no: int) -> None:
        """Keep a user turn and the reply the caller kept for it (the next request begins with both)."""
        self.turns += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
        self.rounds.append(round_no)

    @property
    def exchanges(self) -> int:
        return len(self.turns) // 2

    def last_round(self) -> int:
        return self.rounds[-1] if self.rounds else 0

    def tokens(self, extra: str = "") -> int:
        """Estimated tokens of the kept conversation plus ``extra`` (about 4 characters a token)."""
        return estimate_tokens(self.system) + sum(estimate_tokens(t["content"]) + 4 for t in self.turns) + (
            estimate_tokens(extra))

    def chars(self, extra: str = "") -> int:
        return len(self.system) + sum(len(t["content"]) for t in self.turns) + len(extra)

    def trim(self, keep_tokens: int) -> Trimmed | None:
        """Drop the oldest exchanges, in one step, until the rest holds at most ``keep_tokens``; the first kept
        turn says how many went. None when nothing was dropped (nothing kept, or it already fits)."""
        return self._drop_while(lambda: self.tokens() > keep_tokens)

    def trim_chars(self, keep_chars: int) -> Trimmed | None:
        """As trim, measured in characters (a prompt that must fit a known context)."""
        return self._drop_while(lambda: self.chars() > keep_chars)

    def _drop_while(self, over: Callable[[], bool]) -> Trimmed | None:
        count, tokens = 0, 0
        while self.turns and over():
            user, reply = self.turns[:2]
            tokens += estimate_tokens(user["content"]) + estimate_tokens(reply["content"]) + 8
            del self.turns[:2]
            del self.rounds[:1]
            count += 1
        if not count:
            return None
        self.dropped += count
        if self.turns:  # the first kept turn says what is missing before it
            first = self.turns[0]
            note = TRIMMED_NOTE.format(turns=2 * self.dropped)
            body = first["content"]
            if body.startswith("[") and "earlier turns of this conversation were dropped" in body.split("\n", 1)[0]:
                body = body.split("\n", 1)[1] if "\n" in body else ""
            self.turns[0] = {"role": "user", "content": f"{note}\n{body}"}
        return Trimmed(count, tokens)
