"""`flywheel verify`, plus the scoring entry points behind it: score_batch, the verdict cache, reward_func."""

from __future__ import annotations

import json

import duckdb
import pytest

from flywheel.cli import main
from flywheel.tasks.suites import train_suite
from flywheel.verifiers.batch import make_reward_func, score, score_batch
from flywheel.verifiers.cache import VerdictCache
from flywheel.verifiers.common import response_hash


def _lines():
    out = []
    for d in ("math", "agent"):
        for t in train_suite(d, 2):
            out.append({"domain": d, "task": t.verifier_task(), "response": t.solution})
            out.append({"domain": d, "task": t.verifier_task(), "response": "I give up"})
    return out


def test_verify_file_order_and_malformed_lines(tmp_path, capsys):
    good = _lines()
    raw = [json.dumps(x) for x in good]
    raw.insert(1, "{broken json")
    raw.insert(3, json.dumps({"domain": "math", "task": {"prompt": "no answer"}, "response": "1"}))
    raw.insert(5, json.dumps(["not", "an", "object"]))
    raw.insert(6, json.dumps({"domain": "chess", "task": {}, "response": "e4"}))
    raw.insert(7, "")
    f = tmp_path / "in.jsonl"
    f.write_text("\n".join(raw) + "\n")
    assert main(["verify", str(f)]) == 0
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(out) == len(raw)
    assert out[1]["reason"].startswith("line 2: not valid JSON") and out[1]["details"]["error"] == "input"
    assert out[3]["reason"].startswith("line 4: task error") and out[3]["details"]["line"] == 4
    assert out[5]["reason"] == "line 6: expected a JSON object, got list"
    assert "unknown domain" in out[6]["reason"] and out[7]["reason"] == "line 8: empty line"
    judged = [o for o in out if "error" not in o["details"]]
    assert [o["passed"] for o in judged] == [True, False] * 4  # same order as the input
    assert all(set(o) == {"reward", "passed", "reason", "details"} for o in out)


def test_verify_out_json_and_cache(tmp_path, capsys):
    f = tmp_path / "in.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in _lines()) + "nope\n")
    out, cache = tmp_path / "out.jsonl", tmp_path / "cache.duckdb"
    argv = ["verify", str(f), "--out", str(out), "--json", "--concurrency", "2", "--cache", str(cache)]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary == {"lines": 9, "passed": 4, "failed": 4, "errors": 1, "out": str(out)}
    first = out.read_text()
    assert len(first.splitlines()) == 9
    con = duckdb.connect(str(cache))
    assert con.execute("SELECT count(*) FROM verdict_cache").fetchone()[0] == 8
    con.close()
    assert main(argv) == 0 and out.read_text() == first  # re-scoring is a lookup with the same answer


def test_cli_missing_file(capsys):
    assert main(["verify", "/nonexistent/x.jsonl"]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_cache_lookup_and_version_bump():
    from flywheel.verifiers.registry import VerifierRegistry

    reg = VerifierRegistry()
    cache = VerdictCache(duckdb.connect(":memory:"))
    t = train_suite("agent", 1)[0]
    items = [("agent", t.verifier_task(), t.solution), ("agent", t.verifier_task(), "no")]
    first = score_batch(items, registry=reg, cache=cache)
    assert cache.stats() == {"hits": 0, "misses": 2} and cache.count() == 2
    assert score_batch(items, registry=reg, cache=cache) == first and cache.hits == 2
    # a stored verdict is what a lookup returns: poison one row and see it come back
    key = (t.task_id, response_hash(t.verifier_task(), "no"), "agent", reg.version("agent"))
    cache.con.execute("UPDATE verdict_cache SET reason = 'from cache' WHERE response_hash = ?", [key[1]])
    assert score("agent", t.verifier_task(), "no", registry=reg, cache=cache).reason == "from cache"
    reg.get("agent").version = "agent-999"  # bumping the version invalidates every stored verdict
    assert score("agent", t.verifier_task(), "no", registry=reg, cache=cache).reason == "no tool calls"
    assert cache.count() == 3
    # same id, different task content: a different key
    other = dict(t.verifier_task(), goal={"apple": 99})
    assert response_hash(other, "no") != key[1]


def test_timeouts_are_not_cached():
    from flywheel.verifiers.verdict import Verdict

    cache = VerdictCache(duckdb.connect(":memory:"))
    assert cache.put_many([(("t", "h", "code", "v"), Verdict(0.0, False, "timeout", {"cacheable": False}))]) == 0


def test_reward_func_trl_style():
    f = make_reward_func("agent")
    ts = train_suite("agent", 3)
    cols = {"initial_state": [t.reference["initial_state"] for t in ts], "goal": [t.reference["goal"] for t in ts],
            "tools": [json.dumps(t.reference["tools"]) for t in ts]}
    comps = [ts[0].solution, "nothing", [{"role": "assistant", "content": ts[2].solution}]]
    assert f(prompts=[t.prompt for t in ts], completions=comps, **cols) == [1.0, 0.0, 1.0]
    mixed = make_reward_func()
    rows = {"domain": ["agent", "agent"], "task": [ts[0].verifier_task(), json.dumps({"prompt": "x"})]}
    assert mixed(prompts=["a", "b"], completions=[ts[0].solution, "x"], **rows) == [1.0, None]
    assert f.__name__ == "flywheel_agent_reward"


@pytest.mark.parametrize("bad", [None, "x", 3])
def test_score_batch_rejects_non_dict_tasks(bad):
    [v] = score_batch([("agent", bad, "x")])
    assert not v.passed and v.details["error"] == "task"
