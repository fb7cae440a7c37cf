"""NumPy bound at import time, loaded at its first use.

Importing NumPy costs about 80 ms on a 2-core machine, and a run needs it only when it first embeds or
routes, after its first model request has left (bench/first_request.py). ``numpy`` here is the real
module when it is already loaded, else a stand-in whose first use imports it, normally.

The stand-in stays out of ``sys.modules``. An earlier version registered importlib's LazyLoader there, so
that plain ``import numpy`` deferred too; but a C extension that imports a NumPy submodule first
(onnxruntime's ``import_array`` does) then loaded ``numpy._core`` twice, and sentence-transformers and
SciPy failed to import later in the same process. Modules on a run's first-request path import NumPy
from here; tests/test_import_hygiene.py checks both.

Two threads must not import NumPy at once: when one enters it through a C extension (torch,
onnxruntime) while the other imports the package, Python's import-deadlock guard hands one of them a
half-initialised ``numpy._core`` and that thread fails with "cannot load module more than once per
process" (seen when compare's methods started together: one loading MiniLM, one routing). So the
first use takes a lock, and code about to import such an extension in a worker thread calls
``load_now(numpy)`` first.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from types import ModuleType
from typing import TYPE_CHECKING, Any

# Held while a deferred module is really imported (see the module docstring).
_IMPORT_LOCK = threading.RLock()


class _Deferred(ModuleType):
    """A module not imported yet. The first attribute it lacks imports the real module and copies its
    namespace in, so later lookups are plain attribute reads (the real module's own ``__getattr__``
    comes along and serves its lazy submodules, e.g. ``numpy.linalg``)."""

    def __getattr__(self, attr: str) -> Any:
        with _IMPORT_LOCK:
            real = importlib.import_module(self.__name__)
        vars(self).update(vars(real))
        return getattr(real, attr)


def load_now(module: ModuleType) -> ModuleType:
    """The real module behind ``module``, imported now under the import lock (a loaded module as is)."""
    if not isinstance(module, _Deferred):
        return module
    with _IMPORT_LOCK:
        return importlib.import_module(module.__name__)


def lazy_module(name: str) -> ModuleType:
    """``name`` as a module imported at its first attribute access (the loaded one if it already is)."""
    if name in sys.modules:
        return sys.modules[name]
    if importlib.util.find_spec(name) is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    return _Deferred(name)


if TYPE_CHECKING:  # the checker sees NumPy's own types; at run time the stand-in defers the import
    import numpy as numpy
else:
    numpy = lazy_module("numpy")
