"""Math answer extraction: the final answer(s) a response states, in linear time.

Rules (docs/verifiers.md, "math"):
- The text is normalised first: NFKC (fullwidth `４２` -> `42`), every Unicode decimal digit to
  ASCII, superscripts/subscripts to `^{..}`/`_{..}` (NFKC alone would turn `6²` into `62`).
- *Strong* statements are every `\\boxed{}`/`\\fbox{}` and every `Answer:`/`Final answer:` (a
  marker with a colon). *Weak* ones are prose ("the answer is 7"). When a strong statement exists,
  weak ones before the first strong one are reasoning and ignored ("The answer is not 41.
  Answer: 42" states 42); weak ones after it count. Without a strong statement every weak one
  counts; without any, the last number does.
- Every candidate must agree (checked by math-verify in the worker). A hedge after the final
  statement ("\\boxed{42} (or possibly 43)", "Answer: 42. Maybe 43") is a second answer and fails.
- A candidate that is a relation: `name = value` states `value`; a chain `e1 = e2 = value` states
  every non-name `ei`, so all must be equal (`41 = 42` fails, `6 \\times 7 = 42` passes). `\\approx`
  counts as `=`; `<`, `\\le`, `\\neq`... fail against a reference that is not itself a relation.
- Degenerate input fails fast: a digit run over MAX_DIGIT_RUN, a candidate over MAX_ANSWER_CHARS.
  Every regex here is linear in the input (no nested unbounded repeats that can backtrack).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from itertools import islice

MAX_ANSWER_CHARS = 300
MAX_DIGIT_RUN = 1000
"""No honest answer or derivation needs a 1000-digit number; math-verify's parsing is superlinear in one."""
MAX_STATEMENTS = 64
"""Boxes looked at (and 4x as many answer statements): more is a degenerate response that fails anyway."""
TRAIL_WINDOW = 2000
"""How much text after the final statement is searched for a hedge ("or possibly 43")."""

_SUP = "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿ"
_SUB = "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎"
_SUP_TABLE = str.maketrans(_SUP, "0123456789+-=()n")
_SUB_TABLE = str.maketrans(_SUB, "0123456789+-=()")
_SUP_RE = re.compile(f"[{_SUP}]+")
_SUB_RE = re.compile(f"[{_SUB}]+")
_UNI_DIGIT_RE = re.compile(r"(?![0-9])\d")
_SYMBOLS = str.maketrans({"−": "-", "⁄": "/", "×": "\\times ", "÷": "\\div ", "·": "\\cdot ", "∞": "\\infty "})

_BOX_RE = re.compile(r"\\(?:boxed|fbox)\s*\{")
_ANSWER_RE = re.compile(
    r"(?im)(?:(?:^|(?<=[.!?]))[ \t*#>_-]*(?:(?:so|thus|therefore|hence),?\s+)?(?:the\s+)?(?:final\s+)?"
    r"answer\**[ \t]*(?::|\bis\b:?)|\bthe\s+(?:final\s+)?answer\s+is\b:?)\**[ \t]*"
)
_SENTENCE_END_RE = re.compile(r"\.(?=\s|$)")
_INNER_ANSWER_RE = re.compile(r"(?i)\banswer\**[ \t]*(?::|\bis\b:?)\**[ \t]*")
"""Inside an answer segment any further "answer:" starts another candidate ("Answer: 3, no, answer: 7")."""
_NUMBER_RE = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:\s*/\s*\d+)?")
_HEDGE_RE = re.compile(
    r"(?<![\d,.])-?\d[\d,]*(?:\.\d+)?\s*(?:\bor\b|\beither\b|/\s*or|\band/or\b|\bmaybe\b|\bpossibly\b)"
    r"\s*(?:maybe\s+)?-?\d"
)
HEDGE_WORD_RE = re.compile(
    r"(?i)\bor\b|\beither\b|\bpossibly\b|\bmaybe\b|\bperhaps\b|\balternatively\b|\\lor\b|\\vee\b|\\pm\b|±|\\mp\b|∓"
    r"|\bwait\b|\bcorrection\b|\bcorrected\b|\bon\s+second\s+thought\b|\boops\b|\btypo\b|\bscratch\s+that\b|\bI\s+meant\b"
)
"""A hedge or correction inside one candidate ("42 or 43", "42, possibly 43", "7 \\pm 1", "42 (oops, 43)")
makes it several answers."""
_HEDGE_WORDS = (r"\bpossibly\b|\bmaybe\b|\bperhaps\b|\balternatively\b|\bmight\s+(?:also\s+)?be\b|"
                r"\bcould\s+(?:also\s+)?be\b|\bnot\s+sure\b|\bunsure\b|"
                # a correction after the final answer states another one: "Answer: 42. Wait, actually 43."
                r"\bwait\b|\bcorrection\b|\bcorrected\b|\bon\s+second\s+thought\b|\boops\b|\btypo\b|"
                r"\bscratch\s+that\b|\bI\s+meant\b")
_TRAIL_HEDGE_RE = re.compile(
    r"(?i)(?:" + _HEDGE_WORDS + r")[^.\n\d]{0,40}\d"
    r"|\d[^\s.]{0,20}\s+(?:is\s+|works\s+|would\s+be\s+)?(?:also|too|as\s+well)\b"
    r"|\banother\s+(?:valid\s+|possible\s+|correct\s+)?(?:answer|solution)\b[^.\n\d]{0,40}\d"
)
"""After the final statement, anywhere in TRAIL_WINDOW: "Answer: 42. Maybe 43 though"."""
_LINE_HEDGE_RE = re.compile(r"(?i)(?:\bor\b|\beither\b|\botherwise\b|" + _HEDGE_WORDS + r")[^.\n\d]{0,40}\d")
"""On the final statement's own line, a bare "or" too: "\\boxed{42} (or 43)"."""
_DIGIT_RUN_RE = re.compile(rf"(?<![0-9])[0-9]{{{MAX_DIGIT_RUN + 1}}}")
RELATION_RE = re.compile(r"=|<|>|≤|≥|≠|≈|\\(?:le|ge|leq|geq|neq|ne|lt|gt|approx|sim|equiv)(?![A-Za-z])")
_ORDER_RE = re.compile(r"<|>|≤|≥|≠|\\(?:le|ge|leq|geq|neq|ne|lt|gt)(?![A-Za-z])")
_EQ_SPLIT_RE = re.compile(r":?=|\\approx(?![A-Za-z])|≈|\\equiv(?![A-Za-z])")
_NAME_RE = re.compile(
    r"^(?:\\text\{[A-Za-z ]{1,30}\}|\\?[A-Za-z]{1,20})(?:_\{?[A-Za-z0-9]{1,8}\}?)?(?:\([^()=]{0,30}\))?$"
)
"""The left side of `name = value`: `x`, `x_1`, `\\theta`, `f(3)`, `\\text{total}`."""
_CONSTANT_RE = re.compile(r"^(?:\\pi|\\infty|\\tau|e|i|E|I|\\mathrm\{[ei]\}|nan|inf)$")
"""Not names: `\\pi = 42` is a false equality, not a label."""


def normalise(text: str) -> str:
    """NFKC, ASCII digits, super/subscripts as `^{}`/`_{}`: honest non-ASCII answers compare as typed."""
    if text.isascii():
        return text
    text = _SUP_RE.sub(lambda m: "^{" + m.group().translate(_SUP_TABLE) + "}", text)
    text = _SUB_RE.sub(lambda m: "_{" + m.group().translate(_SUB_TABLE) + "}", text)
    text = unicodedata.normalize("NFKC", text).translate(_SYMBOLS)
    return _UNI_DIGIT_RE.sub(lambda m: str(unicodedata.decimal(m.group(), 0)), text)


NAN_TEXT_RE = re.compile(r"(?i)^[-+]?\s*(?:nan|\\(?:text|mathrm)\{\s*nan\s*\})$")
"""`nan` typed as a word: math-verify reads it as the product n*a*n, which would equal a reference 'nan'."""


def degenerate(text: str) -> str | None:
    """Why the (normalised) text is too degenerate to parse, or None."""
    if _DIGIT_RUN_RE.search(text):
        return f"degenerate response: a run of over {MAX_DIGIT_RUN} digits"
    return None


def _balanced(text: str, start: int) -> tuple[str, int] | None:
    """Content of the brace group opening at text[start-1] == '{', and the index after it.

    Scans at most MAX_ANSWER_CHARS + 1 characters: a longer box is returned truncated (and fails
    as too long), so a response of many unclosed boxes stays linear.
    """
    depth, i, stop = 1, start, min(len(text), start + MAX_ANSWER_CHARS + 1)
    while i < stop:
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[start:i], i + 1
        i += 1
    return (text[start:stop], stop) if stop < len(text) else None


def _clean(ans: str) -> str:
    ans = ans.strip().strip("*").strip().rstrip(".;!,").rstrip()
    if len(ans) >= 2 and ans[0] == "$" and ans[-1] == "$":
        ans = ans.strip("$").strip()
    if ans.startswith("\\(") and ans.endswith("\\)"):
        ans = ans[2:-2].strip()
    return ans


@dataclass(frozen=True)
class Extraction:
    """What a response states: how it was found, the candidates, and a hedge after them (or None)."""

    method: str
    cands: list[str]
    hedge: str | None = None


def extract(text: str) -> Extraction:
    """The candidate final answers of normalised text; see the module docstring."""
    found: list[tuple[int, int, bool, bool, str]] = []  # (start, end, strong, boxed, candidate)
    for k, m in enumerate(_BOX_RE.finditer(text)):
        if k > MAX_STATEMENTS:
            break  # already far too many answers: fails, and fast
        got = _balanced(text, m.end())
        if got is not None:
            found.append((m.start(), got[1], True, True, _clean(got[0])))
    marks = list(islice(_ANSWER_RE.finditer(text), 4 * MAX_STATEMENTS))
    for k, m in enumerate(marks):
        stop = marks[k + 1].start() if k + 1 < len(marks) else len(text)
        seg = text[m.end() : min(stop, m.end() + 4 * MAX_ANSWER_CHARS)].split("\n", 1)[0]
        if _BOX_RE.search(seg):
            continue  # its boxes are already candidates
        seg = _SENTENCE_END_RE.split(seg, 1)[0]
        for part in _INNER_ANSWER_RE.split(seg):
            part = _clean(part)
            if part:
                found.append((m.start(), m.end() + len(seg), ":" in m.group(), False, part))
    if found:
        strong_at = [f[0] for f in found if f[2]]
        first = min(strong_at) if strong_at else -1
        kept = sorted(f for f in found if f[2] or f[0] > first)
        method = "+".join(x for x, ok in (("boxed", any(f[3] for f in kept)),
                                           ("answer", not all(f[3] for f in kept))) if ok)
        trail = text[max(f[1] for f in kept) :][:TRAIL_WINDOW]
        hedge = _LINE_HEDGE_RE.search(trail.split("\n", 1)[0]) or _TRAIL_HEDGE_RE.search(trail)
        return Extraction(method, [f[4] for f in kept], hedge.group() if hedge else None)
    # fallback: the last number; a hedge between numbers in the final sentence is two answers
    tail = re.split(r"(?:\n|(?<!\d)\.(?!\d))", text.strip())
    tail_text = next((s for s in reversed(tail) if _NUMBER_RE.search(s)), "")
    if _HEDGE_RE.search(tail_text):
        return Extraction("last_number", [n.replace(" ", "") for n in _NUMBER_RE.findall(tail_text)])
    nums = _NUMBER_RE.findall(text)
    return Extraction("last_number", [nums[-1].replace(" ", "")]) if nums else Extraction("none", [])


def extract_candidates(text: str) -> tuple[str, list[str]]:
    """(method, candidates): `extract` without the hedge."""
    e = extract(text)
    return e.method, e.cands


def values_to_compare(cands: list[str], gold: str) -> tuple[list[str], str | None]:
    """The expressions that must all equal each other and the reference, or (_, why it fails).

    Applies the hedge and relation rules; a reference that is itself a hedge or a relation
    (`x = 1 or x = 2`, `y = 2x + 1`) turns the respective rule off.
    """
    if not HEDGE_WORD_RE.search(gold) and any(HEDGE_WORD_RE.search(c) for c in cands):
        return [], "several candidate answers in one (hedged with 'or', 'possibly', '\\pm'...)"
    if RELATION_RE.search(gold):
        return list(cands), None
    out: list[str] = []
    for c in cands:
        if _ORDER_RE.search(c):
            return [], "the final answer is an inequality; the reference is a value"
        chain = [x.strip() for x in _EQ_SPLIT_RE.split(c)]
        if len(chain) == 1:
            out.append(c)
            continue
        if any(not x for x in chain):
            return [], "the final answer is an incomplete equation"
        out.extend(x for x in chain[:-1] if not _NAME_RE.match(x) or _CONSTANT_RE.match(x))
        out.append(chain[-1])
    return out, None
