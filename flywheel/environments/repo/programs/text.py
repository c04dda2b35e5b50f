"""Text programs: tokenizer, word wrap, run-length encoding, word counts, Caesar cipher."""

from __future__ import annotations

from flywheel.environments.repo.programs.base import Bug, Program

TOKENIZER = Program(
    name="tokenizer",
    summary="a tokenizer for arithmetic expressions",
    source='''"""Split an arithmetic expression into tokens: numbers, names, operators and parentheses."""

OPERATORS = "+-*/^"


def tokenize(text):
    """A list of (kind, text) pairs; kind is "num", "name", "op" or "paren". ValueError on anything else."""
    tokens = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch.isdigit():
            j = i
            while j < len(text) and (text[j].isdigit() or text[j] == "."):
                j += 1
            tokens.append(("num", text[i:j]))
            i = j
        elif ch.isalpha() or ch == "_":
            j = i
            while j < len(text) and (text[j].isalnum() or text[j] == "_"):
                j += 1
            tokens.append(("name", text[i:j]))
            i = j
        elif ch in OPERATORS:
            tokens.append(("op", ch))
            i += 1
        elif ch in "()":
            tokens.append(("paren", ch))
            i += 1
        else:
            raise ValueError("unexpected character %r at %d" % (ch, i))
    return tokens
''',
    visible_test='''from tokenizer import tokenize


def test_simple():
    assert tokenize("1 + 2") == [("num", "1"), ("op", "+"), ("num", "2")]


def test_names_and_decimals():
    assert tokenize("x1 - 2.5") == [("name", "x1"), ("op", "-"), ("num", "2.5")]
''',
    hidden_test='''from tokenizer import tokenize


def test_multi_digit_and_names():
    assert tokenize("x1 * 250") == [("name", "x1"), ("op", "*"), ("num", "250")]


def test_decimal_and_parens():
    assert tokenize("(3.25-y_2)") == [("paren", "("), ("num", "3.25"), ("op", "-"), ("name", "y_2"), ("paren", ")")]


def test_all_operators():
    assert [t for _, t in tokenize("a+b-c*d/e^f")] == list("a+b-c*d/e^f")


def test_no_spaces_needed():
    assert tokenize("12+3") == [("num", "12"), ("op", "+"), ("num", "3")]


def test_bad_character():
    try:
        tokenize("1 $ 2")
    except ValueError:
        pass
    else:
        raise AssertionError("'$' must raise ValueError")
''',
    bugs=(
        Bug("off-by-one", "tokenize", 'tokens.append(("num", text[i:j]))', 'tokens.append(("num", text[i:j - 1]))'),
        Bug("wrong constant", "OPERATORS", 'OPERATORS = "+-*/^"', 'OPERATORS = "+*/^"'),
        Bug("missing case", "tokenize", '(text[j].isdigit() or text[j] == ".")', "text[j].isdigit()"),
        Bug("wrong operator", "tokenize", '(text[j].isalnum() or text[j] == "_")', '(text[j].isalpha() or text[j] == "_")'),
    ),
    features=("tokenize",),
)

WRAP = Program(
    name="wrap",
    summary="greedy word wrapping",
    source='''"""Greedy word wrapping."""


def wrap(text, width):
    """Lines of at most width characters (a longer word stands alone on its line)."""
    lines, line = [], ""
    for word in text.split():
        if not line:
            line = word
        elif len(line) + 1 + len(word) <= width:
            line += " " + word
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    return lines


def fill(text, width):
    return "\\n".join(wrap(text, width))
''',
    visible_test='''from wrap import wrap


def test_short():
    assert wrap("hello world", 20) == ["hello world"]


def test_breaks():
    assert wrap("aa bb cc", 5) == ["aa bb", "cc"]


def test_width_is_a_maximum():
    from wrap import fill

    assert wrap("ab cd", 5) == ["ab cd"]
    assert wrap("ab cd", 4) == ["ab", "cd"]
    assert fill("ab cd", 4) == "ab\\ncd"
''',
    hidden_test='''from wrap import fill, wrap


def test_exact_width():
    assert wrap("abc def ghi", 7) == ["abc def", "ghi"]


def test_long_word():
    assert wrap("a verylongword b", 4) == ["a", "verylongword", "b"]


def test_never_wider_than_width():
    text = "ab cd ef gh ijk lm nopq r st"
    for width in range(4, 12):
        assert all(len(line) <= width for line in wrap(text, width))
    assert wrap("ab cd", 4) == ["ab", "cd"]


def test_whitespace():
    assert wrap("  one   two  ", 100) == ["one two"]
    assert wrap("", 5) == []


def test_fill():
    assert fill("the quick brown fox", 10) == "the quick\\nbrown fox"
''',
    bugs=(
        Bug("wrong operator", "wrap", "len(line) + 1 + len(word) <= width", "len(line) + 1 + len(word) < width"),
        Bug("missing case", "wrap", "    if line:\n        lines.append(line)\n", ""),
        Bug("off-by-one", "wrap", "len(line) + 1 + len(word) <= width", "len(line) + len(word) <= width"),
        Bug("wrong constant", "fill", 'return "\\n".join(wrap(text, width))', 'return " ".join(wrap(text, width))'),
    ),
    features=("wrap",),
)

RLE = Program(
    name="rle",
    summary="run-length encoding",
    source='''"""Run-length encoding: "aaab" <-> "3a1b"."""


def encode(text):
    if not text:
        return ""
    out = []
    prev, count = text[0], 1
    for ch in text[1:]:
        if ch == prev:
            count += 1
        else:
            out.append("%d%s" % (count, prev))
            prev, count = ch, 1
    out.append("%d%s" % (count, prev))
    return "".join(out)


def decode(code):
    out = []
    digits = ""
    for ch in code:
        if ch.isdigit():
            digits += ch
        else:
            out.append(ch * int(digits))
            digits = ""
    return "".join(out)
''',
    visible_test='''from rle import decode, encode


def test_encode():
    assert encode("aaabcc") == "3a1b2c"


def test_decode():
    assert decode("2x1y") == "xxy"


def test_multi_digit_counts():
    assert decode("10a") == "a" * 10
''',
    hidden_test='''from rle import decode, encode


def test_round_trip():
    for s in ("", "a", "ab", "aaaaaaaaaaaab", "zzzyyyxxx", "abababab"):
        assert decode(encode(s)) == s


def test_long_runs():
    assert encode("q" * 12) == "12q"
    assert decode("12q") == "q" * 12


def test_last_run():
    assert encode("abbb") == "1a3b"
''',
    bugs=(
        Bug("missing case", "encode", '    out.append("%d%s" % (count, prev))\n    return', "    return"),
        Bug("off-by-one", "encode", "            prev, count = ch, 1", "            prev, count = ch, 0"),
        Bug("wrong operator", "decode", "            digits += ch", "            digits = ch"),
        Bug("swapped arguments", "encode", '            out.append("%d%s" % (count, prev))\n            prev',
            '            out.append("%d%s" % (prev, count))\n            prev'),
    ),
    features=("decode",),
)

WORDS = Program(
    name="words",
    summary="word frequencies",
    source='''"""Word frequencies of a text (case-insensitive, punctuation stripped)."""

PUNCTUATION = ".,;:!?\\"'()"


def words(text):
    return [w.strip(PUNCTUATION).lower() for w in text.split() if w.strip(PUNCTUATION)]


def counts(text):
    out = {}
    for w in words(text):
        out[w] = out.get(w, 0) + 1
    return out


def top(text, k):
    """The k most frequent words as (word, count), most frequent first, ties alphabetical."""
    c = counts(text)
    return sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
''',
    visible_test='''from words import counts


def test_counts():
    assert counts("a b a") == {"a": 2, "b": 1}


def test_top():
    from words import top

    assert top("b a b, A! c", 2) == [("a", 2), ("b", 2)]
''',
    hidden_test='''from words import counts, top, words


def test_case_and_punctuation():
    assert words("Hello, hello! (World)") == ["hello", "hello", "world"]


def test_top():
    text = "the cat and the hat and the bat"
    assert top(text, 2) == [("the", 3), ("and", 2)]
    assert top(text, 1) == [("the", 3)]
    assert top("b a c", 3) == [("a", 1), ("b", 1), ("c", 1)]


def test_only_punctuation():
    assert counts("... !!") == {}
''',
    bugs=(
        Bug("missing case", "words", "[w.strip(PUNCTUATION).lower() for w", "[w.strip(PUNCTUATION) for w"),
        Bug("off-by-one", "top", "[:k]", "[:k + 1]"),
        Bug("wrong operator", "top", "key=lambda kv: (-kv[1], kv[0])", "key=lambda kv: (kv[1], kv[0])"),
        Bug("wrong constant", "PUNCTUATION", 'PUNCTUATION = ".,;:!?', 'PUNCTUATION = ".;:?'),
    ),
    features=("top",),
)

CAESAR = Program(
    name="caesar",
    summary="the Caesar cipher",
    source='''"""The Caesar cipher over ASCII letters; other characters pass through."""


def shift_char(ch, k):
    if "a" <= ch <= "z":
        return chr((ord(ch) - ord("a") + k) % 26 + ord("a"))
    if "A" <= ch <= "Z":
        return chr((ord(ch) - ord("A") + k) % 26 + ord("A"))
    return ch


def encrypt(text, k):
    return "".join(shift_char(ch, k) for ch in text)


def decrypt(text, k):
    return encrypt(text, -k)
''',
    visible_test='''from caesar import encrypt


def test_encrypt():
    assert encrypt("abc", 1) == "bcd"


def test_wrap_around_and_decrypt():
    from caesar import decrypt

    assert encrypt("Zz", 1) == "Aa"
    assert decrypt("bcd", 1) == "abc"
''',
    hidden_test='''from caesar import decrypt, encrypt


def test_wraps():
    assert encrypt("xyz", 3) == "abc"
    assert encrypt("XYZ", 3) == "ABC"


def test_round_trip():
    msg = "Hello, World! 123"
    for k in range(-30, 30):
        assert decrypt(encrypt(msg, k), k) == msg


def test_keeps_other_chars():
    assert encrypt("a-b c!", 2) == "c-d e!"
''',
    bugs=(
        Bug("wrong constant", "shift_char", 'return chr((ord(ch) - ord("a") + k) % 26 + ord("a"))',
            'return chr((ord(ch) - ord("a") + k) % 25 + ord("a"))'),
        Bug("missing case", "shift_char", '    if "A" <= ch <= "Z":\n        return chr((ord(ch) - ord("A") + k) % 26 + ord("A"))\n', ""),
        Bug("wrong operator", "decrypt", "return encrypt(text, -k)", "return encrypt(text, k)"),
        Bug("swapped arguments", "encrypt", "shift_char(ch, k) for ch in text", "shift_char(k, ch) for ch in text"),
    ),
    features=("encrypt",),
)

PROGRAMS = (TOKENIZER, WRAP, RLE, WORDS, CAESAR)
