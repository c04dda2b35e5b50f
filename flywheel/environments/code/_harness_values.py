# ruff: noqa: UP031  (runs under whatever Python the sandbox has: plain %-formatting on purpose)
"""Values the code judge and the candidate rebuild on their side: exceptions by name, in-place write-back.

Loaded on both sides (stdlib only) ahead of `_harness_rpc.py`, whose `Peer` uses these.
"""

import builtins

MAX_DEPTH = 200


def rebuild(name, msg):
    """The exception the other side raised, as a built-in class of the same name where one exists.

    StopIteration becomes RuntimeError (as PEP 479 does inside generators): raised into a test's
    `map` or generator it would end the loop silently and let the test pass."""
    name, msg = str(name)[:80], str(msg)[:500]
    if name in ("StopIteration", "StopAsyncIteration"):
        return RuntimeError("raised %s: %s" % (name, msg))
    cls = getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, Exception) and not issubclass(cls, Warning):
        try:
            return cls(msg)
        except TypeError:
            pass
    return RuntimeError("%s: %s" % (name, msg))


def writeback(orig, new, depth=0):
    """Make `orig` equal `new` in place (nested lists/dicts keep identity); False when it cannot."""
    if depth > MAX_DEPTH:
        return False
    if isinstance(orig, list) and type(new) is list:
        if len(orig) != len(new):
            orig[:] = new
            return True
        for i, n in enumerate(new):
            if not writeback(orig[i], n, depth + 1) and not _same(orig[i], n):
                orig[i] = n
        return True
    if isinstance(orig, dict) and type(new) is dict:
        for k in [k for k in orig if k not in new]:
            del orig[k]
        for k, n in new.items():
            if not (k in orig and (writeback(orig[k], n, depth + 1) or _same(orig[k], n))):
                orig[k] = n
        return True
    if isinstance(orig, set) and type(new) is set:
        orig.clear()
        orig.update(new)
        return True
    if isinstance(orig, bytearray) and type(new) in (bytes, bytearray):
        orig[:] = new
        return True
    return False


def _same(a, b):
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False
