"""The redaction patterns: one entry per kind of secret or personal data, in the order they apply.

Every regex is written in the common subset of RE2 (DuckDB, Arrow) and Python `re`, and only uses
`[0-9]` for digits (Python's `\\d` would also take other scripts' digits). Patterns run over JSON text
in the SQL fast path and over decoded strings in Python, so a key's left edge accepts an escaped
newline (`\\n`) as a break. Kinds with a `check` (credit cards: Luhn) run in Python only: a row where
their candidate regex matches is redacted by the Python path (`redact.ROUTE_TO_PYTHON`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class RedactionPattern:
    """One kind of secret: a regex and its replacement (`\\1`, `\\2` keep captured context)."""

    kind: str
    regex: str
    replacement: str
    prefilter: str = ""  # cheap RE2 necessary condition (literal alternation); "" = use `regex`
    columns: frozenset[str] | None = None  # the columns it applies to; None = all
    check: Callable[[str], bool] | None = None  # Python-only validation of the match (its last group)

    @property
    def placeholder(self) -> str:
        return f"[REDACTED:{self.kind}]"


def luhn(digits: str) -> bool:
    """True when the digit string passes the Luhn checksum every payment card number carries."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def card_number(text: str) -> bool:
    """A payment card number: 13-19 digits, one kind of separator (or none), Luhn-valid."""
    seps = {c for c in text if not c.isdigit()}
    digits = "".join(c for c in text if c.isdigit())
    return len(seps) <= 1 and 13 <= len(digits) <= 19 and luhn(digits)


_ISSUER_LENGTHS = (  # (first digits, lengths) of the networks' numbers; a bare run must fit one of them
    (("4",), (13, 16, 19)),  # Visa
    (tuple(str(n) for n in range(51, 56)) + tuple(str(n) for n in range(2221, 2721)), (16,)),  # Mastercard
    (("34", "37"), (15,)),  # American Express
    (("300", "301", "302", "303", "304", "305", "36", "38", "39"), (14, 16, 19)),  # Diners Club
    (tuple(str(n) for n in range(3528, 3590)), (16, 17, 18, 19)),  # JCB
    (("6011", "65") + tuple(str(n) for n in range(644, 650)), (16, 19)),  # Discover
    (("62", "81"), (16, 17, 18, 19)),  # UnionPay
    (("2200", "2201", "2202", "2203", "2204"), (16, 17, 18, 19)),  # Mir
    (("50", "56", "57", "58", "6"), (12, 13, 14, 15, 16, 17, 18, 19)),  # Maestro, RuPay and other 6-series
)


def bare_card_number(digits: str) -> bool:
    """A payment card number written as a bare digit run with no card word: Luhn-valid AND it starts with
    a card network's issuer prefix at one of that network's lengths. Order ids, timestamps (a leading 1),
    snowflake ids and most large numbers fail one of the two (a random 13-19 digit run passes both ~2% of the time)."""
    if not (13 <= len(digits) <= 19 and digits.isdigit() and luhn(digits)):
        return False
    return any(len(digits) in lengths and digits.startswith(prefixes) for prefixes, lengths in _ISSUER_LENGTHS)


def aws_secret(text: str) -> bool:
    """A lone 40-character run that looks like an AWS secret access key: upper and lower case letters and
    a digit (a git SHA is hex, a constant all capitals), at least 20 distinct characters (a random key has
    ~30), and few lowercase words (letters in lowercase runs of 3+ at most 20: a random key has ~6, a
    camelCase identifier of 40 characters ~30)."""
    return (len(text) == 40 and any(c.isupper() for c in text) and any(c.islower() for c in text)
            and any(c.isdigit() for c in text) and len(set(text)) >= 20
            and sum(len(r) for r in _LOWER_WORD.findall(text)) <= 20)


_LOWER_WORD = re.compile(r"[a-z]{3,}")


_SEP = r"(\\[nrt]|\\u00[01][0-9A-Fa-f]|[^A-Za-z0-9\\]|^)"  # a key must not be glued to a word ("task-..."); `\n`, `\u000a` in JSON text count as a break
_SEP_ = r"(\\[nrt]|\\u00[01][0-9A-Fa-f]|[^A-Za-z0-9_\\]|^)"  # the same, and not after `_` (keys whose prefix is a word: hf_, xox, ...)
_NUM_EDGE = r"(\\[nrt]|\\u00[01][0-9A-Fa-f]|[^0-9A-Za-z\\.+-]|^)"  # a number's left edge: not inside a word, version, sum or range
_U = "À-ÖØ-öø-ÿĀ-ɏͰ-ϿЀ-ӿ԰-֏א-ת؀-ۿऀ-ॿก-๛぀-ヿ一-鿿가-힯"
"""Letters of the major non-Latin-1 scripts, for internationalised e-mail addresses (RE2's `\\w` is ASCII)."""
_B64 = "A-Za-z0-9/+"

_BARE_CARD = _NUM_EDGE + r"([0-9]{13,19})\b"
"""A bare digit run, Python-checked (`bare_card_number`): Luhn and a network's prefix and length."""
_LONE_AWS_SECRET = r"(\\[nrt]|[^A-Za-z0-9/+=\\]|^)([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"
"""A lone 40-character base64 run (not part of a longer run or of padded base64), Python-checked (`aws_secret`)."""

_PHONE = (
    _NUM_EDGE + "(?:"
    # +CC, an optional (0), then the national number: (area) groups | 3+ groups | 2 long groups | bare E.164
    r"\+[1-9][0-9]{0,2}(?:[ .-]?\(0\))?[ .-]?(?:\([0-9]{1,4}\)[ .-]?[0-9]{2,5}(?:[ .-][0-9]{2,5}){0,3}"
    r"|[0-9]{1,5}[ .-][0-9]{2,8}[ .-][0-9]{2,8}(?:[ .-][0-9]{2,8}){0,3}|[0-9]{2,5}[ .-][0-9]{5,8}|[0-9]{7,14})"
    # North America: (415) 555-0134, 415.555.0134, 1-800-555-0199
    r"|(?:1[ .-]?)?(?:\([0-9]{3}\) ?|[0-9]{3}[ .-])[0-9]{3}[ .-][0-9]{4}"
    # trunk 0: 01 23 45 67 89 | 020 7946 0958, 03-1234-5678, (02) 9876 5432 | 030 12345678, 098765 43210
    r"|0[0-9](?:[ .-][0-9]{2}){4}|(?:\(0[0-9]{1,4}\) ?|0[0-9]{1,4}[ .-])[0-9]{3,5}[ .-][0-9]{3,5}"
    r"|(?:\(0[0-9]{1,4}\) ?|0[0-9]{1,5}[ .-])[0-9]{5,8}"
    # Russia 8 (495) 123-45-67, Brazil (11) 91234-5678
    r"|8 ?\([0-9]{3,4}\) ?[0-9]{2,3}-[0-9]{2}-[0-9]{2}|\([1-9][0-9]\) ?[0-9]{4,5}-[0-9]{4}"
    r")\b"
)

_CARD = (
    # grouped 4-4-4-(1..7) or Amex/Diners 4-6-(4..5), spaces or dashes; or a bare run right after a card word
    _NUM_EDGE + r"([0-9]{4}(?:[ -][0-9]{4}){2}[ -][0-9]{1,7}|[0-9]{4}[ -][0-9]{6}[ -][0-9]{4,5})\b"
    r"|((?i:card|visa|mastercard|amex|credit|debit|cc)\b[^0-9\"\\]{0,30}?)([0-9]{13,19})\b"
)

# Prefilters: cheap RE2 necessary conditions, selective on real logs (decimals, dates, decorators and ids
# are not hits). Each must match wherever its regex does (tests/logs/test_redact_kinds.py checks every shape).
_AKIA = "(?:AKIA|ASIA)[0-9A-Z]{16}"
_EMAIL_PRE = rf"[A-Za-z0-9._%+{_U}\\-]@[A-Za-z0-9{_U}\\-]"  # `\\`: an escaped non-ASCII letter beside the `@`
_PHONE_PRE = (  # one necessary substring per alternative of _PHONE, in its order
    r"\+[0-9][0-9 .()-]{5}|[0-9]{3}[ .-][0-9]{3}|0[0-9](?:[ .-][0-9]{2}){3}"
    r"|0[0-9]{1,5}[ .-][0-9]{5}|\(0[0-9]{1,4}\) ?[0-9]{5}|[0-9]\) ?[0-9]{2,3}-[0-9]{2}-[0-9]{2}"
)

PATTERNS: tuple[RedactionPattern, ...] = (
    # PEM private keys first: their body would otherwise be read as other kinds. An unterminated
    # block (a truncated log) is redacted to the end of its base64 body.
    RedactionPattern(
        "PRIVATE_KEY",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:[^\"]*?-----END [A-Z0-9 ]*PRIVATE KEY-----"
        r"|(?:: |\\[nrt]|[\r\n\t=+/A-Za-z0-9:,-])*)",
        "[REDACTED:PRIVATE_KEY]", "PRIVATE KEY-----"),
    # JWTs before bearer tokens: a bearer token is often a JWT, and each secret should be counted once.
    RedactionPattern("JWT", r"eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}", "[REDACTED:JWT]", r"eyJ[A-Za-z0-9_-]{5}"),
    RedactionPattern("BEARER", r"([Bb]earer\s+)[A-Za-z0-9._~+/-]{8,}=*", r"\1[REDACTED:BEARER]", "earer"),
    # AWS secret access keys have no prefix of their own: only beside their name or a key id.
    RedactionPattern(
        "AWS_SECRET",
        r"((?i:aws_?secret_?access_?key|aws_?secret_?key|secret_?access_?key)(?:\\?[\"'])?\s*[:=]>?\s*(?:\\?[\"'])?"
        rf"|(?:AKIA|ASIA)[0-9A-Z]{{16}}(?:\\[nrt\"]|[\s\"',:;=|])+)[{_B64}]{{40}}([^{_B64}]|$)",
        r"\1[REDACTED:AWS_SECRET]\2", "(?i:secret_?access_?key|aws_?secret)|" + _AKIA),
    RedactionPattern("API_KEY", _SEP + r"sk-[A-Za-z0-9_-]{20,}", r"\1[REDACTED:API_KEY]", _SEP + r"sk-[A-Za-z0-9_-]{20}"),
    RedactionPattern("STRIPE_KEY", _SEP_ + r"[spr]k_(?:live|test)_[A-Za-z0-9]{10,}", r"\1[REDACTED:STRIPE_KEY]",
                     r"k_(?:live|test)_[A-Za-z0-9]{10}"),
    RedactionPattern("AWS_KEY", _SEP + r"(?:AKIA|ASIA)[0-9A-Z]{16}\b", r"\1[REDACTED:AWS_KEY]", _AKIA),
    RedactionPattern("GITHUB_TOKEN", _SEP_ + r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
                     r"\1[REDACTED:GITHUB_TOKEN]", r"gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{22}"),
    RedactionPattern("GITLAB_TOKEN", _SEP_ + r"glpat-[A-Za-z0-9_-]{20,}", r"\1[REDACTED:GITLAB_TOKEN]", r"glpat-[A-Za-z0-9_-]{20}"),
    RedactionPattern("SLACK_TOKEN", _SEP_ + r"xox[abprs]-[A-Za-z0-9-]{10,}", r"\1[REDACTED:SLACK_TOKEN]", r"xox[abprs]-[A-Za-z0-9-]{10}"),
    RedactionPattern("HF_TOKEN", _SEP_ + r"hf_[A-Za-z0-9]{30,}", r"\1[REDACTED:HF_TOKEN]", r"hf_[A-Za-z0-9]{30}"),
    RedactionPattern("GOOGLE_API_KEY", _SEP_ + r"AIza[0-9A-Za-z_-]{35}", r"\1[REDACTED:GOOGLE_API_KEY]", r"AIza[0-9A-Za-z_-]{35}"),
    RedactionPattern(
        "EMAIL",
        rf"[A-Za-z0-9._%+{_U}-]+@[A-Za-z0-9{_U}-]+(?:\.[A-Za-z0-9{_U}-]+)*\.(?:xn--[A-Za-z0-9-]+|[A-Za-z]{{2,}}|[{_U}]{{2,}})",
        "[REDACTED:EMAIL]", _EMAIL_PRE),
    RedactionPattern("CREDIT_CARD", _CARD, "[REDACTED:CREDIT_CARD]",
                     r"[0-9]{4}[ -][0-9]{4,6}[ -][0-9]{4}|[0-9]{13}", check=card_number),
    # What the named forms above left: a bare card number (network prefix + length + Luhn) and a lone
    # AWS secret key (mixed case, digits, no words). Both Python-checked, so the rows go to Python.
    RedactionPattern("CREDIT_CARD", _BARE_CARD, "[REDACTED:CREDIT_CARD]", r"[0-9]{13}", check=bare_card_number),
    RedactionPattern("AWS_SECRET", _LONE_AWS_SECRET, "[REDACTED:AWS_SECRET]", r"[A-Za-z0-9/+]{40}", check=aws_secret),
    RedactionPattern("PHONE", _PHONE, r"\1[REDACTED:PHONE]", _PHONE_PRE),
)
"""Applied in this order. Add a pattern here and the prefilter, the fast path and the Python path pick it up."""

ESCAPED_ASCII = r"\\u00[2-7][0-9A-Fa-f]"
"""A JSON `\\uXXXX` escape of a printable ASCII character: it can hide an anchor (`\\u0040` is `@`), so
the prefilter flags it and the Python path decodes it."""

ESCAPED_ANCHOR = r"\\u00(?:2[0-58-9A-Fa-f]|3[0-9ABDFabdf]|[4-7][0-9A-Fa-f])"
"""The escapes of `ESCAPED_ASCII` the prefilter looks for: all but `&`, `'`, `<` and `>`, which no
finding is made of and which HTML-safe JSON encoders escape in every row of code."""
