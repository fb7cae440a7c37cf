"""Run candidate code against tests in sandboxed subprocesses, and classify the result.

Threat model. ``code`` is hostile: model-written, it may try to read the app's secrets (API keys in the
environment or in files), reach the network, write outside its folder, signal or outlive the app, or
forge a passing verdict. ``tests`` are trusted only to be honest about their own verdict: in benchmark
scoring they are the dataset's hidden ``check()``; in the per-round evaluator they are model-written too,
and a test that fakes its own pass only fools the team that wrote it. Both are jailed alike, so neither
can harm the machine or read anything of the app's.

Two processes per run. The CANDIDATE executes ``code`` and then serves requests; the JUDGE (the trusted
runner) runs the tests and alone holds the verdict channel, an unlinked temporary file the parent reads.
Every name the code defined appears in the tests' namespace: plain data as a copy, anything else
(functions, classes, instances, modules) as a proxy whose every use (call, attribute, item, len, iter,
arithmetic, ...) is a request over a pipe to the candidate. Answers are plain data in tagged JSON
(numbers, strings, bytes, lists, tuples, dicts, sets, Fraction, Decimal, numpy arrays), handles to further
objects, or exceptions (type, args, message, frames), and the judge decodes them itself: no object of the
code ever exists in the judge, so a rigged ``__eq__`` cannot cross and ``==``, ``<`` and ``in`` are decided
by the judge on its own data (``==`` on a proxy is identity, except that two dataclass instances compare
their fields, fetched as data; ``in`` iterates). Exceptions come back as built-in types (or same-named
stand-ins), never SystemExit/KeyboardInterrupt/StopIteration, and a dead or garbled channel fails the
run, whatever the tests catch. The code's names never replace built-ins in the tests (its ``def abs``
cannot decide ``assert abs(got - want) < 1e-6``); list/dict/set arguments the code changes in place are
copied back. What the tests pass to the code must be plain data, functions or iterators (the code may
call those, and nothing else of the judge). Limits of the model: the code's module-level data is a copy
taken when it finished loading, async functions cannot be awaited from the tests, and data costs about a
microsecond per element to cross.

Isolation. Where bubblewrap works (Linux, ``bwrap`` installed, namespaces allowed; probed once), each
process runs in its own user, PID, network, IPC, UTS and cgroup namespaces with a fresh /proc (the app's
processes and their ``/proc/<pid>/environ`` are invisible, signals cannot reach them, and everything in
the sandbox dies with it), no network (a private loopback), all capabilities dropped, a new session, and
a read-only view of only what Python needs (/usr, /lib*, a few /etc files, the interpreter's prefix and
site-packages): home directories, /work, the app's sessions and config are simply absent. The only
writable places are the run's fresh folder (also its cwd and HOME) and a small private /tmp. The
environment is PATH, LANG and HOME. When the app runs as root, the sandbox's uid 0 is the host's, so on
top of the dropped capabilities /proc/sys is read-only and nested user namespaces are disabled; process
counts are not limited (RLIMIT_NPROC does not bind root). Elsewhere the same two processes run with the
rlimits and minimal environment only, which contains mistakes but not deliberate attacks (the code could
reach the judge through /proc); ``isolation_status()`` says which (SWARM_SANDBOX_ISOLATION=off forces it).

Limits in both modes: CPU, memory and file-size rlimits, a wall-clock limit (the judge's timer, then the
parent's SIGKILL), capped output, stdin from /dev/null, and a fresh temporary folder removed afterwards.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import functools
import marshal
import math
import os
import select
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import IO, Any


class Outcome(StrEnum):
    PASSED = "PASSED"
    WRONG_ANSWER = "WRONG_ANSWER"
    TIME_LIMIT_EXCEEDED = "TIME_LIMIT_EXCEEDED"
    MEMORY_LIMIT_EXCEEDED = "MEMORY_LIMIT_EXCEEDED"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    SYNTAX_ERROR = "SYNTAX_ERROR"


@dataclass
class SandboxLimits:
    wall_seconds: float = 10.0
    cpu_seconds: float = 10.0
    memory_mb: int = 512
    output_chars: int = 8000


@dataclass
class SandboxResult:
    outcome: Outcome
    passed: bool
    failing_test: str = ""  # the assert/test that failed (or was running when the run was stopped)
    traceback: str = ""  # trimmed; only candidate/test frames, never the runner's
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    tests_passed: int = 0  # test units that ran clean (a string of tests counts as one unit)
    tests_total: int = 0

    def summary(self) -> str:
        """One line for the Manager, the results pane and logs."""
        text = str(self.outcome)
        if self.tests_total:
            text += f" ({self.tests_passed}/{self.tests_total} tests passed)"
        if self.failing_test:
            # Name the test by its first line that is not an import prefix (extract_tests adds those).
            lines = [line.strip() for line in self.failing_test.strip().splitlines() if line.strip()]
            named = [line for line in lines if not line.startswith(("import ", "from "))] or lines
            text += f": {named[0][:200]}"
        if not self.passed and self.traceback:
            last = self.traceback.strip().splitlines()[-1]
            if last not in text:
                text += f" — {last[:200]}"
        return text

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["outcome"] = str(self.outcome)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SandboxResult:
        values = dict(data)
        values["outcome"] = Outcome(values["outcome"])
        return cls(**values)


TRACEBACK_CHARS = 3000
_GRACE_S = 0.5  # the judge stops itself at wall_seconds; the parent's SIGKILL is the backstop
_FILE_BYTES = 64 * 2**20  # per-file write limit: output spam or disk bombs cannot fill the disk
_TMP_BYTES = 64 * 2**20  # the sandbox's private /tmp and /dev/shm (memory-backed)
_MESSAGE_BYTES = 64 * 2**20  # the largest answer the judge reads from the code's process
_OUTPUT_MARK = "\n... [output truncated]"
ISOLATION_ENV = "SWARM_SANDBOX_ISOLATION"  # "off" runs without bubblewrap even where it works
_SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
# The /etc files Python needs (the loader's cache; time zone, users and hosts for the stdlib); nothing with
# secrets. Few, since every mount costs at start and at exit.
_ETC = ("ld.so.cache", "localtime", "passwd", "group", "hosts", "nsswitch.conf")

# The runner executes inside both children (role "judge" or "code"), started with -S: `site` (and the
# .pth files it runs) costs more than everything else together, so the runner puts site-packages on
# sys.path itself. Its startup is most of the per-run overhead, so it imports only built-in modules
# (`posix`, not `os`; `_signal`, not `signal`; `_json`'s scanner, not `json`, which pulls in re),
# traceback and friends only when something failed, and it arrives compiled: the -c bootstrap reads the
# marshalled payload (runner code object included) from an inherited, unlinked file.
RUNNER_NAME = "<sandbox-runner>"
_BOOTSTRAP = (
    "import marshal,posix,sys\n"
    "PAYLOAD=marshal.loads(posix.pread(int(sys.argv[1]),int(sys.argv[2]),0))\n"
    "posix.close(int(sys.argv[1]))\n"
    "RUNNER_NAME=PAYLOAD.pop('runner_name')\n"
    "exec(PAYLOAD.pop('runner'))\n"
)
_RUNNER = r'''
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


class Peer:
    """One end of the channel between the judge (runs the tests) and the candidate (runs the code).

    A request names an operation on one of the other side's objects, by handle; the answer is plain data,
    a handle to another object, or an exception. Each side decodes what it receives itself, into plain
    values or proxies: nothing the other side sends can run code here. Calls may nest (a test passes a
    function the code calls back), so while waiting for its answer each side serves the other's requests.
    """

    def __init__(self, rfd, wfd):
        self.rfd, self.wfd = rfd, wfd
        self.buf, self.scanned = bytearray(), 0
        self.objects, self.handles = {}, {}  # our objects the other side may use, by handle and by id()
        self.proxies, self.twins = {}, {}
        self.proxy_type = Remote if JUDGE else TestObject
        self.ops = JUDGE_OPS if JUDGE else CODE_OPS

    # framing

    def fail(self, why):
        STATE["broken"] = STATE["broken"] or why
        raise ChannelBroken(why)

    def send(self, text):
        for stream in (sys.stdout, sys.stderr):  # keep the two processes' output in order
            try:
                stream.flush()
            except Exception:
                pass
        view = memoryview((text + "\n").encode("ascii"))
        while view:
            try:
                written = posix.write(self.wfd, view)
            except OSError:
                STATE["lost"] = True
                self.fail("the other process ended")
            view = view[written:]

    def recv(self):
        """The next message, a non-empty list starting with its kind; None at end of input."""
        buf = self.buf
        while True:
            end = buf.find(b"\n", self.scanned)
            if end >= 0:
                line = bytes(buf[:end])
                del buf[: end + 1]
                self.scanned = 0
                return self.parse(line)
            self.scanned = len(buf)
            if len(buf) > MAX_MESSAGE:
                self.fail("a message over the size limit")
            chunk = posix.read(self.rfd, 1 << 16)
            if not chunk:
                STATE["lost"] = True
                if JUDGE:
                    self.fail("the process running the code ended")
                return None
            buf += chunk

    def parse(self, line):
        try:
            text = line.decode("ascii")
            value, end = _scan(text, 0)
        except MemoryError:
            raise
        except Exception:
            self.fail("an unreadable message")
        if end != len(text) or type(value) is not list or not value or type(value[0]) is not str:
            self.fail("a malformed message")
        return value

    # encoding

    def enc(self, value):
        out = []
        self._enc(value, out, 0)
        return "".join(out)

    def _enc(self, x, out, depth):
        t = type(x)
        if t is str:
            out.append(_quote(x))
        elif t is int:
            out.append(int.__repr__(x) if -BIG < x < BIG else '["I",%s]' % _quote(int.__format__(x, "x")))
        elif t is float:
            if x != x:
                out.append("NaN")
            elif x == INF or x == -INF:
                out.append("Infinity" if x > 0 else "-Infinity")
            else:
                out.append(float.__repr__(x))
        elif x is None:
            out.append("null")
        elif t is bool:
            out.append("true" if x else "false")
        elif depth > MAX_DEPTH:
            raise ValueError("data nested too deeply to cross the sandbox boundary")
        elif t in _SEQ_TAGS:
            if len(x) > 8 and _flat is not None and _scalars(x):
                try:
                    out.append(_SEQ_TAGS[t] + "," + "".join(_flat(list(x), 0))[1:])
                    return
                except ValueError:  # an int past the int/str conversion limit: the slow path sends hex
                    pass
            out.append(_SEQ_TAGS[t])
            for item in x:
                out.append(",")
                self._enc(item, out, depth + 1)
            out.append("]")
        elif t is dict or t is _ITEMS:
            if t is dict and len(x) > 8 and _flat is not None and _scalars(x) and _scalars(x.values()):
                try:
                    out.append('["D",' + "".join(_flat([i for pair in x.items() for i in pair], 0))[1:])
                    return
                except ValueError:
                    pass
            out.append('["D"' if t is dict else '["W"')
            for key, value in x.items() if t is dict else x:
                out.append(",")
                self._enc(key, out, depth + 1)
                out.append(",")
                self._enc(value, out, depth + 1)
            out.append("]")
        elif t is bytes or t is bytearray:
            out.append('["%s",%s]' % ("B" if t is bytes else "Y", _quote(x.decode("latin-1"))))
        elif t is complex:
            out.append('["C",')
            self._enc(x.real, out, depth)
            out.append(",")
            self._enc(x.imag, out, depth)
            out.append("]")
        elif t is range:
            out.append('["G",%s,%s,%s]' % (self.enc(x.start), self.enc(x.stop), self.enc(x.step)))
        elif x is Ellipsis:
            out.append('["E"]')
        else:
            self._enc_object(x, out, depth)

    def _enc_object(self, x, out, depth):
        t = type(x)
        if t is self.proxy_type:  # one of the other side's objects, going back
            out.append('["H",%d]' % x._sbx_h)
            return
        if x is TimeLimitExceeded:
            out.append('["P","TimeLimitExceeded"]')
            return
        if isinstance(x, type):
            ref = x.__dict__.get("_sbx_ref")  # the judge's stand-in for an exception class of the code
            if ref is not None:
                out.append('["%s",%s]' % (ref[0], self.enc(ref[1])))
                return
            if getattr(builtins, x.__name__, None) is x:
                out.append('["P",%s]' % _quote(x.__name__))
                return
            if not JUDGE and issubclass(x, BaseException):
                names = [c.__name__ for c in x.__mro__ if isinstance(c.__name__, str)]
                module = x.__module__ if isinstance(x.__module__, str) else "__solution__"
                fields = (self.export(x), _quote(x.__name__), _quote(module), self.enc(names))
                out.append('["X",%d,%s,%s,%s]' % fields)
                return
        else:
            try:
                name = getattr(x, "__name__", None)
            except Exception:
                name = None
            if type(name) is str and getattr(builtins, name, None) is x:
                out.append('["P",%s]' % _quote(name))
                return
        for base, convert in _CONVERSIONS:  # subclasses of built-in data (namedtuple, IntEnum, Counter, ...)
            if isinstance(x, base):
                self._enc(convert(x), out, depth)
                return
        module, kind = getattr(t, "__module__", ""), getattr(t, "__name__", "")
        if module == "numpy":
            try:
                if kind != "ndarray" and x.ndim == 0:
                    self._enc(x.item(), out, depth)
                    return
                if kind == "ndarray" and x.dtype.kind in "biufcUS" and x.dtype.fields is None:
                    out.append('["A",%s,%s,' % (_quote(x.dtype.str), self.enc(list(x.shape))))
                    self._enc(x.tolist(), out, depth)
                    out.append("]")
                    return
            except Exception:
                pass
        elif module == "fractions" and kind == "Fraction":
            out.append('["Q",%s,%s]' % (self.enc(int(x.numerator)), self.enc(int(x.denominator))))
            return
        elif module in ("decimal", "_decimal", "_pydecimal") and kind == "Decimal":
            out.append('["M",%s]' % _quote(str(x)))
            return
        if JUDGE and not (callable(x) or hasattr(t, "__next__")):
            raise TypeError(
                f"a {kind or 'value'} cannot be passed to the code under test: only plain data, functions "
                "and iterators cross the sandbox boundary"
            )
        out.append('["R",%d,%s]' % (self.export(x), _quote(str(kind)[:100])))

    def export(self, obj):
        handle = self.handles.get(id(obj))
        if handle is None:
            handle = len(self.objects) + 1
            self.objects[handle] = obj  # kept alive, so its id() is not reused
            self.handles[id(obj)] = handle
        return handle

    def enc_exc(self, exc):
        try:
            message = str(exc)
        except BaseException:
            message = "<unprintable>"
        try:
            args = self.enc(exc.args)
        except Exception:
            args = '["T"]'
        try:
            cls = self.enc(type(exc))
        except Exception:
            cls = '["P","Exception"]'
        frames = [] if JUDGE else _frames(exc)
        return "[%s,%s,%s,%s]" % (cls, _quote(message[:4000]), args, self.enc(frames))

    # decoding

    def decode(self, value):
        try:
            return self.dec(value, 0)
        except (MemoryError, ChannelBroken):
            raise
        except Exception as exc:
            if JUDGE:
                self.fail(f"malformed data ({type(exc).__name__})")
            raise

    def dec(self, v, depth):
        t = type(v)
        if t is str or t is int or t is float or t is bool or v is None:
            return v
        if t is not list or not v or type(v[0]) is not str or depth > MAX_DEPTH:
            raise ValueError("not a tagged value")
        tag, d = v[0], depth + 1
        if tag in _SEQUENCES:
            items = v[1:]
            if not _scalars(items):
                items = [self.dec(x, d) for x in items]
            return items if tag == "L" else _SEQUENCES[tag](items)
        if tag == "D" or tag == "W":
            if len(v) % 2 != 1:
                raise ValueError("odd dict")
            items = v[1:]
            if not _scalars(items):
                items = [self.dec(x, d) for x in items]
            pairs = iter(items)
            out = dict(zip(pairs, pairs))
            return out if tag == "D" else out.items()
        if tag == "K":
            return dict.fromkeys([self.dec(x, d) for x in v[1:]]).keys()
        if tag == "V":
            return dict(enumerate([self.dec(x, d) for x in v[1:]])).values()
        if tag == "B" or tag == "Y":
            data = _str(v[1]).encode("latin-1")
            return data if tag == "B" else bytearray(data)
        if tag == "I":
            return int(_str(v[1]), 16)
        if tag == "C":
            if type(v[1]) not in (int, float) or type(v[2]) not in (int, float):
                raise ValueError("bad complex")
            return complex(v[1], v[2])
        if tag == "G":
            return range(_int(v[1]), _int(v[2]), _int(v[3]))
        if tag == "E":
            return Ellipsis
        if tag == "Q":
            from fractions import Fraction

            return Fraction(_int(self.dec(v[1], d)), _int(self.dec(v[2], d)))
        if tag == "M":
            from decimal import Decimal

            return Decimal(_str(v[1], 10000))
        if tag == "A":
            dtype, shape = _str(v[1]), self.dec(v[2], d)
            if not (3 <= len(dtype) <= 6 and dtype[0] in "<>|=" and dtype[1] in "biufcUS" and dtype[2:].isdigit()):
                raise ValueError("bad dtype")
            import numpy

            return numpy.array(self.dec(v[3], d), dtype=dtype).reshape([_int(n) for n in shape])
        if tag == "P":
            name = _str(v[1])
            if name == "TimeLimitExceeded":
                return TimeLimitExceeded
            obj = getattr(builtins, name)
            if JUDGE and name not in SAFE_BUILTINS and not (isinstance(obj, type) and issubclass(obj, BaseException)):
                raise ValueError(f"built-in {name} may not cross")
            return obj
        if tag == "R":
            handle = _int(v[1])
            proxy = self.proxies.get(handle)
            if proxy is None:
                proxy = self.proxies[handle] = self.proxy_type(handle, _str(v[2], 100))
            return proxy
        if tag == "H":
            return self.objects[_int(v[1])]
        if tag == "X" and JUDGE:
            handle, name, module = _int(v[1]), _str(v[2], 100), _str(v[3], 100)
            return self.twin(("H", handle), name, module, _twin_base(self.dec(v[4], d)))
        raise ValueError(f"unknown tag {tag!r}")

    def twin(self, key, name, module, base):
        """The judge's stand-in for an exception class of the code: same name, a safe built-in base."""
        cls = self.twins.get(key)
        if cls is None:
            attrs = {"__module__": module, "__str__": _remote_str, "_sbx_ref": key}
            try:
                cls = type(name, (base,), attrs)
            except Exception:
                cls = type("RemoteError", (base,), attrs)
            self.twins[key] = cls
        return cls

    def exception(self, data, op):
        """An exception raised on the other side, rebuilt from its report."""
        try:
            if type(data) is not list or len(data) != 4:
                raise ValueError("bad report")
            cls, message = self.dec(data[0], 0), _str(data[1], 4000)
            args, frames = self.dec(data[2], 0), []
            for item in self.dec(data[3], 0)[-60:]:
                if type(item) is list and len(item) == 3 and type(item[0]) is str and type(item[1]) is int:
                    frames.append((item[0][:300], item[1], str(item[2])[:100]))
        except (MemoryError, ChannelBroken):
            raise
        except Exception:
            if JUDGE:
                self.fail("a malformed error report")
            cls, message, args, frames = RuntimeError, "a malformed error report", (), []
        if type(args) is not tuple:
            args = (message,)
        if cls is TimeLimitExceeded:
            exc = TimeLimitExceeded(message)
        elif not (isinstance(cls, type) and issubclass(cls, BaseException)):
            if JUDGE:
                self.fail("a malformed error report")
            exc = RuntimeError(message)
        elif op == "next" and issubclass(cls, StopIteration):
            exc = StopIteration()
        else:
            if not issubclass(cls, Exception) or issubclass(cls, (StopIteration, StopAsyncIteration)):
                # SystemExit, KeyboardInterrupt, StopIteration ... would steer the tests' control flow.
                cls = self.twin(("P", cls.__name__), cls.__name__, "builtins", RemoteError)
            exc = _make_exception(cls, args, message)
        exc._sbx_frames = frames
        return exc

    # requests

    def wait_ready(self):
        """(judge) The names the code defined, as data or proxies; or the exception that stopped it."""
        msg = self.recv()
        if msg[0] == "ready" and len(msg) == 2:
            names = self.decode(msg[1])
            if type(names) is not dict:
                self.fail("a malformed message")
            return names
        if msg[0] == "err" and len(msg) == 2:
            raise self.exception(msg[1], "code")
        self.fail("an unexpected message")

    def op(self, name, target, args=(), kwargs=None):
        """Run operation `name` on the other side's object `target`; its answer decoded here."""
        if JUDGE and STATE["broken"]:
            raise ChannelBroken(STATE["broken"])
        request = (_quote(name), target._sbx_h, self.enc(list(args)), self.enc(kwargs or {}))
        self.send('["op",%s,%d,%s,%s]' % request)
        while True:
            msg = self.recv()
            if msg is None:
                raise ChannelBroken("the tests' process ended")
            kind = msg[0]
            if kind == "op":
                self.serve(msg)
            elif kind == "ok" and len(msg) == 3:
                value = self.decode(msg[1])
                if JUDGE and msg[2]:
                    self.apply_updates(args, msg[2])
                return value
            elif kind == "err" and len(msg) == 2:
                raise self.exception(msg[1], name)
            else:
                self.fail("an unexpected message")

    def apply_updates(self, args, updates):
        """Copy the code's in-place changes to list/dict/set/bytearray arguments back into the tests' objects."""
        if type(updates) is not list:
            self.fail("a malformed answer")
        for item in updates:
            if type(item) is not list or len(item) != 2 or type(item[0]) is not int or not 0 <= item[0] < len(args):
                self.fail("a malformed answer")
            target, new = args[item[0]], self.decode(item[1])
            if (isinstance(target, list) and type(new) is list) or (
                isinstance(target, bytearray) and type(new) is bytearray
            ):
                target[:] = new
            elif (isinstance(target, dict) and type(new) is dict) or (isinstance(target, set) and type(new) is set):
                target.clear()
                target.update(new)

    def serve(self, msg):
        """Answer one request of the other side."""
        try:
            if len(msg) != 5:
                raise TypeError("malformed request")
            name, handle = msg[1], msg[2]
            fn = self.ops.get(name) if type(name) is str else None
            if fn is None:
                raise TypeError(f"operation {name!r} is not allowed on objects of the tests")
            if type(handle) is not int or handle not in self.objects:
                raise TypeError("unknown object")
            obj, args, kwargs = self.objects[handle], self.decode(msg[3]), self.decode(msg[4])
            if type(args) is not list or type(kwargs) is not dict:
                raise TypeError("malformed request")
            watch = []
            if not JUDGE and name == "call":
                watch = [(i, self.enc(a)) for i, a in enumerate(args) if type(a) in _MUTABLE]
            result = fn(obj, *args, **kwargs)
            updates = []
            for i, before in watch:
                after = self.enc(args[i])
                if after != before:
                    updates.append("[%d,%s]" % (i, after))
            answer = '["ok",%s,[%s]]' % (self.enc(result), ",".join(updates))
        except BaseException as exc:
            if isinstance(exc, ChannelBroken) or JUDGE and not isinstance(exc, Exception):
                raise  # the judge's own time limit, a broken channel: not the other side's business
            if isinstance(exc, MemoryError):
                _free_memory()
            answer = '["err",%s]' % self.enc_exc(exc)
        self.send(answer)


def _call(obj, *args, **kwargs):
    return obj(*args, **kwargs)


def _enter(obj):
    return type(obj).__enter__(obj)


def _exit(obj):
    type(obj).__exit__(obj, None, None, None)


def _fields(obj):
    """[class, compared field values] of a dataclass instance with eq=True, else None."""
    params = getattr(type(obj), "__dataclass_params__", None)
    if params is None or not params.eq or isinstance(obj, type):
        return None
    import dataclasses  # already loaded: the code defined a dataclass

    return [type(obj), [getattr(obj, f.name) for f in dataclasses.fields(obj) if f.compare]]


CODE_OPS = {
    "call": _call,
    "fields": _fields,
    "getattr": getattr,
    "setattr": setattr,
    "delattr": delattr,
    "getitem": _operator.getitem,
    "setitem": _operator.setitem,
    "delitem": _operator.delitem,
    "len": len,
    "iter": iter,
    "next": next,
    "bool": bool,
    "repr": repr,
    "str": str,
    "int": int,
    "float": float,
    "index": _operator.index,
    "enter": _enter,
    "exit": _exit,
    "isinstance": lambda cls, obj: isinstance(obj, cls),
    "issubclass": lambda cls, sub: issubclass(sub, cls),
    "neg": _operator.neg,
    "pos": _operator.pos,
    "abs": abs,
    "invert": _operator.invert,
}
BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lshift", "rshift", "and", "or", "xor")
for _name in BINARY:
    _fn = getattr(_operator, _name + "_" if _name in ("and", "or") else _name)
    CODE_OPS[_name] = _fn
    CODE_OPS["r" + _name] = (lambda fn: lambda obj, other: fn(other, obj))(_fn)
JUDGE_OPS = {"call": _call, "iter": iter, "next": next}  # all the code may do with what tests pass it


def _forward(op, kind=None):
    def method(self, *args):
        value = PEER.op(op, self, args)
        if kind is not None and type(value) is not kind:
            raise TypeError(f"{op}() of the code's {self._sbx_t} returned {type(value).__name__}")
        return value

    method.__name__ = f"__{op}__"
    return method


class Remote:
    """The judge's proxy for an object of the code under test: every use is a request to the candidate.

    Equality, ordering and `in` are deliberately not forwarded: `==` is identity, `in` iterates, so the
    code cannot answer "yes" to a comparison the tests make; it can only hand over data the judge compares.
    """

    __slots__ = ("__weakref__", "_sbx_h", "_sbx_t")

    def __init__(self, handle, kind):
        object.__setattr__(self, "_sbx_h", handle)
        object.__setattr__(self, "_sbx_t", kind)

    def __getattr__(self, name):
        return PEER.op("getattr", self, (name,))

    def __setattr__(self, name, value):
        PEER.op("setattr", self, (name, value))

    def __delattr__(self, name):
        PEER.op("delattr", self, (name,))

    def __call__(self, *args, **kwargs):
        return PEER.op("call", self, args, kwargs)

    def __exit__(self, *exc_info):
        PEER.op("exit", self)
        return False  # never lets the code swallow an exception of the tests

    def __eq__(self, other):
        # Two instances of the code's dataclasses compare like dataclasses do, on their fields, fetched as
        # data and compared here (never by the code's __eq__); anything else of the code is equal to itself.
        if self is other:
            return True
        if type(other) is not Remote:
            return NotImplemented
        mine = PEER.op("fields", self)
        return mine is not None and mine == PEER.op("fields", other)

    __hash__ = object.__hash__

    def __instancecheck__(self, obj):
        return PEER.op("isinstance", self, (obj,)) is True

    def __subclasscheck__(self, cls):
        return PEER.op("issubclass", self, (cls,)) is True


for _op, _kind in (
    ("getitem", None), ("setitem", None), ("delitem", None), ("len", int), ("iter", None), ("next", None),
    ("bool", bool), ("repr", str), ("str", str), ("int", int), ("float", float), ("index", int),
    ("enter", None), ("neg", None), ("pos", None), ("abs", None), ("invert", None),
):
    setattr(Remote, f"__{_op}__", _forward(_op, _kind))
for _name in BINARY:
    setattr(Remote, f"__{_name}__", _forward(_name))
    setattr(Remote, f"__r{_name}__", _forward("r" + _name))


class TestObject:
    """The candidate's proxy for a function or iterator the tests passed to the code."""

    __slots__ = ("_sbx_h", "_sbx_t")

    def __init__(self, handle, kind):
        self._sbx_h, self._sbx_t = handle, kind

    def __call__(self, *args, **kwargs):
        return PEER.op("call", self, args, kwargs)

    def __iter__(self):
        return PEER.op("iter", self)

    def __next__(self):
        return PEER.op("next", self)

    def __repr__(self):
        return f"<{self._sbx_t} of the tests>"


# --- verdicts (judge) ------------------------------------------------------------------------------


def emit(record):
    # One repr() per line (repr escapes newlines); the parent reads it back with ast.literal_eval.
    data = (repr(record) + "\n").encode("utf-8", "backslashreplace")
    while data:
        data = data[posix.write(RESULT_FD, data):]


def statement(filename, lineno):
    """The innermost simple statement on that line, whole even when it spans several lines."""
    import ast, textwrap

    lines = SOURCES.get(filename, "").splitlines(True)
    if not lines or not lineno:
        return ""
    start, end = lineno, lineno
    try:
        spans = [
            (node.end_lineno - node.lineno, node.lineno, node.end_lineno)
            for node in ast.walk(ast.parse("".join(lines)))
            if isinstance(node, ast.stmt) and not hasattr(node, "body")
            and node.lineno <= lineno <= (node.end_lineno or node.lineno)
        ]
        if spans:
            _, start, end = min(spans)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        pass
    return textwrap.dedent("".join(lines[start - 1 : end])).strip()[:1000]


def _line(filename, lineno):
    import linecache

    if filename in SOURCES or filename.endswith(".py") and not filename.startswith(("/proc", "/dev", "/sys")):
        return linecache.getline(filename, lineno).strip()
    return ""


def _splice(te, exc, traceback, seen):
    """Our frames minus the runner's, then the frames the code reported (they ran in the other process)."""
    if te is None or exc is None or id(te) in seen:
        return
    seen.add(id(te))
    frames = [f for f in te.stack if f.filename not in HIDDEN]
    for filename, lineno, name in getattr(exc, "_sbx_frames", ()):
        frames.append(traceback.FrameSummary(filename, lineno, name, lookup_line=False, line=_line(filename, lineno)))
    te.stack = traceback.StackSummary.from_list(frames)
    _splice(te.__cause__, exc.__cause__, traceback, seen)
    _splice(te.__context__, exc.__context__, traceback, seen)


def format_tb(exc):
    try:
        import linecache, traceback

        for name, src in SOURCES.items():
            linecache.cache[name] = (len(src), None, src.splitlines(True), name)
        te = traceback.TracebackException.from_exception(exc)
        _splice(te, exc, traceback, set())
        text = "".join(te.format())
    except BaseException:  # str() of a proxy in the exception may need the (broken) channel
        text = f"{type(exc).__name__}: {STATE['broken'] or 'the error could not be formatted'}"
    if len(text) > TB_CHARS:
        text = "...\n" + text[-TB_CHARS:]
    return text


def execute(code_obj, ns):
    try:
        exec(code_obj, ns)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            return exc
    except BaseException as exc:  # noqa: BLE001 - classify everything the tests raise
        return exc
    return None


def classify(exc, unit_name, unit_src, ns):
    if isinstance(exc, MemoryError):
        ns.clear()
        _free_memory()
        outcome = "MEMORY_LIMIT_EXCEEDED"
    elif isinstance(exc, TimeLimitExceeded):
        outcome = "TIME_LIMIT_EXCEEDED"
    elif isinstance(exc, AssertionError):
        outcome = "WRONG_ANSWER"
    else:
        outcome = "RUNTIME_ERROR"
    failing = unit_src.strip() if unit_src is not None else ""
    # In the solution itself only a failed assert is a "failing test"; other errors are in the traceback.
    if not failing and (unit_name != "<solution>" or outcome == "WRONG_ANSWER"):
        import traceback

        # The deepest frame in this unit names the failing statement (e.g. the assert inside check()).
        if unit_name == "<solution>":  # the code ran in the other process, which reported its frames
            lines = [n for f, n, _ in getattr(exc, "_sbx_frames", ()) if f == unit_name]
        else:
            lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == unit_name]
        if lines:
            failing = statement(unit_name, lines[-1])
    return {"outcome": outcome, "failing_test": failing, "traceback": format_tb(exc)}


def run_tests(payload):
    code, tests = payload["code"], payload["tests"]
    ns = {"__name__": "__solution__", "__builtins__": builtins}
    if isinstance(tests, str):
        # One block of tests: the failing line is found from the traceback.
        units = [("<tests>", tests, None)] if tests.strip() else []
    else:
        units = [(f"<test {i + 1}>", src, src) for i, src in enumerate(tests)]
    total = len(units)
    base = {"tests_total": total, "tests_passed": 0}
    compiled = []
    for name, src, label in [("<solution>", code, "")] + units:
        SOURCES[name] = src
        try:
            obj = compile(src, name, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as exc:  # ValueError: source with NUL bytes
            import traceback

            where = "" if name == "<solution>" else (label or "tests")
            text = "".join(traceback.format_exception_only(exc))
            return {**base, "outcome": "SYNTAX_ERROR", "failing_test": where, "traceback": text}
        except Exception as exc:  # the compiler gave up (nesting, size)
            if name != "<solution>":
                why = f"{type(exc).__name__}: {exc}"
                return {**base, "outcome": "RUNTIME_ERROR", "failing_test": label or "tests", "traceback": why}
            obj = None  # the code's own run will say how
        compiled.append(obj)
    test_objs = compiled[1:]
    emit({"phase": "code"})
    try:
        names = PEER.wait_ready()
    except BaseException as exc:  # noqa: BLE001 - whatever the code raised, or its process died
        return {**base, **classify(exc, "<solution>", "", ns)}
    for key, value in names.items():
        # The code's names join the tests' namespace, but never in place of a built-in the tests rely on
        # (a "def abs" of the code must not decide `assert abs(got - want) < 1e-6`).
        if type(key) is str and key.isidentifier() and not key.startswith("__") and not hasattr(builtins, key):
            ns[key] = value
    for i, ((name, src, label), obj) in enumerate(zip(units, test_objs)):
        emit({"phase": "test", "index": i})
        exc = execute(obj, ns)
        if exc is not None:
            return {**base, "tests_passed": i, **classify(exc, name, label, ns)}
    return {**base, "tests_passed": total, "outcome": "PASSED", "failing_test": "", "traceback": ""}


def judge_main():
    try:
        try:
            result = run_tests(PAYLOAD)
        finally:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
            _signal.signal(_signal.SIGXCPU, _signal.SIG_IGN)
    except TimeLimitExceeded as exc:  # fired between the runner's own statements
        result = {"outcome": "TIME_LIMIT_EXCEEDED", "failing_test": "", "traceback": str(exc)}
    except ChannelBroken as exc:
        result = {"outcome": "RUNTIME_ERROR", "failing_test": "", "traceback": f"ChannelBroken: {exc}"}
    # Sticky: a test that swallowed the time limit or a dead/garbled channel does not pass.
    if result["outcome"] == "PASSED" and STATE["timed_out"]:
        result.update(outcome="TIME_LIMIT_EXCEEDED", traceback="time limit reached (the tests caught it)")
    elif result["outcome"] == "PASSED" and STATE["broken"]:
        result.update(outcome="RUNTIME_ERROR", traceback=f"the channel to the code broke: {STATE['broken']}")
    if STATE["lost"] and result["outcome"] != "PASSED":
        result["lost"] = True  # the parent knows how the code's process ended
    emit({"result": result})


# --- the candidate: run the code, then serve its objects ------------------------------------------


def code_main():
    code = PAYLOAD["code"]
    ns = {"__name__": "__solution__", "__builtins__": builtins}
    SOURCES["<solution>"] = code
    failure = None
    try:
        exec(compile(code, "<solution>", "exec", dont_inherit=True), ns)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            failure = exc
    except BaseException as exc:  # noqa: BLE001 - reported to the judge, which classifies it
        failure = exc
    if failure is not None:
        if isinstance(failure, MemoryError):
            ns.clear()
            _free_memory()
        PEER.send('["err",%s]' % PEER.enc_exc(failure))
        return
    names = {k: v for k, v in list(ns.items()) if type(k) is str and not (k.startswith("__") and k.endswith("__"))}
    PEER.send('["ready",%s]' % PEER.enc(names))
    while True:
        msg = PEER.recv()
        if msg is None:
            return
        if msg[0] == "op":
            PEER.serve(msg)


def main():
    global PEER, RESULT_FD
    payload = PAYLOAD  # loaded by the bootstrap
    posix.unsetenv("PWD")  # bubblewrap sets it; the code gets PATH, LANG and HOME only
    posix.environ.pop(b"PWD", None)
    sys.path.extend(payload["site_packages"])  # third-party imports work; no .pth files run
    import _sitebuiltins  # exit()/quit() as `site` would define them

    builtins.exit = _sitebuiltins.Quitter("exit", "Ctrl-D (i.e. EOF)")
    builtins.quit = _sitebuiltins.Quitter("quit", "Ctrl-D (i.e. EOF)")
    limits = payload["limits"]
    _limit(resource.RLIMIT_AS, limits["memory_bytes"])
    _limit(resource.RLIMIT_CPU, limits["cpu_seconds"], limits["cpu_seconds"] + 1)
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_FSIZE, limits["file_bytes"])
    _signal.signal(_signal.SIGXFSZ, _signal.SIG_IGN)  # over-size writes fail with OSError instead
    _signal.signal(_signal.SIGXCPU, _on_timer)
    sys.stdout = Capped(sys.stdout, limits["output_chars"] + 1)
    sys.stderr = Capped(sys.stderr, limits["output_chars"] + 1)
    rfd, wfd = payload["channel"]
    PEER = Peer(rfd, wfd)
    try:
        if JUDGE:
            RESULT_FD = payload["result_fd"]
            _signal.signal(_signal.SIGALRM, _on_timer)
            _signal.setitimer(_signal.ITIMER_REAL, max(0.01, limits["wall_seconds"] - (time.monotonic() - _START)))
            judge_main()
        else:
            try:
                code_main()
            except BaseException as exc:  # noqa: BLE001 - its CPU limit between requests, a lost judge
                if not isinstance(exc, ChannelBroken):
                    try:
                        PEER.send('["err",%s]' % PEER.enc_exc(exc))
                    except BaseException:  # noqa: BLE001
                        pass
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            if JUDGE:  # the parent goes on at once, without waiting for the sandbox to be torn down
                try:
                    posix.write(payload["done_fd"], b"\n")
                except OSError:
                    pass
            posix._exit(0)  # skip atexit hooks and non-daemon threads


main()
'''


# --- isolation -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Isolation:
    bwrap: list[str] | None  # bwrap and its fixed arguments; None: run without isolation
    sized: bool  # this bwrap knows --size
    message: str


def isolation_status() -> tuple[bool, str]:
    """Whether code runs isolated (bubblewrap), and one line saying so, for the UI/CLI to show once."""
    isolation = _isolation()
    return isolation.bwrap is not None, isolation.message


def _python() -> str:
    """The real interpreter binary: a venv's bin/python is a symlink into a prefix the sandbox binds."""
    return os.path.realpath(sys.executable)


def _bwrap_fixed(options: str, no_nested_userns: bool) -> list[str]:
    args = ["--unshare-all", "--die-with-parent", "--new-session"]
    if "--as-pid-1" in options:
        # The interpreter is the namespace's PID 1 (no bwrap reaper): when it exits, the kernel kills
        # everything left in the namespace, and its CPU time is accounted to this process (bwrap's
        # reaper reports the exit through an eventfd and is never waited for).
        args.append("--as-pid-1")
    if no_nested_userns:  # no user namespace of its own inside, where it would have capabilities again
        args += ["--unshare-user", "--disable-userns"]
    if os.geteuid() == 0:  # as root bwrap keeps capabilities in its user namespace unless told
        args += ["--cap-drop", "ALL"]
    bound: list[str] = []

    def ro_bind(path: str) -> None:
        real = os.path.realpath(path)
        if not os.path.isdir(real) or any(real == b or real.startswith(b.rstrip("/") + "/") for b in bound):
            return
        bound.append(real)
        args.extend(["--ro-bind", real, real])

    ro_bind("/usr")
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = f"/{name}"
        if os.path.islink(path):
            args.extend(["--symlink", os.readlink(path), path])
        else:
            ro_bind(path)
    for name in _ETC:
        args.extend(["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"])
    for path in _python_paths():
        ro_bind(path)
    # As root, the sandbox's uid 0 is the host's, and sysctl files check the uid, not capabilities: without
    # this, code could write kernel.core_pattern. (bwrap only covers /proc/sys when the directory is writable.)
    return [*args, "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--dev", "/dev"]


def _python_paths() -> list[str]:
    """What the interpreter needs to see: its prefixes, its binary's folder and the site-packages."""
    return [sys.base_prefix, sys.base_exec_prefix, os.path.dirname(_python()), *_site_packages()]


def _rebind_under_tmp() -> list[str]:
    """The private /tmp hides whatever was bound beneath it: a venv (or a checkout) living under /tmp is
    bound again on top, read-only."""
    out: list[str] = []
    for path in dict.fromkeys(os.path.realpath(p) for p in _python_paths()):
        if (path == "/tmp" or path.startswith("/tmp/")) and os.path.isdir(path):
            out += ["--ro-bind", path, path]
    return out


def _bwrap_argv(isolation: _Isolation, work: str) -> list[str]:
    """The bubblewrap command line for one run, up to the interpreter."""
    assert isolation.bwrap is not None
    size = ["--size", str(_TMP_BYTES)] if isolation.sized else []
    return [
        *isolation.bwrap,
        *size, "--tmpfs", "/dev/shm",
        "--remount-ro", "/dev",
        *size, "--tmpfs", "/tmp",
        *_rebind_under_tmp(),
        "--bind", work, work,
        "--chdir", work,
        "--clearenv",
        "--setenv", "PATH", _SANDBOX_PATH,
        "--setenv", "LANG", os.environ.get("LANG", "C.UTF-8"),
        "--setenv", "HOME", work,
        "--remount-ro", "/",
        "--",
    ]  # fmt: skip


@functools.cache
def _isolation() -> _Isolation:
    """Probe bubblewrap once: a sandboxed `python -c pass` with a run's exact mounts must work."""
    if os.environ.get(ISOLATION_ENV, "").strip().lower() in ("off", "0", "no", "false"):
        return _Isolation(None, False, f"code runs without isolation: turned off by {ISOLATION_ENV}")
    if not sys.platform.startswith("linux"):
        return _Isolation(None, False, "code runs without isolation: bubblewrap (bwrap) needs Linux")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        why = "bubblewrap (bwrap) not found; install it with apt-get install bubblewrap"
        return _Isolation(None, False, f"code runs without isolation: {why}")
    try:
        usage = subprocess.run([bwrap, "--help"], stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
        options = usage.stdout.decode("utf-8", "replace")
    except (OSError, subprocess.SubprocessError) as exc:
        return _Isolation(None, False, f"code runs without isolation: bubblewrap (bwrap) failed here ({exc})")
    sized = "--size" in options
    why = ""
    # Newer options first; without them (older bwrap, or no unprivileged user namespaces) it still isolates.
    for no_nested_userns in dict.fromkeys(["--disable-userns" in options, False]):
        isolation = _Isolation([bwrap, *_bwrap_fixed(options, no_nested_userns)], sized, "")
        work = tempfile.mkdtemp(prefix="swarm-sandbox-probe-")
        try:
            argv = [*_bwrap_argv(isolation, work), _python(), "-I", "-S", "-B", "-c", "pass"]
            proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, env={}, timeout=30)
        except (OSError, subprocess.SubprocessError) as exc:
            why = str(exc)
            continue
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if proc.returncode == 0:
            message = "code runs isolated with bubblewrap: no network, read-only file system, own process namespace"
            return _Isolation(isolation.bwrap, sized, message)
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        why = lines[-1] if lines else f"exit code {proc.returncode}"
    return _Isolation(None, False, f"code runs without isolation: bubblewrap (bwrap) failed here ({why[:200]})")


# --- one run -----------------------------------------------------------------------------------------


def _payload_file(root: Path, payload: dict[str, Any]) -> tuple[IO[bytes], int]:
    data = marshal.dumps(payload)
    fh = tempfile.TemporaryFile(dir=root)  # noqa: SIM115 - closed by _Job.started()/close()
    fh.write(data)
    fh.flush()
    return fh, len(data)


@dataclass
class _Job:
    """Everything one run needs; removed by ``close``."""

    root: Path
    cwd: Path
    env: dict[str, str]
    code_argv: list[str]  # the candidate: runs the code, then serves its objects
    code_fds: tuple[int, ...]
    judge_argv: list[str]  # runs the tests, writes the verdict
    judge_fds: tuple[int, ...]
    done: int  # readable once the judge has written its verdict (a byte, or end of file if it died)
    result: IO[bytes]
    stdout: IO[bytes]
    stderr: IO[bytes]
    transient: list[Any]  # payload files and the parent's pipe ends: closed once both processes started
    tests: str | list[str]
    limits: SandboxLimits
    isolated: bool
    records: list[dict[str, Any]] | None = None

    @classmethod
    def create(cls, code: str, tests: str | Sequence[str], limits: SandboxLimits) -> _Job:
        isolation = _isolation()
        root = Path(tempfile.mkdtemp(prefix="swarm-sandbox-"))
        opened: list[Any] = []
        try:
            cwd = root / "work"
            cwd.mkdir()
            test_value: str | list[str] = tests if isinstance(tests, str) else [str(t) for t in tests]
            # Unlinked files: nothing in a sandbox can reach them by path, and the code gets none of the judge's.
            result = tempfile.TemporaryFile(dir=root)  # noqa: SIM115 - closed by close()
            opened.append(result)
            stdout = tempfile.TemporaryFile(dir=root)  # noqa: SIM115
            opened.append(stdout)
            stderr = tempfile.TemporaryFile(dir=root)  # noqa: SIM115
            opened.append(stderr)
            to_code, to_judge, done = os.pipe(), os.pipe(), os.pipe()
            pipe_ends = [*to_code, *to_judge, done[1]]
            opened.extend([*pipe_ends, done[0]])
            common = {
                "code": code,
                "traceback_chars": TRACEBACK_CHARS,
                "max_message": _MESSAGE_BYTES,
                "site_packages": _site_packages(),
                "runner": _runner_code(),
                "runner_name": RUNNER_NAME,
                "limits": {
                    "wall_seconds": float(limits.wall_seconds),
                    "cpu_seconds": max(1, math.ceil(limits.cpu_seconds)),
                    "memory_bytes": int(limits.memory_mb) * 2**20,
                    "file_bytes": _FILE_BYTES,
                    "output_chars": int(limits.output_chars),
                },
            }
            code_channel = (to_code[0], to_judge[1])
            judge_channel = (to_judge[0], to_code[1])
            code_file, code_size = _payload_file(root, {**common, "role": "code", "channel": code_channel})
            opened.append(code_file)
            judge_payload = {
                **common,
                "role": "judge",
                "tests": test_value,
                "channel": judge_channel,
                "result_fd": result.fileno(),
                "done_fd": done[1],
            }
            judge_file, judge_size = _payload_file(root, judge_payload)
            opened.append(judge_file)
        except BaseException:
            for item in opened:
                if isinstance(item, int):
                    os.close(item)
                else:
                    item.close()
            shutil.rmtree(root, ignore_errors=True)
            raise
        if isolation.bwrap is not None:
            prefix, python = _bwrap_argv(isolation, str(cwd)), _python()
            env = {"PATH": _SANDBOX_PATH}  # bwrap's own environment shows in the sandbox's /proc/1/environ
        else:
            prefix, python = [], sys.executable
            env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": os.environ.get("LANG", "C.UTF-8")}
            env["HOME"] = str(cwd)

        def argv(payload: IO[bytes], size: int, role: str) -> list[str]:
            # The root's name is only there for ps/top (and tests) to tell runs apart.
            head = [*prefix, python, "-I", "-S", "-B", "-c", _BOOTSTRAP]
            return [*head, str(payload.fileno()), str(size), role, root.name]

        return cls(
            root=root,
            cwd=cwd,
            env=env,
            code_argv=argv(code_file, code_size, "code"),
            code_fds=(*code_channel, code_file.fileno()),
            judge_argv=argv(judge_file, judge_size, "judge"),
            judge_fds=(*judge_channel, done[1], result.fileno(), judge_file.fileno()),
            done=done[0],
            result=result,
            stdout=stdout,
            stderr=stderr,
            transient=[*pipe_ends, code_file, judge_file],
            tests=test_value,
            limits=limits,
            isolated=isolation.bwrap is not None,
        )

    def popen_kwargs(self, role: str) -> dict[str, Any]:
        return {
            "stdin": subprocess.DEVNULL,  # never the app's stdin (the MCP server speaks over it)
            "stdout": self.stdout,  # shared by both processes, so their output interleaves in order
            "stderr": self.stderr,
            "cwd": self.cwd,
            "env": self.env,
            "pass_fds": self.judge_fds if role == "judge" else self.code_fds,
            "start_new_session": True,  # own process group, so a kill reaches its children too
        }

    def started(self) -> None:
        """Drop the parent's copies of what the children inherited: the judge must see the code's end of
        the channel close when the code's process dies."""
        for item in self.transient:
            if isinstance(item, int):
                with contextlib.suppress(OSError):
                    os.close(item)
            else:
                item.close()
        self.transient = []

    def close(self) -> None:
        self.started()
        with contextlib.suppress(OSError):
            os.close(self.done)
        for fh in (self.result, self.stdout, self.stderr):
            fh.close()
        _remove_tree(self.root)

    def verdict(self) -> dict[str, Any] | None:
        if self.records is None:
            self.records = _read_records(self.result)
        return next((r["result"] for r in reversed(self.records) if isinstance(r.get("result"), dict)), None)

    def lost_code(self) -> bool:
        """Whether the verdict blames the code's process ending (then its exit status tells how)."""
        verdict = self.verdict()
        return bool(verdict and verdict.get("lost"))

    def finish(self, judge_rc: int | None, code_rc: int | None, killed: bool, duration: float) -> SandboxResult:
        verdict = self.verdict()
        records = self.records or []
        stdout = _read_capped(self.stdout, self.limits.output_chars)
        stderr = _read_capped(self.stderr, self.limits.output_chars)
        total = len(self.tests) if isinstance(self.tests, list) else (1 if self.tests.strip() else 0)
        if verdict is not None:
            outcome = _outcome(verdict.get("outcome"))
            traceback = str(verdict.get("traceback", ""))
            if verdict.get("lost") and outcome is not Outcome.PASSED:
                # The code's process died (or closed its channel) under a test: its exit status says how.
                if code_rc is None:
                    outcome, why = Outcome.RUNTIME_ERROR, "the code under test closed its channel to the tests"
                else:
                    outcome, why = _classify_death(code_rc, False, duration, self.limits, self.isolated)
                    why = f"the code's process: {why}"
                traceback = f"{traceback.rstrip()}\n{why}".lstrip()
            return SandboxResult(
                outcome=outcome,
                passed=outcome is Outcome.PASSED,
                failing_test=str(verdict.get("failing_test", "")),
                traceback=_trim(traceback),
                stdout=stdout,
                stderr=stderr,
                duration_s=duration,
                tests_passed=int(verdict.get("tests_passed", 0)),
                tests_total=int(verdict.get("tests_total", total)),
            )
        # No verdict: the judge was killed or died. Its last phase marker says where it was.
        phase = next((r for r in reversed(records) if "phase" in r), {})
        failing, passed_units = "", 0
        if phase.get("phase") == "test":
            passed_units = int(phase.get("index", 0))
            if isinstance(self.tests, list) and passed_units < len(self.tests):
                failing = self.tests[passed_units].strip()
        outcome, why = _classify_death(judge_rc, killed, duration, self.limits, self.isolated)
        return SandboxResult(
            outcome=outcome,
            passed=False,
            failing_test=failing,
            traceback=why,
            stdout=stdout,
            stderr=stderr,
            duration_s=duration,
            tests_passed=passed_units,
            tests_total=total,
        )


def _outcome(value: object) -> Outcome:
    try:
        return Outcome(str(value))
    except ValueError:
        return Outcome.RUNTIME_ERROR


def _classify_death(
    returncode: int | None, killed: bool, duration: float, limits: SandboxLimits, isolated: bool = False
) -> tuple[Outcome, str]:
    if killed:
        return Outcome.TIME_LIMIT_EXCEEDED, f"killed after the {limits.wall_seconds:g}s wall-clock limit"
    signum = 0
    if returncode is not None and returncode < 0:
        signum = -returncode
    elif isolated and returncode is not None and returncode > 128:
        signum = returncode - 128  # bubblewrap exits with 128 + the signal that killed its child
    if signum == signal.SIGXCPU:
        return Outcome.TIME_LIMIT_EXCEEDED, f"killed after the {limits.cpu_seconds:g}s CPU limit"
    if signum == signal.SIGKILL:
        # Not our kill: the CPU hard limit (only reachable after at least cpu_seconds) or the OOM killer.
        if duration >= limits.cpu_seconds:
            return Outcome.TIME_LIMIT_EXCEEDED, f"killed after the {limits.cpu_seconds:g}s CPU limit"
        why = f"killed, most likely out of memory ({limits.memory_mb} MB limit)"
        return Outcome.MEMORY_LIMIT_EXCEEDED, why
    if signum:
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        return Outcome.RUNTIME_ERROR, f"the process crashed ({name})"
    return Outcome.RUNTIME_ERROR, f"the process exited (code {returncode}) before the tests finished"


def _read_records(fh: IO[bytes]) -> list[dict[str, Any]]:
    fh.seek(0)
    records: list[dict[str, Any]] = []
    for line in fh.read(4 * 2**20).decode("utf-8", "replace").splitlines():
        try:
            record = ast.literal_eval(line)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def _read_capped(fh: IO[bytes], chars: int) -> str:
    fh.seek(0)
    text = fh.read(chars * 4 + 8).decode("utf-8", "replace")
    if len(text) > chars:
        return text[:chars] + _OUTPUT_MARK
    return text


def _trim(text: str) -> str:
    return text if len(text) <= TRACEBACK_CHARS else "...\n" + text[-TRACEBACK_CHARS:]


@functools.cache
def _runner_code() -> types.CodeType:
    return compile(_RUNNER, RUNNER_NAME, "exec", dont_inherit=True)


@functools.cache
def _site_packages() -> list[str]:
    """This interpreter's site-packages, for the child that starts without `site`."""
    return [path for path in site.getsitepackages() if os.path.isdir(path)]


def _kill_group(pid: int) -> None:
    # With bubblewrap this is bwrap and its group; --die-with-parent and the PID namespace take down
    # everything inside, setsid'd or double-forked children included.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _stop(procs: list[subprocess.Popen[bytes]], root: Path, *, now: bool) -> None:
    """End both processes and reap them in the background: tearing down a sandbox's namespaces takes
    tens of milliseconds the caller need not wait for. After a verdict both exit by themselves (the
    judge is done; the code's process sees its channel close), which keeps their CPU time accounted to
    this process; whatever is still there after the grace period, or at once when ``now``, is killed.
    The run's folder goes again once they are gone, in case something was still writing into it."""
    if now:
        for proc in procs:
            _kill_group(proc.pid)
    if procs:

        def reap() -> None:
            deadline = time.monotonic() + _GRACE_S
            for proc in procs:
                try:
                    proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    _kill_group(proc.pid)
                    proc.wait()
            if root.exists():
                _remove_tree(root)

        threading.Thread(target=reap, name="sandbox-reaper", daemon=True).start()


def _wait_readable(fd: int, timeout: float) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(max(0.0, timeout) * 1000))


def _returncode(proc: subprocess.Popen[bytes], timeout: float) -> int | None:
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


async def _until_readable(fd: int, timeout: float) -> bool:
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    loop.add_reader(fd, lambda: ready.done() or ready.set_result(None))
    try:
        await asyncio.wait_for(ready, timeout)
        return True
    except TimeoutError:
        return False
    finally:
        loop.remove_reader(fd)


async def _areturncode(proc: subprocess.Popen[bytes], timeout: float) -> int | None:
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
    return proc.returncode


def _remove_tree(root: Path) -> None:
    def retry(func: Any, path: str, _exc: Any) -> None:
        # The candidate may have removed permissions on something it created. chmod follows symlinks, so
        # never on one (the code's process may still be alive and swapping entries).
        try:
            for target in (os.path.dirname(path), path):
                if not os.path.islink(target):
                    os.chmod(target, 0o700)
            func(path)
        except OSError:
            pass

    shutil.rmtree(root, onerror=retry)


def run_code(code: str, tests: str | Sequence[str] = "", limits: SandboxLimits | None = None) -> SandboxResult:
    """Run ``code`` then ``tests`` in sandboxed subprocesses and classify the result.

    ``tests`` is one block of test code, or a list of test snippets (e.g. assert statements) that run
    one after another against the code's names, stopping at the first failure, which is then named.
    The code runs with ``__name__ == "__solution__"``, so its ``if __name__ == "__main__":`` demo
    block (which may read stdin) is skipped. Blocking; safe to call from several threads at once.
    Raises OSError only when no subprocess can be started at all.
    """
    limits = limits or SandboxLimits()
    job = _Job.create(code, tests, limits)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        start = time.monotonic()
        procs.append(subprocess.Popen(job.code_argv, **job.popen_kwargs("code")))
        procs.append(subprocess.Popen(job.judge_argv, **job.popen_kwargs("judge")))
        job.started()
        finished = _wait_readable(job.done, limits.wall_seconds + _GRACE_S)
        duration = time.monotonic() - start
        candidate, judge = procs
        judge_rc = _returncode(judge, _GRACE_S) if finished and job.verdict() is None else None
        code_rc = _returncode(candidate, _GRACE_S) if finished and job.lost_code() else None
        result = job.finish(judge_rc, code_rc, not finished, duration)
        procs, done = [], procs  # a verdict: the processes may end by themselves
        _stop(done, job.root, now=False)
        return result
    finally:
        _stop(procs, job.root, now=True)
        job.close()


async def arun_code(code: str, tests: str | Sequence[str] = "", limits: SandboxLimits | None = None) -> SandboxResult:
    """``run_code`` for the engine's event loop: the verdict is awaited, never blocking the loop.

    Cancelling the task kills both children's process groups and removes the temporary directory.
    """
    limits = limits or SandboxLimits()
    job = _Job.create(code, tests, limits)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        start = time.monotonic()
        procs.append(subprocess.Popen(job.code_argv, **job.popen_kwargs("code")))
        procs.append(subprocess.Popen(job.judge_argv, **job.popen_kwargs("judge")))
        job.started()
        finished = await _until_readable(job.done, limits.wall_seconds + _GRACE_S)
        duration = time.monotonic() - start
        candidate, judge = procs
        judge_rc = await _areturncode(judge, _GRACE_S) if finished and job.verdict() is None else None
        code_rc = await _areturncode(candidate, _GRACE_S) if finished and job.lost_code() else None
        result = job.finish(judge_rc, code_rc, not finished, duration)
        procs, done = [], procs  # a verdict: the processes may end by themselves
        _stop(done, job.root, now=False)
        return result
    finally:
        _stop(procs, job.root, now=True)
        job.close()
