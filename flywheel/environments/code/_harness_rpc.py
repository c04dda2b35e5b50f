# ruff: noqa: UP031  (runs under whatever Python the sandbox has: plain %-formatting on purpose)
"""Calls and values between the code judge and the candidate: loaded on *both* sides (stdlib only).

The judge (`_harness.py`) and the candidate's process (`_harness_child.py`) never share objects.
A call crosses as one length-prefixed JSON frame; values cross as tagged JSON and are rebuilt as
built-in types only (never a class of the model's), so nothing the candidate defines runs in the
judge. What a test and a solution exchange in one process is kept, within that rule:

* *In-place mutation*: after a call, every list/dict/set/bytearray argument whose content changed
  travels back (`mut`) and is written into the caller's object in place (nested lists and dicts
  keep their identity), so `candidate(a); assert a == sorted(...)` judges what the code did.
* *Functions* (a key, a predicate, a returned closure) cross as references: calling one is a call
  back to the side that owns it, answered while the caller waits (nested up to MAX_NEST deep).
* *Iterators and generators* cross as a first chunk of items plus a reference for the rest, so an
  infinite generator and `next(g)` work and a finite one is one round trip.
* ints of any size, Fraction, Decimal, complex, bytes, bytearray, range, deque and dict views.

The judge builds a `Peer` with a deadline and `nan_ok=False` (a NaN never reaches a test that does
not name NaN) and treats every protocol fault as fatal (`Broken`, sticky); the candidate's side has
no deadline and exits when the judge's pipe closes.
"""

import io
import json
import os
import select
import struct
import sys
import time

if "writeback" not in globals():  # imported as a module; in the sandbox _harness_values.py's source runs first
    from flywheel.environments.code._harness_values import MAX_DEPTH, rebuild, writeback

MAX_FRAME = 32 << 20
MAX_NEST = 64
ITER_CHUNK = 1000
_MUTABLE = (list, dict, set, bytearray)


class Broken(Exception):
    """The other side died, broke the protocol, sent NaN, or the deadline passed: the run fails."""


class Peer:
    """One side of the pipe pair: sends calls, serves the other side's calls while it waits."""

    def __init__(self, rfd, wfd, deadline=None, nan_ok=True, strict=False, timeout_text=""):
        self.rfd, self.wfd, self.deadline, self.nan_ok, self.strict = rfd, wfd, deadline, nan_ok, strict
        self.timeout_text = timeout_text
        self.buf, self.local, self.ids = b"", [], {}
        self.seq = self.nest = self.calls = 0
        self.fatal = None
        self.capture = False  # the candidate's side: what a call prints goes back with its answer
        if deadline is not None:
            os.set_blocking(wfd, False)

    # ------------------------------------------------------------------ frames
    def broken(self, why):
        if self.fatal is None:
            self.fatal = why
        return Broken(self.fatal)

    def _wait(self, r, w):
        if self.deadline is None:
            return
        left = self.deadline - time.monotonic()
        if left <= 0 or not any(select.select(r, w, [], left)[:2]):
            raise self.broken(self.timeout_text or "timeout")

    def send(self, obj):
        data = json.dumps(obj).encode()
        data = memoryview(struct.pack(">I", len(data)) + data)
        while data:
            self._wait([], [self.wfd])
            try:
                data = data[os.write(self.wfd, data):]
            except BlockingIOError:
                continue
            except OSError as e:
                raise self.broken("candidate process is gone (%s)" % e.__class__.__name__) from None

    def _read(self, n):
        while len(self.buf) < n:
            self._wait([self.rfd], [])
            try:
                c = os.read(self.rfd, 1 << 20)
            except OSError:
                c = b""
            if not c:
                if self.deadline is None:
                    os._exit(0)  # the judge is gone: nothing left to serve
                raise self.broken("candidate process exited before answering")
            self.buf += c
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        if self.fatal:
            raise Broken(self.fatal)
        (n,) = struct.unpack(">I", self._read(4))
        if n > MAX_FRAME:
            raise self.broken("candidate sent an oversized message")
        try:
            return json.loads(self._read(n))
        except (ValueError, RecursionError):
            raise self.broken("candidate broke the call protocol") from None

    # ------------------------------------------------------------------ values
    def _ref(self, x, tag):
        i = self.ids.get(id(x))
        if i is None:
            i = self.ids[id(x)] = len(self.local)
            self.local.append(x)
        return {"t": tag, "v": i}

    def enc(self, x, depth=0):
        if depth > MAX_DEPTH:
            raise ValueError("value nested too deeply")
        if x is None or x is True or x is False:
            return x
        t, d = type(x), depth + 1
        if isinstance(x, bool):
            return bool(x)
        if isinstance(x, int):
            return int(x)
        if isinstance(x, float):
            return float(x)
        if isinstance(x, str):
            return str(x)
        if isinstance(x, list):
            return [self.enc(i, d) for i in x]
        if isinstance(x, tuple):
            return {"t": "tuple", "v": [self.enc(i, d) for i in x]}
        if isinstance(x, (set, frozenset)):
            return {"t": "set" if isinstance(x, set) else "frozenset", "v": [self.enc(i, d) for i in x]}
        if isinstance(x, dict):
            return {"t": "dict", "v": [[self.enc(k, d), self.enc(v, d)] for k, v in x.items()]}
        if isinstance(x, bytearray):
            return {"t": "bytearray", "v": bytes(x).hex()}
        if isinstance(x, bytes):
            return {"t": "bytes", "v": bytes(x).hex()}
        if isinstance(x, complex):
            return {"t": "complex", "v": [x.real, x.imag]}
        if isinstance(x, range):
            return {"t": "range", "v": [x.start, x.stop, x.step]}
        m, name = getattr(t, "__module__", ""), t.__name__
        if m == "fractions" and name == "Fraction":
            return {"t": "fraction", "v": [int(x.numerator), int(x.denominator)]}
        if m in ("decimal", "_decimal", "_pydecimal") and name == "Decimal":
            return {"t": "decimal", "v": str(x)}
        if m.split(".")[0] == "numpy" and hasattr(x, "dtype") and hasattr(x, "tolist"):
            return self.enc(x.tolist(), d)  # numpy scalars and arrays as the Python values they hold
        if m == "collections" and name == "deque":
            return {"t": "deque", "v": [self.enc(i, d) for i in x]}
        if name in ("dict_keys", "dict_items", "dict_values") and m == "builtins":
            return {"t": name[5:], "v": [self.enc(i, d) for i in x]}
        if isinstance(x, Proxy) and x.peer is self:
            return {"t": "yours", "v": x.idx}  # handing back the other side's own function
        if hasattr(t, "__next__") and hasattr(t, "__iter__"):
            head, more = self._chunk(x, d)
            out = {"t": "iter", "v": head}
            if more:
                out["more"] = self._ref(x, "iter")["v"]
            return out
        if callable(x):
            return self._ref(x, "fn")
        if self.strict:
            raise TypeError("the test passes a %s, which cannot cross to the candidate" % name)
        return {"t": "unsupported", "v": name}

    def _chunk(self, it, depth):
        head = []
        for item in it:
            head.append(self.enc(item, depth))
            if len(head) >= ITER_CHUNK:
                return head, True
        return head, False

    def dec(self, x, depth=0):
        """Rebuild a value as built-in types only; references become calls back to their owner."""
        if depth > MAX_DEPTH:
            raise TypeError("value nested too deeply")
        t, d = type(x), depth + 1
        if t is float:
            if x != x and not self.nan_ok:  # `abs(nan - ref) > tol` is False: NaN would pass tolerance checks
                raise self.broken("candidate returned NaN, which never equals a reference")
            return x
        if x is None or t in (bool, int, str):
            return x
        if t is list:
            return [self.dec(i, d) for i in x]
        if t is not dict or set(x) - {"t", "v", "more"} or "t" not in x:
            raise TypeError("malformed value")
        tag, v = x["t"], x.get("v")
        if tag in ("tuple", "set", "frozenset", "deque", "keys", "values") and type(v) is list:
            items = [self.dec(i, d) for i in v]
            if tag == "tuple":
                return tuple(items)
            if tag in ("set", "frozenset"):
                return set(items) if tag == "set" else frozenset(items)
            if tag == "deque":
                from collections import deque
                return deque(items)
            return dict.fromkeys(items).keys() if tag == "keys" else items
        if tag in ("dict", "items") and type(v) is list:
            out = {self.dec(p[0], d): self.dec(p[1], d) for p in v if type(p) is list and len(p) == 2}
            return out if tag == "dict" else out.items()
        if tag in ("bytes", "bytearray") and type(v) is str:
            return bytes.fromhex(v) if tag == "bytes" else bytearray.fromhex(v)
        if tag == "complex" and type(v) is list and len(v) == 2 and all(type(i) in (int, float) for i in v):
            return complex(self.dec(float(v[0]), d), self.dec(float(v[1]), d))
        if tag == "range" and type(v) is list and len(v) == 3 and all(type(i) is int for i in v) and v[2]:
            return range(v[0], v[1], v[2])
        if tag == "fraction" and type(v) is list and len(v) == 2 and all(type(i) is int for i in v) and v[1]:
            from fractions import Fraction
            return Fraction(v[0], v[1])
        if tag == "decimal" and type(v) is str:
            from decimal import Decimal
            out = Decimal(v)
            if out.is_nan() and not self.nan_ok:
                raise self.broken("candidate returned NaN, which never equals a reference")
            return out
        if tag == "iter" and type(v) is list:
            more = x.get("more")
            return self._iterate([self.dec(i, d) for i in v], more if type(more) is int else None)
        if tag == "fn" and type(v) is int:
            return Proxy(self, v)
        if tag == "yours" and type(v) is int and 0 <= v < len(self.local):
            return self.local[v]
        if tag == "unsupported":
            raise TypeError("candidate returned a %s, not a plain value" % str(v)[:80])
        raise TypeError("malformed value")

    def _iterate(self, head, more):
        yield from head
        while more is not None:
            chunk, done = self.call(more, (), {}, op="next")
            yield from chunk
            if done:
                return

    # ------------------------------------------------------------------ calls
    def call(self, fid, args, kwargs, op="call"):
        """Call the other side's function `fid`; serves its calls back until the answer comes."""
        if self.fatal:
            raise Broken(self.fatal)
        if self.nest >= MAX_NEST:
            raise RecursionError("calls between judge and candidate nested too deeply")
        self.seq += 1
        self.calls += 1
        my = self.seq
        self.send({"op": op, "id": my, "fn": fid, "a": self.enc(list(args)),
                   "k": {str(k): self.enc(v) for k, v in kwargs.items()}})
        self.nest += 1
        try:
            while True:
                msg = self.recv()
                if type(msg) is not dict:
                    raise self.broken("candidate broke the call protocol")
                if msg.get("op") in ("call", "next"):
                    self.serve(msg)
                elif msg.get("op") == "ret" and msg.get("id") == my:
                    break
                else:
                    raise self.broken("candidate broke the call protocol")
        finally:
            self.nest -= 1
        out = msg.get("out")
        if type(out) is str and out and sys.stdout is not sys.__stdout__:
            sys.stdout.write(out)  # the test captures stdout (redirect_stdout): it sees what the call printed
        if "mut" in msg:
            self._apply_mut(args, kwargs, msg["mut"])
        if "exc" in msg:
            raise rebuild(msg.get("exc"), msg.get("msg"))
        if "ok" not in msg:
            raise self.broken("candidate broke the call protocol")
        if op == "next":
            ok = msg["ok"]
            if type(ok) is not list:
                raise self.broken("candidate broke the call protocol")
            return [self.dec(i) for i in ok], bool(msg.get("done"))
        return self.dec(msg["ok"])

    def serve(self, msg):
        """Answer one call from the other side: run the local function, send back result and mutations."""
        rid, fid, args, kwargs = msg.get("id"), msg.get("fn"), [], {}
        saved = self._capture()
        try:
            if type(fid) is not int or not 0 <= fid < len(self.local):
                raise TypeError("no such function")
            target = self.local[fid]
            if msg.get("op") == "next":
                head, more = self._chunk(target, 1)
                rep = {"op": "ret", "id": rid, "ok": head, "done": not more}
            else:
                args, kw = self.dec(msg.get("a")), msg.get("k")
                if type(args) is not list or type(kw) is not dict:
                    raise TypeError("malformed call")
                kwargs = {k: self.dec(v) for k, v in kw.items()}
                rep = {"op": "ret", "id": rid, "ok": self.enc(target(*args, **kwargs))}
        except Broken:
            raise
        except SystemExit as e:
            rep = {"op": "ret", "id": rid, "exc": "SystemExit", "msg": "called exit(%r)" % (e.code,)}
        except BaseException as e:
            if self.fatal:
                raise Broken(self.fatal) from None
            rep = {"op": "ret", "id": rid, "exc": type(e).__name__, "msg": str(e)[:500]}
        printed = self._captured(saved)
        if printed:
            rep["out"] = printed
        try:
            mut = self._mutations(msg, args, kwargs)
        except BaseException as e:
            rep = {"op": "ret", "id": rid, "exc": "TypeError", "msg": "argument left unpassable: %s" % e}
            mut = None
        if mut:
            rep["mut"] = mut
        try:
            self.send(rep)
        except (TypeError, ValueError) as e:
            self.send({"op": "ret", "id": rid, "exc": "TypeError", "msg": "value cannot be passed back: %s" % e})

    def _capture(self):
        if not self.capture:
            return None
        saved, sys.stdout = sys.stdout, io.StringIO()
        return saved

    def _captured(self, saved):
        """What the call printed; the outermost call also copies it to the real stdout (the log)."""
        if saved is None:
            return ""
        try:
            text = sys.stdout.getvalue()
            text = text if type(text) is str else ""
        except BaseException:
            text = ""
        sys.stdout = saved
        if text and not isinstance(saved, io.StringIO):
            try:
                saved.write(text)
            except BaseException:
                pass
        return text[-65536:]

    def _mutations(self, msg, args, kwargs):
        """The new content of every mutable argument the call changed, by position and name."""
        mut = {}
        sent = msg.get("a") or []
        for i, a in enumerate(args):
            if isinstance(a, _MUTABLE) and i < len(sent):
                now = self.enc(a)
                if now != sent[i]:
                    mut["a%d" % i] = now
        for k, a in kwargs.items():
            if isinstance(a, _MUTABLE):
                now = self.enc(a)
                if now != msg["k"].get(k):
                    mut["k" + k] = now
        return mut

    def _apply_mut(self, args, kwargs, mut):
        if type(mut) is not dict:
            raise self.broken("candidate broke the call protocol")
        for key, val in mut.items():
            if key[:1] == "a" and key[1:].isdigit() and int(key[1:]) < len(args):
                orig = args[int(key[1:])]
            elif key[:1] == "k" and key[1:] in kwargs:
                orig = kwargs[key[1:]]
            else:
                continue
            writeback(orig, self.dec(val))


class Proxy:
    """The other side's function, callable here; every call is a round trip."""

    def __init__(self, peer, idx, name="function"):
        self.peer, self.idx, self.__name__ = peer, idx, name

    def __call__(self, *args, **kwargs):
        return self.peer.call(self.idx, args, kwargs)
