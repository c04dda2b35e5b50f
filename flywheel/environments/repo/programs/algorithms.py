"""Algorithm programs: binary search, primes, roman numerals, date math, statistics."""

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

DATES = Program(
    name="dates",
    summary="calendar date arithmetic",
    source='''"""Calendar arithmetic in the proleptic Gregorian calendar."""

DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def is_leap(year):
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year, month):
    if month == 2 and is_leap(year):
        return 29
    return DAYS[month - 1]


def day_of_year(year, month, day):
    """1 for January 1st."""
    return sum(days_in_month(year, m) for m in range(1, month)) + day


def add_days(year, month, day, n):
    """The date n >= 0 days after (year, month, day)."""
    day += n
    while day > days_in_month(year, month):
        day -= days_in_month(year, month)
        month += 1
        if month > 12:
            month, year = 1, year + 1
    return year, month, day
''',
    visible_test='''from dates import day_of_year, is_leap


def test_leap():
    assert is_leap(2024)
    assert not is_leap(2023)


def test_day_of_year():
    assert day_of_year(2023, 1, 1) == 1
    assert day_of_year(2023, 3, 1) == 60


def test_centuries_and_adding():
    from dates import add_days, days_in_month

    assert not is_leap(1900) and is_leap(2000)
    assert days_in_month(2024, 2) == 29
    assert add_days(2023, 1, 31, 1) == (2023, 2, 1)
    assert day_of_year(2023, 4, 1) == 91
''',
    hidden_test='''from dates import add_days, day_of_year, days_in_month, is_leap


def test_century_rules():
    assert not is_leap(1900)
    assert is_leap(2000)
    assert not is_leap(2100)


def test_month_lengths():
    assert [days_in_month(2023, m) for m in range(1, 13)] == [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    assert days_in_month(2024, 2) == 29


def test_day_of_year_leap():
    assert day_of_year(2024, 3, 1) == 61
    assert day_of_year(2024, 12, 31) == 366
    assert day_of_year(2023, 12, 31) == 365


def test_add_days():
    assert add_days(2023, 12, 31, 1) == (2024, 1, 1)
    assert add_days(2024, 2, 28, 1) == (2024, 2, 29)
    assert add_days(2023, 1, 31, 30) == (2023, 3, 2)
    assert add_days(2023, 5, 5, 0) == (2023, 5, 5)
''',
    bugs=(
        Bug("missing case", "is_leap", " and (year % 100 != 0 or year % 400 == 0)", " and year % 100 != 0"),
        Bug("off-by-one", "day_of_year", "for m in range(1, month)) + day", "for m in range(1, month + 1)) + day"),
        Bug("wrong constant", "DAYS", "DAYS = [31, 28, 31, 30,", "DAYS = [31, 28, 30, 30,"),
        Bug("wrong operator", "add_days", "while day > days_in_month(year, month):", "while day >= days_in_month(year, month):"),
        Bug("swapped arguments", "days_in_month", "if month == 2 and is_leap(year):", "if month == 2 and is_leap(month):"),
    ),
    features=("add_days",),
)

STATS = Program(
    name="stats",
    summary="descriptive statistics",
    source='''"""Descriptive statistics of a non-empty list of numbers."""


def mean(xs):
    return sum(xs) / len(xs)


def median(xs):
    s = sorted(xs)
    mid = len(s) // 2
    if len(s) % 2 == 1:
        return s[mid]
    return (s[mid - 1] + s[mid]) / 2


def variance(xs):
    """Population variance."""
    m = mean(xs)
    return sum((x - m) ** 2 for x in xs) / len(xs)


def mode(xs):
    """The most frequent value; ties go to the smallest."""
    counts = {}
    for x in xs:
        counts[x] = counts.get(x, 0) + 1
    return min(counts, key=lambda x: (-counts[x], x))
''',
    visible_test='''from stats import mean, median


def test_mean():
    assert mean([1, 2, 3, 4]) == 2.5


def test_median_odd():
    assert median([3, 1, 2]) == 2


def test_median_even_and_variance():
    from stats import mode, variance

    assert median([1, 2, 3, 4]) == 2.5
    assert variance([1, 3]) == 1
    assert mode([2, 1, 2]) == 2
''',
    hidden_test='''from stats import mean, median, mode, variance


def test_median_even():
    assert median([4, 1, 3, 2]) == 2.5
    assert median([10, 20]) == 15


def test_variance():
    assert variance([2, 4, 4, 4, 5, 5, 7, 9]) == 4
    assert variance([5]) == 0


def test_mode_ties():
    assert mode([1, 2, 2, 3, 3]) == 2
    assert mode([7]) == 7
    assert mode([5, 1, 5, 1, 0]) == 1


def test_mean_negative():
    assert mean([-1, 1, -3, 3]) == 0
''',
    bugs=(
        Bug("missing case", "median", "    if len(s) % 2 == 1:\n        return s[mid]\n    return (s[mid - 1] + s[mid]) / 2\n",
            "    return s[mid]\n"),
        Bug("wrong constant", "variance", "return sum((x - m) ** 2 for x in xs) / len(xs)",
            "return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)"),
        Bug("wrong operator", "mode", "key=lambda x: (-counts[x], x)", "key=lambda x: (counts[x], x)"),
        Bug("off-by-one", "median", "return (s[mid - 1] + s[mid]) / 2", "return (s[mid] + s[mid + 1]) / 2"),
    ),
    features=("variance",),
)

PROGRAMS = (BSEARCH, PRIMES, ROMAN, DATES, STATS)
