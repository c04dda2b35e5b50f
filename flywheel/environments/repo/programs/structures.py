"""Data-structure programs: stack, LRU cache, ring buffer."""

from __future__ import annotations

from flywheel.environments.repo.programs.base import Bug, Program

STACK = Program(
    name="stack",
    summary="a LIFO stack",
    source='''"""A LIFO stack backed by a list."""


class Stack:
    def __init__(self, items=()):
        self._items = list(items)

    def push(self, item):
        """Put item on top."""
        self._items.append(item)

    def pop(self):
        """Remove and return the top item; IndexError when empty."""
        if not self._items:
            raise IndexError("pop from empty stack")
        return self._items.pop()

    def peek(self):
        """Return the top item without removing it; IndexError when empty."""
        if not self._items:
            raise IndexError("peek at empty stack")
        return self._items[-1]

    def is_empty(self):
        return len(self._items) == 0

    def __len__(self):
        return len(self._items)
''',
    visible_test='''from stack import Stack


def test_push_pop():
    s = Stack()
    s.push(1)
    s.push(2)
    assert s.pop() == 2
    assert s.pop() == 1


def test_peek():
    s = Stack([1, 2, 3])
    assert s.peek() == 3
    assert len(s) == 3


def test_is_empty():
    assert Stack().is_empty()
    assert not Stack([1]).is_empty()
''',
    hidden_test='''from stack import Stack


def test_lifo_order():
    s = Stack()
    for i in range(5):
        s.push(i)
    assert [s.pop() for _ in range(5)] == [4, 3, 2, 1, 0]


def test_empty():
    s = Stack()
    assert s.is_empty()
    s.push("a")
    assert not s.is_empty()
    assert len(s) == 1


def test_peek_keeps_item():
    s = Stack(["x", "y"])
    assert s.peek() == "y"
    assert s.peek() == "y"
    assert len(s) == 2


def test_pop_empty_raises():
    s = Stack()
    try:
        s.pop()
    except IndexError:
        pass
    else:
        raise AssertionError("pop on empty stack must raise IndexError")


def test_peek_empty_raises():
    try:
        Stack().peek()
    except IndexError:
        pass
    else:
        raise AssertionError("peek on empty stack must raise IndexError")
''',
    bugs=(
        Bug("off-by-one", "Stack.peek", "return self._items[-1]", "return self._items[-2]"),
        Bug("wrong operator", "Stack.is_empty", "len(self._items) == 0", "len(self._items) != 0"),
        Bug("wrong constant", "Stack.pop", "return self._items.pop()", "return self._items.pop(0)"),
    ),
    features=("Stack.push",),
)

LRU = Program(
    name="lru",
    summary="a least-recently-used cache",
    source='''"""A least-recently-used cache of bounded capacity."""

from collections import OrderedDict


class LRUCache:
    def __init__(self, capacity):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._data = OrderedDict()

    def get(self, key, default=None):
        """The value of key (marking it most recently used), or default."""
        if key not in self._data:
            return default
        self._data.move_to_end(key)
        return self._data[key]

    def put(self, key, value):
        """Store key -> value, evicting the least recently used entry when over capacity."""
        if key in self._data:
            self._data.move_to_end(key)
        self._data[key] = value
        if len(self._data) > self.capacity:
            self._data.popitem(last=False)

    def keys(self):
        """Keys from least to most recently used."""
        return list(self._data)

    def __len__(self):
        return len(self._data)
''',
    visible_test='''from lru import LRUCache


def test_put_get():
    c = LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    assert c.get("a") == 1
    assert c.get("b") == 2


def test_missing_key():
    c = LRUCache(1)
    assert c.get("zzz") is None
    assert c.get("zzz", 7) == 7


def test_eviction_order():
    c = LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    c.get("a")
    c.put("c", 3)
    assert c.keys() == ["a", "c"]
''',
    hidden_test='''from lru import LRUCache


def test_evicts_least_recent():
    c = LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    c.put("c", 3)
    assert c.get("a") is None
    assert c.get("b") == 2 and c.get("c") == 3
    assert len(c) == 2


def test_get_refreshes():
    c = LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    c.get("a")
    c.put("c", 3)
    assert c.get("b") is None
    assert c.get("a") == 1


def test_update_refreshes():
    c = LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    c.put("a", 10)
    c.put("c", 3)
    assert c.keys() == ["a", "c"]
    assert c.get("a") == 10


def test_capacity_one():
    c = LRUCache(1)
    c.put(1, "x")
    assert c.get(1) == "x"
    c.put(2, "y")
    assert c.keys() == [2]


def test_bad_capacity():
    try:
        LRUCache(0)
    except ValueError:
        pass
    else:
        raise AssertionError("capacity 0 must raise ValueError")
''',
    bugs=(
        Bug("off-by-one", "LRUCache.put", "if len(self._data) > self.capacity:", "if len(self._data) > self.capacity + 1:"),
        Bug("wrong constant", "LRUCache.put", "self._data.popitem(last=False)", "self._data.popitem(last=True)"),
        Bug("missing case", "LRUCache.get", "        self._data.move_to_end(key)\n        return", "        return"),
        Bug("wrong operator", "LRUCache.__init__", "if capacity < 1:", "if capacity < 0:"),
    ),
    features=("LRUCache.put",),
)

RING = Program(
    name="ring",
    summary="a fixed-size ring buffer that overwrites its oldest item",
    source='''"""A fixed-size ring buffer: appending to a full buffer overwrites the oldest item."""


class RingBuffer:
    def __init__(self, capacity):
        self.capacity = capacity
        self._buf = [None] * capacity
        self._start = 0
        self._size = 0

    def append(self, item):
        end = (self._start + self._size) % self.capacity
        self._buf[end] = item
        if self._size < self.capacity:
            self._size += 1
        else:
            self._start = (self._start + 1) % self.capacity

    def to_list(self):
        """Items from oldest to newest."""
        return [self._buf[(self._start + i) % self.capacity] for i in range(self._size)]

    def is_full(self):
        return self._size == self.capacity

    def __len__(self):
        return self._size
''',
    visible_test='''from ring import RingBuffer


def test_append_under_capacity():
    r = RingBuffer(3)
    r.append(1)
    r.append(2)
    assert r.to_list() == [1, 2]
    assert len(r) == 2


def test_overwrite():
    r = RingBuffer(2)
    for i in (1, 2, 3):
        r.append(i)
    assert r.to_list() == [2, 3]
''',
    hidden_test='''from ring import RingBuffer


def test_overwrites_oldest():
    r = RingBuffer(3)
    for i in range(5):
        r.append(i)
    assert r.to_list() == [2, 3, 4]
    assert len(r) == 3


def test_full():
    r = RingBuffer(2)
    assert not r.is_full()
    r.append("a")
    r.append("b")
    assert r.is_full()
    r.append("c")
    assert r.is_full()
    assert r.to_list() == ["b", "c"]


def test_long_run():
    r = RingBuffer(4)
    for i in range(103):
        r.append(i)
    assert r.to_list() == [99, 100, 101, 102]


def test_empty():
    assert RingBuffer(3).to_list() == []
''',
    bugs=(
        Bug("off-by-one", "RingBuffer.append", "if self._size < self.capacity:", "if self._size < self.capacity - 1:"),
        Bug("wrong operator", "RingBuffer.append", "end = (self._start + self._size) % self.capacity",
            "end = (self._start - self._size) % self.capacity"),
        Bug("missing case", "RingBuffer.append", "            self._start = (self._start + 1) % self.capacity\n",
            "            pass\n"),
    ),
    features=("RingBuffer.to_list",),
)

PROGRAMS = (STACK, LRU, RING)
