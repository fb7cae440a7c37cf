"""``hf:NAME``: a public dataset fetched with the optional ``datasets`` library (the ``hub`` extra), on a
machine that is online. Its rows are written once to a JSONL file in the user cache and read back through
the same format detection as a local file, so a hub dataset and a downloaded file behave alike."""

from __future__ import annotations

import json
import re
from pathlib import Path

import platformdirs

from core.datasets.loader import load_dataset
from core.datasets.problems import Dataset, DatasetError

PREFIX = "hf:"
_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def is_hub_name(text: str) -> bool:
    return text.startswith(PREFIX)


def load_hub(spec: str, split: str = "test", fmt: str | None = None, *, config: str | None = None) -> Dataset:
    """The dataset ``hf:OWNER/NAME`` (split ``split``). DatasetError with one line when the extra is missing,
    the name is malformed, or the hub cannot be reached."""
    name = spec.removeprefix(PREFIX)
    if not _NAME.match(name):
        raise DatasetError(f"{spec!r} is not a dataset name: use hf:OWNER/NAME, e.g. hf:openai/gsm8k")
    try:
        import datasets  # the optional `hub` extra
    except ImportError:
        raise DatasetError(f"{spec} needs the optional hub extra: pip install 'swarm-tui[hub]'") from None
    cache = Path(platformdirs.user_cache_dir("swarm-tui")) / "hub" / f"{name.replace('/', '__')}-{split}.jsonl"
    if not cache.is_file():
        try:
            rows = datasets.load_dataset(name, config, split=split)
        except Exception as exc:  # offline, unknown name, a gated set: one line
            reason = f"{type(exc).__name__}: {str(exc)[:160]}"
            raise DatasetError(f"{spec}: cannot fetch split {split!r} ({reason})") from None
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial = cache.with_name(cache.name + ".tmp")
        with partial.open("w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row, default=str) + "\n")
        partial.replace(cache)
    return load_dataset(cache, fmt)
