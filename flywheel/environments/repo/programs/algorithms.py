"""Algorithm programs: binary search, primes, roman numerals."""

from __future__ import annotations

from flywheel.environments.repo.programs.base import Bug, Program

BSEARCH = Program(
    name="bsearch",
    summary="binary search over a sorted list",
    source='''"""Binary search over a sorted list."""


def index_of(xs, x):
    """The index of x in sorted xs, or -1 when absent."""
    lo, hi = 0, len(xs) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if xs[mid] == x:
            return mid
        if xs[mid] < x:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1


def lower_bound(xs, x):
    """The first index i with xs[i] >= x (len(xs) when there is none)."""
    lo, hi = 0, len(xs)
    while lo < hi:
        mid = (lo + hi) // 2
        if xs[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo
''',
    visible_test='''from bsearch import index_of


def test_found():
    assert index_of([1, 3, 5, 7], 5) == 2


def test_absent():
    assert index_of([1, 3, 5, 7], 4) == -1


def test_ends_and_lower_bound():
    from bsearch import lower_bound

    assert index_of([1, 3, 5, 7], 1) == 0
    assert index_of([1, 3, 5, 7], 7) == 3
    assert lower_bound([1, 2, 2, 5], 2) == 1
    assert lower_bound([1, 2], 9) == 2
''',
    hidden_test='''from bsearch import index_of, lower_bound


def test_every_position():
    xs = [2, 4, 6, 8, 10, 12, 14]
    for i, x in enumerate(xs):
        assert index_of(xs, x) == i


def test_edges():
    assert index_of([], 1) == -1
    assert index_of([5], 5) == 0
    assert index_of([1, 2], 3) == -1
    assert index_of([1, 2], 0) == -1


def test_lower_bound():
    xs = [1, 2, 2, 2, 5]
    assert lower_bound(xs, 2) == 1
    assert lower_bound(xs, 3) == 4
    assert lower_bound(xs, 0) == 0
    assert lower_bound(xs, 9) == 5
''',
    bugs=(
        Bug("wrong operator", "index_of", "while lo <= hi:", "while lo < hi:"),
        Bug("off-by-one", "index_of", "lo, hi = 0, len(xs) - 1", "lo, hi = 0, len(xs) - 2"),
        Bug("wrong operator", "lower_bound", "        if xs[mid] < x:\n            lo = mid + 1\n        else:\n            hi = mid\n",
            "        if xs[mid] <= x:\n            lo = mid + 1\n        else:\n            hi = mid\n"),
        Bug("off-by-one", "lower_bound", "lo, hi = 0, len(xs)\n", "lo, hi = 0, len(xs) - 1\n"),
    ),
    features=("lower_bound",),
)

PRIMES = Program(
    name="primes",
    summary="primality, a sieve and factorisation",
    source='''"""Primes: a primality test, a sieve and factorisation."""


def is_prime(n):
    if n < 2:
        return False
    d = 2
    while d * d <= n:
        if n % d == 0:
            return False
        d += 1
    return True


def primes_up_to(n):
    """All primes <= n (sieve of Eratosthenes)."""
    if n < 2:
        return []
    sieve = [True] * (n + 1)
    sieve[0] = sieve[1] = False
    for p in range(2, int(n ** 0.5) + 1):
        if sieve[p]:
            for q in range(p * p, n + 1, p):
                sieve[q] = False
    return [i for i, ok in enumerate(sieve) if ok]


def factorize(n):
    """Prime factors of n >= 2 in ascending order, with multiplicity."""
    factors = []
    d = 2
    while d * d <= n:
        while n % d == 0:
            factors.append(d)
            n //= d
        d += 1
    if n > 1:
        factors.append(n)
    return factors
''',
    visible_test='''from primes import is_prime, primes_up_to


def test_small_primes():
    assert [n for n in range(10) if is_prime(n)] == [2, 3, 5, 7]


def test_sieve():
    assert primes_up_to(20) == [2, 3, 5, 7, 11, 13, 17, 19]


def test_factorize_and_squares():
    from primes import factorize

    assert factorize(12) == [2, 2, 3]
    assert not is_prime(49)
    assert primes_up_to(49)[-1] == 47
''',
    hidden_test='''from primes import factorize, is_prime, primes_up_to


def test_squares_are_not_prime():
    for p in (2, 3, 5, 7, 11):
        assert not is_prime(p * p)


def test_sieve_matches_test():
    assert primes_up_to(100) == [n for n in range(101) if is_prime(n)]
    assert primes_up_to(1) == []
    assert primes_up_to(2) == [2]
    assert primes_up_to(49)[-1] == 47


def test_factorize():
    assert factorize(12) == [2, 2, 3]
    assert factorize(97) == [97]
    assert factorize(2 * 3 * 5 * 7 * 7) == [2, 3, 5, 7, 7]
    assert factorize(49) == [7, 7]
''',
    bugs=(
        Bug("wrong operator", "is_prime", "    while d * d <= n:\n        if n % d == 0:\n            return False",
            "    while d * d < n:\n        if n % d == 0:\n            return False"),
        Bug("off-by-one", "primes_up_to", "range(2, int(n ** 0.5) + 1)", "range(2, int(n ** 0.5))"),
        Bug("missing case", "factorize", "    if n > 1:\n        factors.append(n)\n", ""),
        Bug("wrong constant", "is_prime", "    if n < 2:\n        return False\n    d = 2",
            "    if n < 1:\n        return False\n    d = 2"),
    ),
    features=("factorize",),
)

ROMAN = Program(
    name="roman",
    summary="roman numeral conversion",
    source='''"""Roman numerals for 1..3999."""

NUMERALS = [
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
    (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
]
VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def to_roman(n):
    if not 0 < n < 4000:
        raise ValueError("out of range: %r" % n)
    out = []
    for value, letters in NUMERALS:
        while n >= value:
            out.append(letters)
            n -= value
    return "".join(out)


def from_roman(s):
    total = 0
    for i, ch in enumerate(s):
        v = VALUES[ch]
        if i + 1 < len(s) and VALUES[s[i + 1]] > v:
            total -= v
        else:
            total += v
    return total
''',
    visible_test='''from roman import from_roman, to_roman


def test_to_roman():
    assert to_roman(3) == "III"
    assert to_roman(1994) == "MCMXCIV"


def test_from_roman():
    assert from_roman("XLII") == 42


def test_subtractive_pairs():
    assert to_roman(40) == "XL"
    assert to_roman(90) == "XC"
    assert from_roman("IX") == 9
''',
    hidden_test='''from roman import from_roman, to_roman


def test_round_trip():
    for n in range(1, 4000):
        assert from_roman(to_roman(n)) == n


def test_known():
    assert to_roman(4) == "IV"
    assert to_roman(90) == "XC"
    assert to_roman(3999) == "MMMCMXCIX"
    assert from_roman("MMXXIV") == 2024


def test_range():
    for bad in (0, 4000, -1):
        try:
            to_roman(bad)
        except ValueError:
            pass
        else:
            raise AssertionError("%r must raise ValueError" % bad)
''',
    bugs=(
        Bug("wrong constant", "NUMERALS", '(90, "XC")', '(90, "LC")'),
        Bug("wrong operator", "to_roman", "while n >= value:", "while n > value:"),
        Bug("missing case", "from_roman", "            total -= v\n", "            total += v\n"),
        Bug("off-by-one", "to_roman", "if not 0 < n < 4000:", "if not 0 <= n < 4000:"),
    ),
    features=("from_roman",),
)

PROGRAMS = (BSEARCH, PRIMES, ROMAN)
