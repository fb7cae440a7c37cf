"""docs/architecture.md, rule 1: the headless core and the command line never import Textual."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "core"


def run_python(script: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    """``script`` in a fresh interpreter at the project's root, so every import in it is a first one."""
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout,
                          cwd=CORE.parent)


def test_every_core_module_imports_without_textual() -> None:
    modules = sorted(
        ".".join(path.relative_to(CORE.parent).with_suffix("").parts)
        for path in CORE.rglob("*.py")
        if path.name != "__init__.py" or path.parent != CORE
    )
    assert "core.runtime.engine" in modules and "core.routing.dytopo" in modules
    # Modules of an optional extra (pyproject's inspect and otel) import where the extra is installed.
    extras = {"core.interop.inspect_": "inspect_ai", "core.telemetry.sink": "opentelemetry.sdk"}
    script = (
        "import importlib, importlib.util, sys\n"
        f"extras = {extras!r}\n"
        f"for name in {modules!r}:\n"
        "    needs = [m for prefix, m in extras.items() if name.startswith(prefix)]\n"
        "    if needs and importlib.util.find_spec(needs[0]) is None:\n"
        "        continue\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(bad))\n"
    )
    result = run_python(script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"core imported textual modules: {result.stdout.strip()}"


def test_the_command_line_and_the_console_entry_do_not_import_textual() -> None:
    """Every module of tui.cli (--help, argument errors, --headless and the subcommands) and the console
    entry itself answer without loading Textual; only the screens a command asks for load it."""
    script = (
        "import importlib, pkgutil, sys\n"
        "import tui.cli, tui.entry\n"
        "names = [m.name for m in pkgutil.iter_modules(tui.cli.__path__, 'tui.cli.')]\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "assert 'tui.cli.headless' in names and 'tui.cli.main' in names, names\n"
        "print(any(m == 'textual' or m.startswith('textual.') for m in sys.modules))\n"
    )
    result = run_python(script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_a_runs_path_to_its_first_request_does_not_load_numpy() -> None:
    """NumPy (~80 ms) loads when a run first embeds or routes, after its first request (bench/first_request.py):
    the modules a headless DyTopo run imports before that request leave it unloaded, and it still works."""
    script = (
        "import sys\n"
        "import tui.cli, tui.cli.headless, core.compose.runner, core.methods.dytopo, core.routing.dytopo\n"
        "from core.runtime import events as ev\n"
        "from core.sessions.model import session_from_events\n"
        "print('loaded' if 'numpy._core' in sys.modules else 'deferred')\n"
        "import numpy as np\n"
        "from core.routing.dytopo import similarity_matrix\n"
        "print(float(similarity_matrix(np.eye(2, dtype=np.float32), np.eye(2, dtype=np.float32))[0][0]))\n"
    )
    result = run_python(script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["deferred", "1.0"], result.stdout


def test_deferred_numpy_survives_a_c_extension_that_imports_it_first() -> None:
    """onnxruntime imports a NumPy submodule from C before anyone touches NumPy: the libraries imported
    after it in the same process (sentence-transformers, the torch fallback; SciPy) must still load."""
    script = (
        "import sys\n"
        "from core.lazy import numpy as np\n"
        "import onnxruntime\n"
        "import scipy.optimize, sentence_transformers\n"
        "print(np.ones(3).sum(), np.linalg.norm(np.ones(4)))\n"
    )
    result = run_python(script, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["3.0", "2.0"]


def test_the_embedder_never_imports_numpy_alongside_a_runs_first_use() -> None:
    """compare starts its methods together: one run's first NumPy use (routing) and another's MiniLM load
    (torch or onnxruntime, which import NumPy from C) must not import NumPy at the same moment, or one of
    them gets a half-initialised numpy._core and the method fails. Here the first use is slowed inside
    NumPy's import; the load must wait for it before it imports either extension."""
    script = (
        "import importlib.abc, importlib.machinery, sys, threading, time\n"
        "order = []\n"
        "class Slow(importlib.abc.Loader):\n"  # NumPy's own loader, one second slower to run
        "    def __init__(self, real): self.real = real\n"
        "    def create_module(self, spec): return self.real.create_module(spec)\n"
        "    def exec_module(self, module):\n"
        "        order.append('numpy begins'); time.sleep(1.0)\n"
        "        self.real.exec_module(module); order.append('numpy loaded')\n"
        "class Watch(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'numpy' and not order:\n"
        "            spec = importlib.machinery.PathFinder.find_spec(name, path)\n"
        "            spec.loader = Slow(spec.loader)\n"
        "            return spec\n"
        "        if name in ('torch', 'onnxruntime', 'sentence_transformers'):\n"
        "            order.append(name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Watch())\n"
        "from core.lazy import numpy as np\n"
        "from core.llm.embeddings import Embedder\n"
        "embedder, errors = Embedder(None), []\n"
        "def first_use():\n"
        "    try: np.zeros(3)\n"
        "    except Exception as exc: errors.append(repr(exc)[:200])\n"
        "def load():\n"
        "    try: embedder.load()\n"
        "    except Exception as exc: errors.append(repr(exc)[:200])\n"
        "use = threading.Thread(target=first_use); use.start()\n"
        "while not order: time.sleep(0.01)\n"
        "loader = threading.Thread(target=load); loader.start()\n"
        "use.join(); loader.join()\n"
        "print(errors)\n"
        "print(' | '.join(order))\n"
    )
    result = run_python(script, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    errors, order = result.stdout.splitlines()
    assert errors == "[]"
    steps = order.split(" | ")
    assert steps[:2] == ["numpy begins", "numpy loaded"], order  # no extension import in between
    assert len(steps) > 2, order  # the load did import an extension afterwards
