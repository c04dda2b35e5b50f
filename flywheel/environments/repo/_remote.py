# ruff: noqa: F821, UP031  (appended to the code judge's _harness_rpc.py source: Peer, Proxy and Broken come from it)
"""The repository's modules and objects as seen from the test runner, which never imports them (stdlib only).

Loaded on both sides after `_harness_values.py` and `_harness_rpc.py` (the code judge's call protocol):
* the candidate's side (`RepoPeer`, `serve_repository`) imports the repository's modules when the
  tests ask and answers operations on them through one dispatcher, function 0;
* the runner's side (`Remote`, `RemoteFinder`) makes `import stack` in a test give a module whose
  attributes, calls, `len`, iteration, indexing and truth are round trips to the candidate. Values
  come back rebuilt as built-in types; anything else stays a `Remote` whose `==` is identity, so an
  object whose `__eq__` is always true equals nothing here.
"""

import importlib
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
        if self.strict or isinstance(x, _PLAIN) or isinstance(x, _CALLS) or isinstance(x, Proxy):
            return Peer.enc(self, x, depth)
        m = getattr(t, "__module__", "")
        if m in ("fractions", "decimal", "_decimal", "_pydecimal", "collections") or m.split(".")[0] == "numpy":
            return Peer.enc(self, x, depth)
        if t.__name__ in ("dict_keys", "dict_items", "dict_values", "generator") or (
                hasattr(t, "__next__") and hasattr(t, "__iter__")):
            return Peer.enc(self, x, depth)
        return self._ref(x, "obj")

    def dec(self, x, depth=0):
        if type(x) is dict and x.get("t") == "obj" and type(x.get("v")) is int and set(x) <= {"t", "v"}:
            seen = self.__dict__.setdefault("remotes", {})  # one Remote per object: `is` and == hold across fetches
            if x["v"] not in seen:
                seen[x["v"]] = Remote(self, x["v"])
            return seen[x["v"]]
        return Peer.dec(self, x, depth)


def _dispatch(kind, target, *args, **kwargs):
    """Function 0 of the candidate's side: one operation on one of its objects."""
    return _OPS[kind](target, *args, **kwargs)


def serve_repository():
    """The candidate's process: serve the runner's operations until it closes the pipe."""
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)
    rfd, wfd = int(sys.argv[1]), int(sys.argv[2])
    sys.argv = sys.argv[:1]
    sys.path.insert(0, os.getcwd())
    peer = RepoPeer(rfd, wfd)
    peer.capture = True
    peer.local.append(_dispatch)
    peer.send({"ready": True})
    while True:
        msg = peer.recv()
        if type(msg) is not dict or msg.get("op") == "exit":
            return
        peer.serve(msg)


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
