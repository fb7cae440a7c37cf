"""Command palette: every key of the current screen as a command, searchable by name and tooltip, plus
the screen's commands that have no key (``palette_commands()``, e.g. export in every format)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Provider

from .screens.help import active_bindings


class SwarmCommands(Provider):
    def _commands(self) -> list[tuple[str, str, Callable[[], Any]]]:
        screen = self.screen
        out: list[tuple[str, str, Callable[[], Any]]] = []
        for keys, binding in active_bindings(screen):
            if binding.system or not binding.id:
                continue
            title = f"{binding.tooltip or binding.description}"

            out.append((title, f"key: {keys} · id: {binding.id}", partial(screen.run_action, binding.action)))
        extra = getattr(screen, "palette_commands", None)
        if extra is not None:
            out.extend(extra())
        return out

    async def discover(self) -> AsyncIterator[DiscoveryHit]:
        for title, help_text, run in self._commands():
            yield DiscoveryHit(title, run, help=help_text)

    async def search(self, query: str) -> AsyncIterator[Hit]:
        matcher = self.matcher(query)
        for title, help_text, run in self._commands():
            score = matcher.match(f"{title} {help_text}")
            if score > 0:
                yield Hit(score, matcher.highlight(title), run, help=help_text)
