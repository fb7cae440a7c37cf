"""NumPy bound at import time, loaded at its first use.

Importing NumPy costs about 80 ms on a 2-core machine, and a run needs it only when it first embeds or
routes, after its first model request has left (bench/first_request.py). ``numpy`` here is the real
module when it is already loaded, else a module object that runs NumPy's import on its first attribute
access (importlib.util.LazyLoader). It is registered in ``sys.modules``, so a plain ``import numpy``
anywhere after this one gets the same object and defers the load too.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """``name`` as a module whose import runs on first attribute access (the loaded one if it already is)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


numpy = lazy_module("numpy")
