"""Date arithmetic and descriptive statistics."""

from __future__ import annotations

from flywheel.environments.repo.programs.base import Bug, Program

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

PROGRAMS = (DATES, STATS)
