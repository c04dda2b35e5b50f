# ruff: noqa: F821, UP031  (appended to the code judge's _harness_rpc.py source: Peer, Proxy and Broken come from it)
"""The repository's modules and objects as seen from the test runner, which never imports them (stdlib only).

Loaded on both sides after `_harness_values.py` and `_harness_rpc.py` (the code judge's call protocol):
* the candidate's side (`RepoPeer`, `serve_repository`) imports the repository's modules when the
  tests ask and answers operations on them through one dispatcher, function 0;
* the runner's side (`Remote`, `RemoteFinder`) makes `import stack` in a test give a module whose
  attributes, calls, `len`, iteration, indexing and truth are round trips to the candidate. Values
  come back rebuilt as built-in types; anything else stays a `Remote` whose `==` is identity, so an
  object whose `__eq__` is always true equals nothing here.
* The repository's own exception classes cross as data (module, qualified name, the chain of its
  exception classes, its nearest built-in bases): the runner builds one plain local class per name, so a
  raised `stack.StackEmpty` is an instance of the class `stack.StackEmpty` gives the tests (`except`,
  `assertRaises`, `isinstance` with its built-in base all hold), named and worded as the repository's.
  The runner's classes run no code of the candidate's (no `__init__`, `__str__` or metaclass of its).
"""

import builtins
import importlib
import json
import os
import sys
import types

_PLAIN = (type(None), bool, int, float, str, list, tuple, set, frozenset, dict, bytes, bytearray, complex, range)
_CALLS = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, types.BuiltinMethodType,
          types.MethodWrapperType, types.WrapperDescriptorType)
_OPS = {
    "import": lambda target, name: importlib.import_module(name),
    "getattr": getattr,
    "setattr": setattr,
    "call": lambda target, *a, **k: target(*a, **k),
    "len": len,
    "bool": bool,
    "iter": iter,
    "contains": lambda target, x: x in target,
    "getitem": lambda target, k: target[k],
    "setitem": lambda target, k, v: target.__setitem__(k, v),
    "delitem": lambda target, k: target.__delitem__(k),
    "repr": repr,
}


class RepoPeer(Peer):
    """A Peer whose non-plain values (instances, classes, modules) cross as object references.

    Only the candidate's side hands out references; the runner's side is `strict` (a test's own
    objects never cross), so function 0 on the runner's side is never a dispatcher."""

    def enc(self, x, depth=0):
        t = type(x)
        if not self.strict and isinstance(x, type) and issubclass(x, BaseException):
            return {"t": "exc_class", "v": _describe(x) if x.__module__ != "builtins" else {"c": [], "b": [x.__name__]}}
        if not self.strict and isinstance(x, _CALLS):  # its exceptions leave described
            return Peer.enc(self, self._carry(x, _carrying), depth)
        if self.strict or isinstance(x, _PLAIN) or isinstance(x, Proxy):
            return Peer.enc(self, x, depth)
        m = getattr(t, "__module__", "")
        if m in ("fractions", "decimal", "_decimal", "_pydecimal", "collections") or m.split(".")[0] == "numpy":
            return Peer.enc(self, x, depth)
        if t.__name__ in ("dict_keys", "dict_items", "dict_values"):
            return Peer.enc(self, x, depth)
        if t.__name__ == "generator" or (hasattr(t, "__next__") and hasattr(t, "__iter__")):
            return Peer.enc(self, self._carry(x, _carrying_iter), depth)
        return self._ref(x, "obj")

    def _carry(self, x, wrap):
        """One wrapper per object (`x` kept alive with it, so its id stays its own)."""
        seen = self.__dict__.setdefault("carried", {})
        got = seen.get(id(x))
        if got is None or got[0] is not x:
            got = seen[id(x)] = (x, wrap(x))
        return got[1]

    def dec(self, x, depth=0):
        if type(x) is dict and x.get("t") == "exc_class" and self.strict and set(x) <= {"t", "v"}:
            return local_exception_class(x.get("v"))
        if type(x) is dict and x.get("t") == "obj" and type(x.get("v")) is int and set(x) <= {"t", "v"}:
            seen = self.__dict__.setdefault("remotes", {})  # one Remote per object: `is` and == hold across fetches
            if x["v"] not in seen:
                seen[x["v"]] = Remote(self, x["v"])
            return seen[x["v"]]
        return Peer.dec(self, x, depth)


_CARRIER = "RepositoryException"
"""The name under which a repository exception's description crosses (its message is the JSON payload)."""
_MAX_CHAIN = 6


def _builtin_bases(cls):
    """The built-in exception classes nearest `cls` in its MRO that a runner may raise into a test: `Exception`
    subclasses but warnings and `StopIteration` (which would end a test's loop silently), most specific first."""
    out = []
    for k in cls.__mro__:
        if getattr(k, "__module__", "") == "builtins" and isinstance(k, type) and issubclass(k, Exception) \
                and not issubclass(k, (Warning, StopIteration, StopAsyncIteration)) \
                and not any(issubclass(o, k) for o in out):
            out.append(k)
    return [k.__name__ for k in out[:3]] or ["Exception"]


def _describe(cls):
    """An exception class of the repository as data: its chain of non-built-in classes and its built-in bases."""
    chain = [[str(getattr(k, "__module__", "?"))[:80], str(getattr(k, "__qualname__", "?"))[:80]]
             for k in cls.__mro__ if getattr(k, "__module__", "") != "builtins"][:_MAX_CHAIN]
    return {"c": chain, "b": _builtin_bases(cls)}


def _dispatch(kind, target, *args, **kwargs):
    """Function 0 of the candidate's side: one operation on one of its objects."""
    return _OPS[kind](target, *args, **kwargs)


def _carrying(fn):
    """`fn` (a function of the candidate's, or the dispatcher) as the runner calls it: a repository exception
    leaves described (`_CARRIER`), a built-in one as it is."""
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            if type(e).__module__ == "builtins":
                raise
            raise _carried(e) from None
    call.__name__ = str(getattr(fn, "__name__", "function"))
    return call


def _carrying_iter(it):
    try:
        yield from it
    except Exception as e:
        if type(e).__module__ == "builtins":
            raise
        raise _carried(e) from None


def _carried(e):
    """A repository exception as the `_Carried` exception describing it (JSON, whole within 500 characters)."""
    d = _describe(type(e))
    try:
        text = str(e)
    except Exception:
        text = "<unprintable %s>" % type(e).__name__
    d["m"] = text[:400]
    payload = json.dumps(d, ensure_ascii=False)
    while len(payload) > 500 and d["m"]:  # what crosses is cut at 500 characters: keep it whole JSON
        d["m"] = d["m"][:max(0, len(d["m"]) - (len(payload) - 500) - 1)]
        payload = json.dumps(d, ensure_ascii=False)
    return _Carried(payload)


class _Carried(Exception):
    """What the serving side raises in place of a repository exception: its description as the message."""


_Carried.__name__ = _Carried.__qualname__ = _CARRIER


_LOCAL_CLASSES = {}


def _name(x):
    x = str(x)[:80]
    return x if x.replace(".", "").replace("_", "").replace("<", "").replace(">", "").isalnum() else "RepositoryError"


def local_exception_class(d):
    """The runner's class for a repository exception described by `d` (`_describe`): one per (module,
    qualified name), built from names only -- subclass of the next class of its chain, the last of its
    built-in bases. A malformed description gives `Exception`."""
    if type(d) is not dict or type(d.get("c")) is not list or type(d.get("b")) is not list:
        return Exception
    bases = []
    for n in d["b"][:3]:
        k = getattr(builtins, str(n)[:40], None)
        if isinstance(k, type) and issubclass(k, Exception) and not issubclass(k, (Warning, StopIteration,
                                                                                     StopAsyncIteration)):
            bases.append(k)
    bases = tuple(bases) or (Exception,)
    if not d["c"]:
        return bases[0]
    cls = None
    for item in reversed(d["c"][:_MAX_CHAIN]):
        if type(item) is not list or len(item) != 2:
            return Exception
        key = (_name(item[0]), _name(item[1]))
        if key not in _LOCAL_CLASSES:
            ns = {"__module__": key[0], "__qualname__": key[1]}
            name = key[1].rsplit(".", 1)[-1]
            try:
                _LOCAL_CLASSES[key] = type(name, (cls,) if cls is not None else bases, ns)
            except TypeError:  # built-in bases whose layouts conflict: the first alone
                _LOCAL_CLASSES[key] = type(name, (cls,) if cls is not None else bases[:1], ns)
        cls = _LOCAL_CLASSES[key]
    return cls


_rebuild_builtin = rebuild


def rebuild(name, msg):
    """The runner's side of a raised exception (replaces the code judge's `rebuild` for the repo judge):
    a described repository exception becomes an instance of its local class, with its own message."""
    if name == _CARRIER:
        try:
            d = json.loads(msg)
        except ValueError:
            d = None
        if type(d) is dict:
            return local_exception_class(d)(str(d.get("m", ""))[:500])
    return _rebuild_builtin(name, msg)


class _AnyDigits:
    """Big integers cross whole: the int-to-text digit limit is lifted while a frame is written or read, and
    restored after, so the repository's code sees the interpreter's default."""

    def __enter__(self):
        self.old = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else None
        if self.old is not None:
            sys.set_int_max_str_digits(0)

    def __exit__(self, *exc):
        if self.old is not None:
            sys.set_int_max_str_digits(self.old)


class _ServingPeer(RepoPeer):
    def send(self, obj):
        with _AnyDigits():
            return RepoPeer.send(self, obj)

    def recv(self):
        with _AnyDigits():
            return RepoPeer.recv(self)


def serve_repository(rfd, wfd):
    """The candidate's process: serve the runner's operations until it closes the pipe."""
    sys.path.insert(0, os.getcwd())
    peer = _ServingPeer(rfd, wfd)
    peer.capture = True
    peer.local.append(_carrying(_dispatch))
    peer.send({"ready": True})
    while True:
        msg = peer.recv()
        if type(msg) is not dict or msg.get("op") == "exit":
            return
        peer.serve(msg)
        try:  # what the code printed reaches the output tail even if the process is killed next
            sys.stdout.flush()
        except Exception:
            pass


class Remote(Proxy):
    """One of the candidate's objects (a module, class, instance) on the runner's side."""

    def __init__(self, peer, idx, name="object"):
        object.__setattr__(self, "peer", peer)
        object.__setattr__(self, "idx", idx)
        object.__setattr__(self, "__name__", name)

    def _op(self, kind, *args, **kwargs):
        return self.peer.call(0, (kind, self) + args, kwargs)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # copy, pickle and friends probe dunders: they get nothing
        return self._op("getattr", name)

    def __setattr__(self, name, value):
        self._op("setattr", name, value)

    def __call__(self, *args, **kwargs):
        return self._op("call", *args, **kwargs)

    def __len__(self):
        n = self._op("len")
        if type(n) is not int:
            raise TypeError("len() of a repository object gave %s" % type(n).__name__)
        return n

    def __bool__(self):
        return self._op("bool") is True

    def __iter__(self):
        return iter(self._op("iter"))

    def __contains__(self, x):
        return self._op("contains", x) is True

    def __getitem__(self, k):
        return self._op("getitem", k)

    def __setitem__(self, k, v):
        self._op("setitem", k, v)

    def __delitem__(self, k):
        self._op("delitem", k)

    def __repr__(self):
        try:
            r = self._op("repr")
        except Exception:
            r = None
        return r[:200] if type(r) is str else "<repository object>"

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    __hash__ = object.__hash__


class RemoteModule(types.ModuleType):
    """A repository module in the runner: attribute reads are the candidate's module's, fetched each time."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self.__dict__["_remote"]._op("getattr", name)


class RemoteFinder:
    """`sys.meta_path` entry of the runner: a module the repository holds is imported on the candidate's side."""

    def __init__(self, peer, root):
        self.peer, self.root = peer, root

    def _holds(self, fullname):
        if fullname.split(".")[0] in getattr(sys, "stdlib_module_names", ()):
            return False  # a test's `import json` is the standard library's, whatever the repository holds
        rel = fullname.replace(".", "/")
        return os.path.isfile(os.path.join(self.root, rel + ".py")) or os.path.isfile(
            os.path.join(self.root, rel, "__init__.py"))

    def find_spec(self, fullname, path=None, target=None):
        if not self._holds(fullname):
            return None
        import importlib.machinery

        return importlib.machinery.ModuleSpec(fullname, self, is_package=os.path.isdir(
            os.path.join(self.root, fullname.replace(".", "/"))))

    def create_module(self, spec):
        mod = RemoteModule(spec.name)
        mod.__dict__["_remote"] = self.peer.call(0, ("import", None, spec.name), {})
        if spec.submodule_search_locations is not None:
            mod.__path__ = []
        return mod

    def exec_module(self, module):
        pass
