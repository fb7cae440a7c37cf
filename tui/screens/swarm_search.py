"""Search in a run's agent panes (/, f3): the focused pane first, then the others in order."""

from __future__ import annotations

from textual.containers import VerticalScroll

from ..widgets.agent_pane import AgentPane
from ..widgets.search_bar import SearchBar
from .swarm_panes import AgentPanes


class PaneSearch(AgentPanes):
    """The search bar's matches over the agent panes, and moving between them."""

    _hits: list[tuple[str, int, int]]  # the search's matches: (agent, row, column)
    _hit: int | None  # the current one
    _search_from: AgentPane | None  # the pane focused when the search opened

    def action_search(self) -> None:
        bar = self.query_one(SearchBar)
        if not bar.is_open:
            self._search_from = self.focused_agent()  # the search starts in the pane the user was in
        bar.open()

    def run_search(self, query: str) -> None:
        """Find ``query`` in every agent's pane, the focused one first, then the others in order."""
        names = list(self._panes)
        focused = self.focused_agent() or self._search_from
        if self._hit is not None and self._hits:
            start = names.index(self._hits[self._hit][0]) if self._hits[self._hit][0] in names else 0
        else:
            start = names.index(focused.agent) if focused is not None and focused.agent in names else 0
        self._hits = []
        for name in names[start:] + names[:start]:
            self._hits += [(name, row, col) for row, col in self._panes[name].search(query)] if query else []
            if not query:
                self._panes[name].end_search()
        self._hit = 0 if self._hits else None
        self._show_hit()

    def action_search_step(self, step: int) -> None:
        self.search_step(step)

    def search_step(self, step: int) -> None:
        bar = self.query_one(SearchBar)
        if not bar.is_open or not bar.text:  # f3 after the bar was closed: the last search again
            self.action_search()
            if not bar.text:
                return
        if not self._hits:
            self.run_search(bar.text)  # outputs may have grown since
        if self._hits:
            self._hit = ((self._hit or 0) + step) % len(self._hits) if self._hit is not None else 0
        self._show_hit()

    def _show_hit(self) -> None:
        bar = self.query_one(SearchBar)
        hit = self._hits[self._hit] if self._hit is not None and self._hits else None
        for name, pane in self._panes.items():
            pane.mark((hit[1], hit[2]) if hit is not None and hit[0] == name else None)
        if hit is None:
            bar.status("no match" if bar.text else "")
            return
        pane = self._panes[hit[0]]
        self.query_one("#body", VerticalScroll).scroll_to_widget(pane, animate=False)
        agents = len({h[0] for h in self._hits})
        shown = (self._hit or 0) + 1
        bar.status(f"{shown}/{len(self._hits)} · {hit[0]}" + (f" · in {agents} agents" if agents > 1 else ""))

    def end_search(self) -> None:
        bar = self.query_one(SearchBar)
        hit = self._hits[self._hit] if self._hit is not None and self._hits else None
        for pane in self._panes.values():
            pane.end_search()
        bar.remove_class("-open")
        self._hits, self._hit = [], None
        if hit is not None and hit[0] in self._panes:
            self._panes[hit[0]].focus_body()
        else:
            self.focus_next()
