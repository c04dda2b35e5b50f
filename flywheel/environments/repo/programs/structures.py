"""Data-structure programs: stack, LRU cache, ring buffer, interval merge, matrix ops."""

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

INTERVALS = Program(
    name="intervals",
    summary="merging overlapping closed intervals",
    source='''"""Merge overlapping closed intervals [start, end]."""


def merge(intervals):
    """Sorted, non-overlapping intervals covering the same points; touching intervals merge."""
    result = []
    for start, end in sorted(intervals):
        if result and start <= result[-1][1]:
            result[-1][1] = max(result[-1][1], end)
        else:
            result.append([start, end])
    return [tuple(iv) for iv in result]


def total_length(intervals):
    """Total length covered by the union of the intervals."""
    return sum(end - start for start, end in merge(intervals))
''',
    visible_test='''from intervals import merge


def test_disjoint():
    assert merge([(1, 2), (4, 5)]) == [(1, 2), (4, 5)]


def test_overlap():
    assert merge([(1, 3), (2, 6)]) == [(1, 6)]


def test_unsorted_touching():
    from intervals import total_length

    assert merge([(5, 6), (1, 5)]) == [(1, 6)]
    assert total_length([(0, 2), (4, 5)]) == 3
''',
    hidden_test='''from intervals import merge, total_length


def test_unsorted_input():
    assert merge([(8, 10), (1, 3), (2, 6), (15, 18)]) == [(1, 6), (8, 10), (15, 18)]


def test_touching_merge():
    assert merge([(1, 4), (4, 5)]) == [(1, 5)]


def test_contained():
    assert merge([(1, 10), (2, 3), (4, 5)]) == [(1, 10)]


def test_empty():
    assert merge([]) == []


def test_total_length():
    assert total_length([(0, 2), (1, 5), (10, 11)]) == 6
''',
    bugs=(
        Bug("wrong operator", "merge", "start <= result[-1][1]", "start < result[-1][1]"),
        Bug("wrong operator", "merge", "max(result[-1][1], end)", "min(result[-1][1], end)"),
        Bug("missing case", "merge", "for start, end in sorted(intervals):", "for start, end in intervals:"),
        Bug("swapped arguments", "total_length", "sum(end - start for", "sum(start - end for"),
    ),
    features=("merge",),
)

MATRIX = Program(
    name="matrix",
    summary="small matrix operations on lists of rows",
    source='''"""Matrix operations on lists of rows."""


def identity(n):
    return [[1 if i == j else 0 for j in range(n)] for i in range(n)]


def transpose(m):
    return [[m[i][j] for i in range(len(m))] for j in range(len(m[0]))]


def matmul(a, b):
    """The product a x b; ValueError when the inner dimensions differ."""
    if len(a[0]) != len(b):
        raise ValueError("inner dimensions differ")
    return [[sum(a[i][k] * b[k][j] for k in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]


def trace(m):
    return sum(m[i][i] for i in range(len(m)))
''',
    visible_test='''from matrix import identity, matmul


def test_identity():
    assert identity(2) == [[1, 0], [0, 1]]


def test_square_product():
    assert matmul([[1, 2], [3, 4]], [[5, 6], [7, 8]]) == [[19, 22], [43, 50]]


def test_transpose_and_trace():
    from matrix import trace, transpose

    assert transpose([[1, 2]]) == [[1], [2]]
    assert trace([[1, 2], [3, 4]]) == 5
''',
    hidden_test='''from matrix import identity, matmul, trace, transpose


def test_transpose_rect():
    assert transpose([[1, 2, 3], [4, 5, 6]]) == [[1, 4], [2, 5], [3, 6]]


def test_rect_product():
    assert matmul([[1, 2, 3]], [[1], [2], [3]]) == [[14]]
    assert matmul([[1], [2]], [[3, 4]]) == [[3, 4], [6, 8]]


def test_identity_neutral():
    m = [[2, 3], [5, 7]]
    assert matmul(identity(2), m) == m
    assert identity(3)[2] == [0, 0, 1]


def test_dimension_check():
    try:
        matmul([[1, 2]], [[1, 2]])
    except ValueError:
        pass
    else:
        raise AssertionError("mismatched dimensions must raise ValueError")


def test_trace():
    assert trace([[1, 2, 3], [4, 5, 6], [7, 8, 9]]) == 15
''',
    bugs=(
        Bug("swapped arguments", "transpose", "[[m[i][j] for i in range(len(m))] for j in range(len(m[0]))]",
            "[[m[j][i] for i in range(len(m))] for j in range(len(m[0]))]"),
        Bug("off-by-one", "trace", "sum(m[i][i] for i in range(len(m)))", "sum(m[i][i] for i in range(len(m) - 1))"),
        Bug("wrong constant", "identity", "[[1 if i == j else 0", "[[1 if i == j else 1"),
        Bug("missing case", "matmul", "    if len(a[0]) != len(b):\n        raise ValueError(\"inner dimensions differ\")\n", ""),
    ),
    features=("matmul",),
)

PROGRAMS = (STACK, LRU, RING, INTERVALS, MATRIX)
