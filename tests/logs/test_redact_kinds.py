"""Adversarial redaction tests: every kind in several shapes, escaped forms, plain-text fields, and
honest text (math, dates, versions, SHAs) that must come through untouched."""

from __future__ import annotations

import json
import re

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from flywheel.logs import redact as R
from flywheel.logs.arrow_ops import redact_cells

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
POSITIVE: dict[str, list[str]] = {
    "PRIVATE_KEY": ["-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nabc+/=\n-----END RSA PRIVATE KEY-----",
                    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----",
                    "-----BEGIN ENCRYPTED PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nMIIEvQIBADANBgkq\nhkiG9w0BAQ"],
    "JWT": ["eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"],
    "BEARER": ["Authorization: Bearer abc123DEF456ghi789", "bearer ya29.A0ARrdaM-abcdefgh"],
    "AWS_SECRET": [f"aws_secret_access_key = {AWS_SECRET}", f'"SecretAccessKey": "{AWS_SECRET}"',
                   f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", f"export aws_secret_key='{AWS_SECRET}'"],
    "API_KEY": ["sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123", "(sk-ant-api03-abcdefghijklmnopqrstuv)"],
    "STRIPE_KEY": ["sk_live_4eC39HqLyjWDarjtT1zdp7dc", "rk_live_51H8abcdefGHIJKL", "pk_test_TYooMQauvdEDq54NiTphI7jx"],
    "AWS_KEY": ["AKIAIOSFODNN7EXAMPLE", "ASIAY34FZKBOKMUTVV7A"],
    "GITHUB_TOKEN": ["ghp_0123456789abcdefghijABCDEFGHIJ012345", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop"],
    "GITLAB_TOKEN": ["glpat-xxxxxxxxxxxxxxxxxxxx", "glpat-AbC_dEf-GhIjKlMnOpQr12"],
    "SLACK_TOKEN": ["xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "xoxp-1234-5678-abcdEFGH",
                    "xoxa-2-abcdefghijk"],
    "HF_TOKEN": ["hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "HF_TOKEN=hf_0123456789ABCDEFGHIJklmnopqrstuvwx"],
    "GOOGLE_API_KEY": ["AIzaSyA1234567890abcdefghijklmnopqrstuv", "key=AIzaSyBxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
    "EMAIL": ["jane.doe+work@mail.example.co.uk", "josé@exämple.com", "用户@例子.广告", "иван@пример.рф",
              "ahmed@xn--mgbh0a.xn--p1ai"],
    "CREDIT_CARD": ["4111 1111 1111 1111", "4111-1111-1111-1111", "3782 822463 10005", "5555 5555 5555 4444",
                    "card: 4111111111111111", "Visa 4012888888881881"],
    "PHONE": ["+44 20 7946 0958", "+44 (0)20 7946 0958", "020 7946 0958", "+33 1 23 45 67 89", "01.23.45.67.89",
              "+49 30 12345678", "0171-1234567", "(415) 555-0134", "415.555.0134", "+1-415-555-0134", "1-800-555-0199",
              "+91 98765 43210", "+81 3-1234-5678", "090-1234-5678", "+86 138 0013 8000", "010-12345678",
              "+55 11 91234-5678", "(11) 91234-5678", "(02) 9876 5432", "0412 345 678", "+34 912 345 678",
              "+7 495 123-45-67", "8 (495) 123-45-67", "+82 2-123-4567", "+14155550134", "07700 900123"],
}
HONEST = [
    "A shop sells pencils at 35 cents each. How many cents do 12 pencils cost? The answer is 420.",
    "If 3 apples cost 1.20 and 7 cost 2.80, what do 12 cost? 4.80", "1 234 567 + 2 345 678 = 3 580 245",
    "2026-12-01", "01.12.2026 10:30", "12/01/2026", "2026-12-01T10:00:00Z", "version 1.2.3", "Python 3.11.4",
    "10.0.19041.1", "v2.10.1-rc1", "commit 3f2a9c1b7e4d5f6a8b9c0d1e2f3a4b5c6d7e8f90", "sha 3f2a9c1",
    "The answer is 1234567890.", "pi is 3.141 592 653", "4^26 = 4503599627370496", "2^62 = 4611686018427387904",
    "x = 3.14159 and 2026-12-01", "192.168.1.1", "ISBN 978-3-16-148410-0", "zip 94103-1234", "3 + 4 = 7",
    "+3, +5, +7", "12 345 678", "1,234,567", "1.234.567,89", "f(123) 456-7890", "timestamp 1733312345678",
    "0.5 0.25 0.125", "1 2 3 4 5 6 7 8 9 10", "task-abcdefghijklmnopqrstuvwxyz0123 is a task id",
    "card 1234 5678 9012 3456", "the sk-learn docs", "use hf_hub_download", "a@b", "x\\u0041y",
    "C:\\\\Users\\\\me", "tiny:v1", "math", "r42",
]
CASES = [(k, s) for k, xs in POSITIVE.items() for s in xs]


def _fast(text: str, column: str = "messages") -> tuple[str, bool]:
    """Ingest's fast path on one JSON text cell: its result, and whether it sends the cell to Python."""
    out, _, route = redact_cells(pa.array([text]), column)
    return out[0].as_py(), bool(route[0])


def _kinds(counts: dict[str, int]) -> set[str]:
    return {k for k in counts if k not in ("AWS_KEY",)} or set(counts)


@pytest.mark.parametrize(("kind", "secret"), CASES)
def test_every_shape_is_redacted_in_text_and_json(kind, secret):
    text = f"note: {secret} ok"
    out, counts = R.redact_text(text)
    assert f"[REDACTED:{kind}]" in out and counts.get(kind) == 1, (out, counts)
    assert out.startswith("note: ") and out.endswith(" ok") or kind == "PRIVATE_KEY"
    core = re.sub(r"^(?:[A-Za-z_]+ ?[:=] ?|card: |Visa |export aws_secret_key=|key=|\"SecretAccessKey\": )", "",
                  secret).strip("'\"()")
    assert core[-8:] not in out
    # the same text as a JSON string value, with and without \u escaping, in both paths
    for doc in (json.dumps({"content": text}), json.dumps({"content": text}, ensure_ascii=True)):
        red, c = R.redact_json_text(doc)
        assert c.get(kind) == 1 and core[-8:] not in json.loads(red)["content"]


@pytest.mark.parametrize(("kind", "secret"), [c for c in CASES if c[0] != "CREDIT_CARD"])
def test_fast_path_agrees_and_prefilter_never_misses(kind, secret):
    text = json.dumps([{"content": f"note: {secret} ok"}], ensure_ascii=False)
    py = R.redact_json_text(text)[0]
    fast, routed = _fast(text)
    assert routed or json.loads(py) == json.loads(fast)  # a cell the fast path cannot do goes to Python
    arr = pa.array([text])
    assert pc.match_substring_regex(arr, R.prefilter_regex("messages"))[0].as_py()


@pytest.mark.parametrize("text", HONEST)
@pytest.mark.parametrize("column", ["messages", "outcome", "id", "raw"])
def test_honest_text_is_left_alone(text, column):
    assert R.redact_text(text, column) == (text, {})
    assert _fast(text, column if column in ("messages", "outcome") else "outcome")[0] == text
    assert R.redact_key(text, "id") == (text, {})


def test_phone_numbers_in_every_field():  # they survived in ids and outcome (free text only, until 2026-12-05)
    for col in ("messages", "extra", "raw", "outcome", "reference"):
        assert R.redact_text("call +44 20 7946 0958", col) == ("call [REDACTED:PHONE]", {"PHONE": 1})
    for col in ("id", "task_id", "model"):
        assert R.redact_key("user:+44 20 7946 0958", col)[0].startswith("user:[REDACTED:PHONE]~")


def test_card_numbers_need_luhn_and_go_to_python():
    assert R.redact_text("pay 4111 1111 1111 1112 now")[1] == {}  # Luhn fails
    assert R.redact_text("pay 4111 1111-1111 1111 now")[1] == {}  # mixed separators: not a written card
    out, routed = _fast("pay 4111 1111 1111 1111 now")
    assert "4111" in out and routed  # the fast path leaves it to Python


ESCAPED = [
    # (JSON text of one value, what must not survive decoding)
    ('{"c":"write to jane.doe\\u0040example.com"}', "jane.doe@example.com"),
    ('{"c":"key sk\\u002dproj-AbCdEfGhIjKlMnOpQrStUvWx0123"}', "AbCdEfGhIjKlMnOpQrStUvWx"),
    ('{"c":"\\u0041KIAIOSFODNN7EXAMPLE"}', "AKIAIOSFODNN7EXAMPLE"),
    ('{"c":"Bearer abc\\/def123456789"}', "abc/def123456789"),
    ('{"c":"line\\u000ask-proj-AbCdEfGhIjKlMnOpQrStUvWx0123"}', "AbCdEfGhIjKlMnOpQrStUvWx"),
    ('{"c":"jos\\u00e9@ex\\u00e4mple.com"}', "josé@exämple.com"),
    # a tool call's arguments: JSON inside a JSON string, escaped once more
    ('{"arguments":"{\\"to\\":\\"jane\\\\u0040example.com\\"}"}', "jane@example.com"),
    ('{"arguments":"{\\"to\\":\\"jane@example.com\\",\\"n\\":\\"hi\\\\njohn@example.com\\"}"}', "john@example.com"),
    ('{"arguments":"{\\"k\\": \\"glpat-AbC_dEf-GhIjKlMnOpQr12\\"}"}', "GhIjKlMnOpQr12"),
    ('{"arguments":"{\\"to\\": \\"jane\\\\u0040example.com"}', "jane@example.com"),  # truncated: not JSON
]


def _strings(v):
    if isinstance(v, str):
        yield v
        t = v.strip()
        if t[:1] in "{[":
            try:
                yield from _strings(json.loads(t))
            except ValueError:
                yield v.encode().decode("unicode_escape", "ignore")
    elif isinstance(v, dict):
        for x in v.values():
            yield from _strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from _strings(x)


@pytest.mark.parametrize(("doc", "secret"), ESCAPED)
def test_escaped_forms_are_seen_decoded(doc, secret):
    assert secret in "".join(_strings(json.loads(doc)))  # the case is what it claims
    assert pc.match_substring_regex(pa.array([doc]), R.prefilter_regex("messages"))[0].as_py()
    out, counts = R.redact_json_text(doc)
    assert counts and secret not in "".join(_strings(json.loads(out)))
    # ingest's fast path: either the row goes to Python, or the SQL result is clean once decoded
    fast, routed = _fast(doc)
    if not routed:
        assert secret not in "".join(_strings(json.loads(fast)))


def test_latex_rows_with_nothing_found_stay_on_the_fast_path():
    doc = json.dumps([{"content": "\\frac{1}{2} = 0.5 and \\sqrt{2} = 1.41 of 100.000"}])
    assert pc.match_substring_regex(pa.array([doc]), R.prefilter_regex("messages"))[0].as_py()  # digits: a hit
    assert _fast(doc) == (doc, False)


def test_tool_call_arguments_stay_json_and_untouched_when_clean():
    args = json.dumps({"to": "jane\u0040example.com", "n": 3})
    out, _ = R.redact_json_text(json.dumps({"arguments": args}, ensure_ascii=True))
    assert json.loads(json.loads(out)["arguments"]) == {"to": "[REDACTED:EMAIL]", "n": 3}
    nl = json.dumps({"arguments": json.dumps({"note": "hi\njohn@example.com"})})  # `\\n` before the address
    assert json.loads(json.loads(R.redact_json_text(nl)[0])["arguments"]) == {"note": "hi\n[REDACTED:EMAIL]"}
    clean = json.dumps({"arguments": json.dumps({"q": "caf\u00e9", "n": [1, 2]}, ensure_ascii=True)})
    assert json.loads(R.redact_json_text(clean)[0]) == json.loads(clean)


def test_key_redaction_keeps_keys_distinct_and_stable():
    a, ca = R.redact_key("user-jane@example.com-1")
    b, _ = R.redact_key("user-john@example.com-1")
    assert ca == {"EMAIL": 1} and a.startswith("[REDACTED:EMAIL]-1~") and "@" not in a
    assert a != b and R.redact_key("user-jane@example.com-1")[0] == a
    assert R.redact_key("sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123", "model")[0].startswith("[REDACTED:API_KEY]~")
    assert R.redact_key(None) == (None, {})


def test_raw_is_redacted_before_it_is_cut():
    line = json.dumps({"id": "x", "note": "a" * 50 + " key sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123 tail"})
    cut = line.index("sk-proj") + 12
    out = R.redact_raw(line, cut)
    assert "sk-proj" not in out and "AbCd" not in out and len(out) <= cut
    assert R.redact_raw(line[:cut], cut).endswith("key ")  # already cut upstream: the partial word goes
    assert R.redact_raw('{"bad": "jane\\u0040example.com"', 2000) == '{"bad": "[REDACTED:EMAIL]"'
    assert R.redact_raw("call +44 20 7946 0958", 100) == "call [REDACTED:PHONE]"


ORDINARY = ['{"p_success": 0.3191, "cost_usd": 2e-05}', "2026-12-01T10:00:00Z", "    @property\n    def f(self):",
            "task-abcdefghijklmnopqrstuvwxyz0123", "latency 1234.5 ms, 3.14159", 'x \\u003c y \\u0026 \\u0027z\\u003e',
            'File "<string>", line 3, in f', "(1, 2) [3, 4] 1-2 3.5", "a @ b", "see hf_hub_download and xoxo"]


@pytest.mark.parametrize("text", ORDINARY)
def test_prefilter_is_selective_on_ordinary_log_text(text):
    for col in ("messages", "outcome", "extra"):
        assert not pc.match_substring_regex(pa.array([text]), R.prefilter_regex(col))[0].as_py(), col


def test_prefilter_flags_few_rows_of_demo_traffic():
    import datetime as dt

    from flywheel.logs.arrow_ops import PREFILTER, TEXT_COLS
    from flywheel.world.traffic import generate_records

    recs = list(generate_records(dt.date(2026, 12, 1), 600, seed=0))
    hits = 0
    for r in recs:
        hits += any(pc.match_substring_regex(pa.array([json.dumps(r[c])]), PREFILTER[c])[0].as_py()
                    for c in TEXT_COLS if c in r)
    assert hits / len(recs) < 0.02, hits


def test_object_keys_are_redacted_and_stay_distinct():
    doc = json.dumps({"jane@example.com": 1, "john@example.com": 2, "n": {"call +44 20 7946 0958": "x"}})
    out, counts = R.redact_json_text(doc)
    assert counts == {"EMAIL": 2, "PHONE": 1}
    value = json.loads(out)
    assert len(value) == 3 and "@" not in out and "7946" not in out
    assert R.redact_json_text(doc)[0] == out  # the same key every time: re-ingest stays a duplicate


LONE = [  # (text, kind): secrets with no name or card word beside them (they survived until 2026-12-05)
    (f"here it is: {AWS_SECRET} thanks", "AWS_SECRET"), (f'{{"k": "{AWS_SECRET}"}}', "AWS_SECRET"),
    (f"a\n{AWS_SECRET}\nb", "AWS_SECRET"), ("pay with 4111111111111111 please", "CREDIT_CARD"),
    ("amex 378282246310005", "CREDIT_CARD"), ("my number is 5555555555554444.", "CREDIT_CARD"),
    ("ref=6011111111111117", "CREDIT_CARD"),
]
NOT_SECRETS = [  # bare digit runs and 40-character runs that are not secrets
    "order 1733312345678901 shipped", "order #7391048263519402", "id 100000000000000000", "20! = 2432902008176640000",
    "4^26 = 4503599627370496", "snowflake 1541815603606036480", "commit 3f2a9c1b7e4d5f6a8b9c0d1e2f3a4b5c6d7e8f90",
    "ThisIsAVeryLongCamelCaseIdentifierName12", "getUserAccountSettingsForOrganization2v1",
    "CONSTANT_VALUE_NUMBER_ONE_TWO_THREE_FOUR", "data:image/png;base64," + "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
    "the sum 4111111111111112 fails Luhn",
]


@pytest.mark.parametrize(("text", "kind"), LONE)
def test_lone_aws_secret_and_bare_card_are_redacted_in_both_paths(text, kind):
    out, counts = R.redact_text(text)
    assert counts == {kind: 1} and f"[REDACTED:{kind}]" in out, (out, counts)
    doc = json.dumps([{"content": text}])
    assert pc.match_substring_regex(pa.array([doc]), R.prefilter_regex("messages"))[0].as_py()
    fast, routed = _fast(doc)
    assert routed  # a checked kind: the row goes to Python, which redacts it
    assert R.redact_json_text(doc)[1] == {kind: 1}


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_order_ids_hashes_and_identifiers_are_not_secrets(text):
    assert R.redact_text(text) == (text, {})
    assert R.redact_key(text, "id") == (text, {})


def test_two_lone_findings_side_by_side_are_both_redacted():
    out, counts = R.redact_text(f"{AWS_SECRET} {AWS_SECRET} 4111111111111111 4012888888881881")
    assert counts == {"AWS_SECRET": 2, "CREDIT_CARD": 2} and not any(c.isdigit() for c in out), out


def test_bare_card_rule_keeps_false_positives_rare():
    import random

    rng = random.Random(0)
    runs = ["".join(rng.choice("0123456789") for _ in range(rng.randint(13, 19))) for _ in range(20000)]
    share = sum(bool(R.redact_text(f"id {r}")[1]) for r in runs) / len(runs)
    assert share < 0.03, share  # Luhn alone would flag 10%; ids starting with 0, 1, 7, 9 never match
