"""Numeric programs on lists: interval merge, matrix ops."""

from __future__ import annotations

from flywheel.environments.repo.programs.base import Bug, Program

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

PROGRAMS = (INTERVALS, MATRIX)
