"""One agent's pane: status badge, latest query/key, tokens and latency, streamed then final text.

While a call streams, the text goes into a StreamView (cheap appends); once the agent has finished,
its public output is shown once as Markdown, so code blocks are highlighted.
"""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import ContentSwitcher, Markdown, Static

from core.runtime.parsing import is_template_copy

from ..model import BADGE_DESCRIPTORS, BADGE_SILENCED, BADGE_WAITING, BADGE_WORKING, AgentView, unit_mark
from .stream_view import StreamView

BADGE_STYLE = {
    BADGE_WAITING: "$text-muted",
    BADGE_DESCRIPTORS: "$accent",
    BADGE_WORKING: "$warning",
    "done": "$success",
    "unparsed": "$error",
    "failed": "$error",
    BADGE_SILENCED: "$text-disabled",
}


def keep_line_breaks() -> MarkdownIt:
    """Markdown that keeps the reply's own line breaks: "4 pass, 2 fail." and each "FAIL …" under it stay on
    their own lines, as they streamed (plain Markdown would join them into one paragraph)."""
    parser = MarkdownIt("gfm-like")

    def hard_breaks(state: StateCore) -> None:  # Textual draws a soft break as a space, a hard one as a new line
        for token in state.tokens:
            for child in token.children or []:
                if child.type == "softbreak":
                    child.type = "hardbreak"

    parser.core.ruler.push("keep_line_breaks", hard_breaks)
    return parser


class AgentPane(Vertical):
    ALLOW_MAXIMIZE = True

    def __init__(self, agent: str, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="pane agent-pane")
        self.agent = agent
        self._stream_key: tuple[int, int] | None = None  # (round, attempt) shown in the stream view
        self._shown = 0
        self._final = ""
        self._meta_key: tuple[object, ...] | None = None
        self.border_title = agent
        self.model_name = ""  # a user team's agent with its own model (RunStarted.team), shown below
        self._pending: tuple[int, AgentView | None, tuple[int, str] | None] | None = None
        self._ready = False  # children composed (on_mount ran)
        self.search_query = ""  # while a search runs, the pane shows its text plain, matches marked
        self._search_text: str | None = None
        self.inbox_count = 0  # messages routed to it for the round shown (the screen sets it)
        self.place = ""  # where it ran in the unit shown, in its method's words ("tier 1", "step 2"); set by the screen
        self.unit = "round"  # what the run's method steps by (the screen sets it)
        self.steer_marks: tuple[str, ...] = ()  # the user's actions about it in the unit shown (the screen sets it)

    def compose(self) -> ComposeResult:
        yield Static("", classes="descriptors", markup=False)
        yield Static("", classes="steered", markup=False)  # the user's actions about it, in the unit shown
        with ContentSwitcher(initial="stream", classes="body"):
            yield StreamView(id="stream")
            with VerticalScroll(id="final", can_focus=True):
                yield Markdown("", id="md", parser_factory=keep_line_breaks)

    def copy_text(self) -> str:
        if self.query_one(ContentSwitcher).current == "final":
            return self._final
        return self.query_one(StreamView).text

    def on_mount(self) -> None:
        self._ready = True
        if self._pending is not None:
            self.sync(*self._pending)

    def sync(self, round_no: int, view: AgentView | None, earlier: tuple[int, str] | None = None) -> None:
        """Show ``view`` (this agent in round ``round_no``); cheap when nothing changed. ``earlier`` is
        (round, output) of its last word before this round, shown while it is idle."""
        self._pending = (round_no, view, earlier)  # the latest, for on_mount and the end of a search
        if not self._ready:
            return  # children not composed yet: on_mount shows it
        view = view or AgentView(self.agent)
        meta = (round_no, view.status, view.call, view.query, view.key, view.tokens, self.place, view.error,
                earlier and earlier[0], self.inbox_count, self.unit, self.steer_marks, view.retried)
        if meta != self._meta_key:
            self._meta_key = meta
            self._sync_meta(view, earlier[0] if earlier else None)
        if self.search_query:
            self._show_plain(self._visible_text(view, earlier))
        elif view.public and not view.streaming:
            self._show_final(view.public)
        elif earlier is not None and not view.streaming:
            self._show_final(earlier[1])
        else:
            self._show_stream(round_no, view)

    def stream_behind(self, view: AgentView | None) -> bool:
        """Streamed text arrived that this pane has not shown yet (a redraw the screen may put off)."""
        return (view is not None and view.streaming and self._ready and not self.search_query
                and len(view.text) > self._shown)

    def _sync_meta(self, view: AgentView, earlier_round: int | None) -> None:
        badge = view.status
        self.border_title = Content.assemble(
            (self.agent, "bold"), " ", Content.from_markup(f"[{BADGE_STYLE.get(badge, '')}]\\[{badge}][/]")
        )
        sub = [self.model_name] if self.model_name else []
        if view.retried:
            sub.append("↻ retried")  # the answer shown is its second: the user asked again
        if self.place:
            sub.append(self.place)
        if self.inbox_count:
            sub.append(f"inbox {self.inbox_count}")  # enter on the pane shows it
        if view.tokens:
            sub.append(f"{view.tokens} tok")
        if view.latency_s:
            sub.append(f"{view.latency_s:.1f}s")
        if earlier_round is not None:
            sub.append(f"{unit_mark(self.unit, earlier_round)} output")
        self.border_subtitle = " · ".join(sub)
        lines = []
        if view.query or view.key:
            lines.append(f"Q: {view.query}")
            lines.append(f"K: {view.key}")
        elif view.error:
            lines.append(f"! {view.error}")
        self.query_one(".descriptors", Static).update("\n".join(lines))
        self.query_one(".steered", Static).update("\n".join(self.steer_marks))  # "✎ note Tester: ..."
        self.set_class(bool(self.steer_marks), "-steered")
        self.set_class(bool(lines), "-has-descriptors")
        self.set_class(is_template_copy(view.error), "-copied")  # a copied reply template: greyed, with the notice

    @staticmethod
    def _visible_text(view: AgentView, earlier: tuple[int, str] | None) -> str:
        if view.public and not view.streaming:
            return view.public
        if earlier is not None and not view.streaming:
            return earlier[1]
        return view.text

    # --- search -------------------------------------------------------------------------------
    def _show_plain(self, text: str) -> None:
        """The pane's text in the stream view (plain, so matches can be marked and scrolled to)."""
        switcher = self.query_one(ContentSwitcher)
        if switcher.current != "stream":
            switcher.current = "stream"
        if text != self._search_text:
            self._search_text = text
            self.query_one(StreamView).set_text(text)
            self._stream_key = None  # the stream view starts over when the search ends

    def search(self, query: str) -> list[tuple[int, int]]:
        """Start (or change) a search: every (row, column) where ``query`` occurs in what the pane shows."""
        if self._ready and not self.search_query and self._meta_key is not None:
            current = self.query_one(ContentSwitcher).current
            self._show_plain(self._final if current == "final" else self.query_one(StreamView).text)
        self.search_query = query
        stream = self.query_one(StreamView)
        stream.set_highlight(query, stream.current)
        return stream.matches(query)

    def mark(self, match: tuple[int, int] | None) -> None:
        """Mark the search's current match (None: it is in another pane) and scroll to it."""
        stream = self.query_one(StreamView)
        stream.set_highlight(self.search_query, match)
        if match is not None:
            stream.scroll_to_row(match[0])

    def focus_body(self) -> None:
        """Focus what the pane shows (its stream or its final text)."""
        current = self.query_one(ContentSwitcher).current
        (self.query_one(StreamView) if current == "stream" else self.query_one("#final")).focus()

    def end_search(self) -> None:
        self.search_query = ""
        self._search_text = None
        self.query_one(StreamView).set_highlight("", None)
        self._meta_key = None  # the next sync shows the pane as usual again
        if self._pending is not None:
            self.sync(*self._pending)

    def _show_stream(self, round_no: int, view: AgentView) -> None:
        switcher = self.query_one(ContentSwitcher)
        if switcher.current != "stream":
            switcher.current = "stream"
        stream = self.query_one(StreamView)
        key = (round_no, view.attempt)
        if key != self._stream_key or len(view.text) < self._shown:
            self._stream_key = key
            stream.clear()
            self._shown = 0
        if len(view.text) > self._shown:
            stream.append(view.text[self._shown :])
            self._shown = len(view.text)

    def _show_final(self, text: str) -> None:
        switcher = self.query_one(ContentSwitcher)
        if text != self._final:
            self._final = text
            self.query_one("#md", Markdown).update(text)
        if switcher.current != "final":
            switcher.current = "final"
