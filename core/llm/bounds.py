"""How much and how long one streamed reply may take: a server that ignores max_tokens, or trickles, ends.

A reply is read up to about 1.5 × max_tokens content chunks (servers stream about a token a chunk) or the
characters so many tokens could hold, and for at most ``max_tokens / min_tokens_per_second`` seconds plus
one ``call_timeout`` for the first token. Past either bound the client stops reading and the reply is
taken as cut off at max_tokens (``finish_reason`` "length"), which callers already handle (a re-ask, or
the partial text), with one line saying which bound cut it.
"""

from __future__ import annotations

from dataclasses import dataclass

CHUNKS_PER_TOKEN = 1.5  # slack over max_tokens before a stream counts as not stopping
CHARS_PER_TOKEN = 8  # generous: a token of text or code is 3-5 characters on average


@dataclass(frozen=True)
class ReplyBound:
    max_tokens: int
    chunks: int
    chars: int
    seconds: float

    @classmethod
    def for_call(cls, max_tokens: int, min_tokens_per_second: float, first_token_wait: float) -> ReplyBound:
        most = max(1, max_tokens)
        return cls(
            max_tokens=most,
            chunks=max(8, round(CHUNKS_PER_TOKEN * most)),
            chars=max(64, round(CHUNKS_PER_TOKEN * most * CHARS_PER_TOKEN)),
            seconds=most / min_tokens_per_second + first_token_wait,
        )

    def overrun(self, chunks: int, chars: int) -> str:
        """The line to show when ``chunks`` content chunks or ``chars`` characters are past the bound."""
        if chunks <= self.chunks and chars <= self.chars:
            return ""
        return (f"the server kept streaming past max_tokens ({self.max_tokens}): cut off after {chunks} chunks "
                f"({chars:,} characters), as if at max_tokens")

    def too_slow(self, chunks: int, chars: int) -> str:
        return (f"the reply came slower than min_tokens_per_second allows: cut off after {self.seconds:.3g} s "
                f"({chunks} chunks, {chars:,} characters so far), as if at max_tokens ({self.max_tokens})")
