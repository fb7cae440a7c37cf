"""The program both sandboxed processes run (role "judge" or "code"), assembled and compiled once."""

from __future__ import annotations

import functools
import types

from core.evaluation.sandbox.child_main import CHILD_MAIN
from core.evaluation.sandbox.child_peer import CHILD_PEER
from core.evaluation.sandbox.child_setup import CHILD_SETUP

# The runner executes inside both children (role "judge" or "code"), started with -S: `site` (and the
# .pth files it runs) costs more than everything else together, so the runner puts site-packages on
# sys.path itself. Its startup is most of the per-run overhead, so it imports only built-in modules
# (`posix`, not `os`; `_signal`, not `signal`; `_json`'s scanner, not `json`, which pulls in re),
# traceback and friends only when something failed, and it arrives compiled: the -c bootstrap reads the
# marshalled payload (runner code object included) from an inherited, unlinked file.
RUNNER_NAME = "<sandbox-runner>"
BOOTSTRAP = (
    "import marshal,posix,sys\n"
    "PAYLOAD=marshal.loads(posix.pread(int(sys.argv[1]),int(sys.argv[2]),0))\n"
    "posix.close(int(sys.argv[1]))\n"
    "RUNNER_NAME=PAYLOAD.pop('runner_name')\n"
    "exec(PAYLOAD.pop('runner'))\n"
)
_RUNNER = CHILD_SETUP + CHILD_PEER + CHILD_MAIN


@functools.cache
def runner_code() -> types.CodeType:
    return compile(_RUNNER, RUNNER_NAME, "exec", dont_inherit=True)
