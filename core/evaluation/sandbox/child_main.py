"""Source text of the child program, part 3: the judge's verdicts, the candidate's serving loop and main().

The child program runs inside the sandbox from the concatenation of child_setup, child_peer and child_main
(core.evaluation.sandbox.child); it is text here, compiled by the parent, never imported.
"""

CHILD_MAIN = r'''

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
