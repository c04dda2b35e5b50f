# ruff: noqa: F821, UP031  (appended to _harness_rpc.py's source and run as `python -I -S -c`: Peer comes from it)
"""The candidate's side of the code judge: load `solution.py`, then serve calls to the entry point.

It runs in its own session with an empty environment, stdout/stderr to a log file and only the two
pipes to the judge, whose process it cannot read (the judge is non-dumpable) and, where the judge is
PID 1 of the sandbox's PID namespace, cannot signal either. Nothing here is trusted: the judge checks
every frame it sends back.
"""

import builtins as _builtins
import sys as _sys


def _main():
    if hasattr(_sys, "set_int_max_str_digits"):
        _sys.set_int_max_str_digits(0)  # a right answer with a 5,000-digit int must cross and compare
    rfd, wfd, entry = int(_sys.argv[1]), int(_sys.argv[2]), _sys.argv[3]
    peer = Peer(rfd, wfd)
    peer.capture = True
    ns = {"__name__": "__solution__", "__builtins__": _builtins}
    try:
        with open("solution.py", encoding="utf-8") as f:
            src = f.read()
        exec(compile(src, "solution.py", "exec"), ns)
        fn = ns.get(entry)
        if not callable(fn):
            peer.send({"ready": False, "exc": "NameError", "msg": "solution defines no function %r" % entry})
            return
    except SystemExit as e:
        peer.send({"ready": False, "exc": "SystemExit", "msg": "solution called exit(%r) while loading" % (e.code,)})
        return
    except BaseException as e:
        peer.send({"ready": False, "exc": type(e).__name__, "msg": str(e)[:500]})
        return
    peer.local.append(fn)  # function 0: the entry point
    peer.send({"ready": True})
    while True:
        msg = peer.recv()
        if type(msg) is not dict or msg.get("op") == "exit":
            return
        peer.serve(msg)


if __name__ == "__main__":  # `python -c`: never on import
    _main()
    os._exit(0)
