"""Source text of the child program, part 2: the two ends of the channel, proxies and the operations they forward.

The child program runs inside the sandbox from the concatenation of child_setup, child_peer and child_main
(core.evaluation.sandbox.child); it is text here, compiled by the parent, never imported.
"""

CHILD_PEER = r'''
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

'''
