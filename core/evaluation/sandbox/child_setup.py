"""Source text of the child program, part 1: start-up, limits and the channel's encoding of plain data.

The child program runs inside the sandbox from the concatenation of child_setup, child_peer and child_main
(core.evaluation.sandbox.child); it is text here, compiled by the parent, never imported.
"""

CHILD_SETUP = r'''
import builtins, gc, io, posix, sys, time
import _operator, _signal, resource

_START = time.monotonic()
JUDGE = PAYLOAD["role"] == "judge"  # the judge runs the tests; the other role runs the code and serves it
TB_CHARS = PAYLOAD["traceback_chars"]
MAX_MESSAGE = PAYLOAD["max_message"]
MAX_DEPTH = 200  # nesting of data crossing the channel
BIG = 1 << 63  # larger ints travel as hex, past the int/str conversion limit
INF = float("inf")
HIDDEN = (RUNNER_NAME, "<string>")  # the runner's own frames, never shown
_RESERVE = bytearray(2 * 2**20)  # freed on MemoryError so the answer or verdict can still be written
SOURCES = {}
STATE = {"timed_out": False, "broken": "", "lost": False}
_KEYS, _VALUES, _ITEMS = type({}.keys()), type({}.values()), type({}.items())
_MUTABLE = (list, dict, set, bytearray)
# Built-ins the code under test may hand to the tests by name: data types and pure functions, nothing that
# evaluates text, opens files or reaches into other objects (getattr, vars, ...).
SAFE_BUILTINS = frozenset(
    "int float complex str bytes bytearray bool list tuple dict set frozenset range slice object len abs min "
    "max sum sorted reversed round divmod pow repr ascii ord chr hex oct bin hash all any enumerate zip map "
    "filter iter next isinstance issubclass callable format print".split()
)


class TimeLimitExceeded(BaseException):
    """Raised by our timers; a BaseException so `except Exception` in code or tests can't eat it."""


class ChannelBroken(BaseException):
    """The other process is gone or broke the protocol; a BaseException for the same reason."""


class RemoteError(Exception):
    """Stands for an exception of the code under test that has no safe built-in counterpart here."""


def _remote_str(self):
    text = self.__dict__.get("_sbx_message")
    return Exception.__str__(self) if text is None else text


def _on_timer(signum, frame):
    STATE["timed_out"] = True
    kind = "wall-clock" if signum == _signal.SIGALRM else "CPU time"
    raise TimeLimitExceeded(f"{kind} limit reached")


def _limit(kind, soft, hard=None):
    cur_soft, cur_hard = resource.getrlimit(kind)
    hard = soft if hard is None else hard
    if cur_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, cur_hard), min(hard, cur_hard)
    try:
        resource.setrlimit(kind, (soft, hard))
    except (ValueError, OSError):
        pass


def _free_memory():
    global _RESERVE
    _RESERVE = None
    gc.collect()


class Capped(io.TextIOBase):
    """stdout/stderr that drop everything past the cap instead of filling the disk."""

    def __init__(self, inner, cap):
        self.inner, self.left = inner, cap

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self.left > 0:
            part = text[: self.left]
            self.inner.write(part)
            self.left -= len(part)
        return len(text)

    def flush(self):
        self.inner.flush()

    def writable(self):
        return True

    def fileno(self):
        return self.inner.fileno()

    @property
    def encoding(self):
        return self.inner.encoding

    @property
    def buffer(self):
        return self.inner.buffer


# --- the channel: one JSON document per line, every value but str/int/float/bool/None tagged -----------

try:
    import _json

    _quote = _json.encode_basestring_ascii

    class _JsonContext:
        strict = True
        object_hook = object_pairs_hook = None
        parse_float, parse_int = float, int
        parse_constant = {"NaN": float("nan"), "Infinity": INF, "-Infinity": -INF}.__getitem__
        memo = None

    _scan = _json.make_scanner(_JsonContext)
    # For flat lists of scalars: the C encoder (no circular check, NaN/Infinity allowed).
    _flat = _json.make_encoder(None, None, _quote, None, ":", ",", False, False, True)
except (ImportError, AttributeError, TypeError):  # not CPython: the pure-Python decoder, same grammar
    import json as _jsonmod

    _quote = _jsonmod.encoder.encode_basestring_ascii
    _scan = _jsonmod.scanner.py_make_scanner(_jsonmod.JSONDecoder())
    _flat = None
_SCALARS = frozenset([str, int, float, bool, type(None)])


def _scalars(items):
    """Whether every item is a str, int, float, bool or None (checked at C speed)."""
    return not set(map(type, items)) - _SCALARS


_SEQ_TAGS = {list: '["L"', tuple: '["T"', set: '["S"', frozenset: '["F"', _KEYS: '["K"', _VALUES: '["V"'}
_SEQUENCES = {"L": list, "T": tuple, "S": set, "F": frozenset}
_CONVERSIONS = (
    (int, int.__int__),
    (float, float.__float__),
    (complex, lambda x: complex(x.real, x.imag)),
    (str, str.__str__),
    (bytes, bytes),
    (bytearray, bytearray),
    (tuple, tuple),
    (list, list),
    (dict, dict),
    (frozenset, frozenset),
    (set, set),
)


def _int(value):
    if type(value) is not int:
        raise ValueError("not an int")
    return value


def _str(value, cap=None):
    if type(value) is not str:
        raise ValueError("not a str")
    return value if cap is None else value[:cap]


def _twin_base(mro):
    for name in mro:
        cls = getattr(builtins, name, None) if type(name) is str else None
        if (
            isinstance(cls, type)
            and issubclass(cls, Exception)
            and not issubclass(cls, (StopIteration, StopAsyncIteration))
        ):
            return cls
    return RemoteError


def _frames(exc):
    """(filename, line, function) of the traceback, without the runner's own frames; no imports."""
    out, tb = [], exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename not in HIDDEN:
            out.append([code.co_filename, tb.tb_lineno, code.co_name])
        tb = tb.tb_next
    return out[-60:]


def _make_exception(cls, args, message):
    try:
        exc = cls(*args)
    except Exception:
        try:
            exc = cls(message)
        except Exception:
            exc = RemoteError(message)
    if "_sbx_ref" in type(exc).__dict__:
        exc._sbx_message = message
    return exc


'''
