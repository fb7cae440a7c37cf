"""A method's own view on the run screen, registered for its name: the screens never test a method's name.

A view module registers its widget class for the method it shows (``@register_view("name")``); the run
screen composes every registered view (hidden), shows the one registered for the run's method in place of
the generic per-step graph pane, and feeds every event to the views' own state. A method without a view
of its own gets the graph pane (every method emits graphs with typed edges). A plugin's view registers
itself the same way when its module is imported.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from core.runtime import events as ev

if TYPE_CHECKING:
    from textual.widget import Widget

    from ..model import RunModel
    from .graph_pane import GraphPane

# The app's own views: imported (and so registered) the first time a screen asks for the views.
BUILT_IN = ("tui.widgets.dmoa_view", "tui.widgets.topodim_view", "tui.widgets.topoweaver_view")


class ViewState(Protocol):
    """What a view keeps of the run beyond the run model (TopoDIM's calls and graph): every event is
    applied to it, in order, for the screen's lifetime."""

    def apply(self, event: ev.Event) -> None: ...


class MethodView:
    """A mixin for a method's view widget: the traits the screen reads, and the defaults."""

    hides_manager: ClassVar[bool] = False  # no Manager decides: the manager pane gives way too
    after_manager: ClassVar[bool] = False  # composed after the manager pane (else before it)
    screen_class: ClassVar[str] = ""  # a CSS class the screen takes while the view is shown
    reads_graph_keys: ClassVar[bool] = False  # the graph keys (g: distributions, d: removed edges) act on it
    state_type: ClassVar[Callable[[], ViewState] | None] = None  # the view's own state, if it keeps one

    def sync_view(self, model: RunModel, round_no: int, *, active: frozenset[str], graph: GraphPane,
                  state: Any = None) -> None:
        """Redraw for ``round_no`` (``active``: agents streaming now; ``graph``: the graph pane's toggles)."""
        raise NotImplementedError

    @classmethod
    def steer_texts(cls, model: RunModel) -> dict[str, str]:
        """The texts the steering dialog's editors start from that only this view knows (a plan)."""
        return {}


W = TypeVar("W", bound=type)
_VIEWS: dict[str, type[Any]] = {}
_loaded = False


def register_view(method: str) -> Callable[[W], W]:
    """Register the decorated widget class (a MethodView) as ``method``'s view."""

    def register(cls: W) -> W:
        _VIEWS[method] = cls
        return cls

    return register


def registered_views() -> dict[str, type[Any]]:
    """Method name -> its view class, the app's own views first (in BUILT_IN's order)."""
    global _loaded
    if not _loaded:
        for module in BUILT_IN:
            importlib.import_module(module)
        _loaded = True
    return dict(_VIEWS)


def view_for(method: str) -> type[Any] | None:
    """The view registered for ``method``; None: it shows the generic graph pane."""
    return registered_views().get(method)


def compose_views() -> tuple[list[Widget], list[Widget]]:
    """One hidden instance of every registered view, named by its method: (before, after) the manager pane."""
    before: list[Widget] = []
    after: list[Widget] = []
    for method, cls in registered_views().items():
        (after if cls.after_manager else before).append(cls(id=method))
    return before, after
