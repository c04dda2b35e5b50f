"""The natively computed graders: `string_check` and `text_similarity`, pure Python over the rendered texts.

`string_check` operations: `eq`, `ne` (exact), `like` (the reference occurs in the input), `ilike` (the same,
ignoring case). `text_similarity` metrics: `fuzzy_match` (rapidfuzz's normalised indel similarity of the two
texts, `fuzz.ratio / 100`), `bleu` (sentence BLEU-4, uniform weights, brevity penalty, add-one smoothing of the
higher orders as in Lin & Och 2004), `gleu` (Google-BLEU: min(precision, recall) over 1-4-grams), `rouge_1` ..
`rouge_5` (n-gram F1) and `rouge_l` (longest-common-subsequence F1). Tokens are lower-cased words and single
punctuation marks. `meteor` (WordNet synonyms) and `cosine` (an embedding model) are not computed here: a
spec naming them is refused when it is built, saying so.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable

from flywheel.environments.verdict import TaskError

STRING_OPS = ("eq", "ne", "like", "ilike")
UNSUPPORTED_METRICS = {"meteor": "needs WordNet synonyms", "cosine": "needs an embedding model"}
_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def string_check(op: str, text: str, reference: str) -> float:
    if op == "eq":
        return float(text == reference)
    if op == "ne":
        return float(text != reference)
    if op == "like":
        return float(reference in text)
    return float(reference.lower() in text.lower())


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _ngrams(toks: list[str], n: int) -> Counter:
    return Counter(tuple(toks[i:i + n]) for i in range(len(toks) - n + 1))


def bleu(text: str, reference: str) -> float:
    hyp, ref = tokens(text), tokens(reference)
    if not hyp or not ref:
        return float(hyp == ref)
    logs = 0.0
    for n in range(1, 5):
        h, r = _ngrams(hyp, n), _ngrams(ref, n)
        match, total = sum((h & r).values()), max(1, sum(h.values()))
        if n == 1 and match == 0:
            return 0.0
        logs += math.log((match + (n > 1)) / (total + (n > 1))) / 4
    bp = 1.0 if len(hyp) > len(ref) else math.exp(1 - len(ref) / len(hyp))
    return min(1.0, bp * math.exp(logs))


def gleu(text: str, reference: str) -> float:
    hyp, ref = tokens(text), tokens(reference)
    h = sum((_ngrams(hyp, n) for n in range(1, 5)), Counter())
    r = sum((_ngrams(ref, n) for n in range(1, 5)), Counter())
    if not h or not r:
        return float(hyp == ref)
    match = sum((h & r).values())
    return min(match / sum(h.values()), match / sum(r.values()))


def _f1(match: int, hyp_total: int, ref_total: int) -> float:
    if not match:
        return 0.0
    p, r = match / hyp_total, match / ref_total
    return 2 * p * r / (p + r)


def rouge_n(n: int) -> Callable[[str, str], float]:
    def score(text: str, reference: str) -> float:
        h, r = _ngrams(tokens(text), n), _ngrams(tokens(reference), n)
        if not h or not r:
            return float(tokens(text) == tokens(reference))
        return _f1(sum((h & r).values()), sum(h.values()), sum(r.values()))
    return score


def rouge_l(text: str, reference: str) -> float:
    hyp, ref = tokens(text), tokens(reference)
    if not hyp or not ref:
        return float(hyp == ref)
    prev = [0] * (len(ref) + 1)
    for a in hyp:  # LCS by dynamic programming, one row at a time
        cur = [0]
        for j, b in enumerate(ref, 1):
            cur.append(prev[j - 1] + 1 if a == b else max(prev[j], cur[j - 1]))
        prev = cur
    return _f1(prev[-1], len(hyp), len(ref))


def fuzzy_match(text: str, reference: str) -> float:
    from rapidfuzz import fuzz  # loaded with the first fuzzy grade

    return fuzz.ratio(text, reference) / 100.0


METRICS: dict[str, Callable[[str, str], float]] = {
    "fuzzy_match": fuzzy_match, "bleu": bleu, "gleu": gleu, "rouge_l": rouge_l,
    **{f"rouge_{n}": rouge_n(n) for n in range(1, 6)},
}
MAX_SIMILARITY_CHARS = 20_000
"""Longer texts are cut before a similarity metric (rouge_l is quadratic in tokens)."""


def metric(name: str) -> Callable[[str, str], float]:
    """The similarity function named by a spec's `evaluation_metric` (TaskError for one not computed here)."""
    if name in UNSUPPORTED_METRICS:
        raise TaskError(f"text_similarity: evaluation_metric {name!r} is not supported ({UNSUPPORTED_METRICS[name]}); "
                        f"use one of {sorted(METRICS)} or a score_model grader")
    if name not in METRICS:
        raise TaskError(f"text_similarity: unknown evaluation_metric {name!r}; one of {sorted(METRICS)}")
    fn = METRICS[name]
    return lambda a, b: fn(a[:MAX_SIMILARITY_CHARS], b[:MAX_SIMILARITY_CHARS])
