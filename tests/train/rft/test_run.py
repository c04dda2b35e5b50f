"""RFT on tiny sizes with the real tiny model and the real verifiers: only verified responses are
trained on, identical ones count once, a step changes the weights, a seed fixes the dataset."""

from __future__ import annotations

import json

import pytest

from flywheel.logs.ingest import ingest
from flywheel.tasks.base import Task
from flywheel.tasks.suites import train_suite
from flywheel.train.rft.config import RftConfig
from flywheel.train.rft.data import (
    Candidate,
    RftCounts,
    collect_examples,
    sample_candidates,
    select_examples,
    verify,
)
from flywheel.train.rft.run import base_formats, run_rft
from flywheel.verifiers import score
from flywheel.world.responder import messages_from_text


def _tasks() -> list[Task]:
    return train_suite("math", 6) + train_suite("code", 3)


def _forged(task: Task) -> str:
    """A wrong response a log marks as a success (a user's thumbs-up, a stale verifier)."""
    if task.domain == "math":
        return task.solution.replace(f"Answer: {task.reference['answer']}", f"Answer: {int(task.reference['answer']) + 1}")
    return "```python\n" + task.prompt + "    return None\n```"


def _warehouse(tmp_path, tasks: list[Task]):
    """task_logs holding, per task: its gold solution logged twice (a system prompt apart) and a
    forged success, all with `outcome.passed = true`; and one gold solution logged as a failure."""
    lines = []
    for i, t in enumerate(tasks):
        for k, (text, passed, system) in enumerate([(t.solution, True, False), (t.solution, True, True),
                                                   (_forged(t), True, False), (t.solution, False, False)]):
            msgs = ([{"role": "system", "content": "Be brief."}] if system else []) + [
                {"role": "user", "content": t.prompt}, *messages_from_text(t.domain, text)]
            lines.append({"id": f"r-{i}-{k}", "timestamp": "2026-12-01T10:00:00Z", "task_id": t.task_id,
                          "domain": t.domain, "model": "tiny-v1", "messages": msgs,
                          "outcome": {"passed": passed, "status": "success" if passed else "failure"},
                          "reference": t.reference})
    src = tmp_path / "logs.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    wh = tmp_path / "warehouse.duckdb"
    assert ingest(src, wh).ingested == len(lines)
    return wh


CFG = RftConfig(tasks_per_domain={"math": 6, "code": 3}, samples_per_task=4, max_new_tokens=48, steps=1, include_logs=True,
                batch_size=4, lr=1e-3, warmup=0)


def test_dataset_holds_only_responses_the_verifiers_pass(tiny_model, tmp_path):
    model, tok = tiny_model
    tasks = _tasks()
    wh = _warehouse(tmp_path, tasks)
    examples, counts = collect_examples(CFG, model, tok, tasks, score, warehouse=wh)

    # the policy's own samples, drawn again (same seed): the weak tiny model fails many of them
    samples = sample_candidates(model, tok, tasks, CFG, "cpu")
    verify(samples, score)
    failing = {(c.task.task_id, c.response) for c in samples if not c.verdict.passed}
    assert failing, "the test needs sampled responses that fail"
    by_id = {t.task_id: t for t in tasks}
    pairs = {(e.task_id, e.response) for e in examples}
    assert not failing & pairs
    assert not {(t.task_id, _forged(t)) for t in tasks} & pairs  # logged "successes" are re-verified
    for e in examples:
        assert score(e.domain, by_id[e.task_id].verifier_task(), e.response).passed

    # the gold solution enters once per task (two logged copies, one of them also logged as failed)
    assert {(t.task_id, t.solution) for t in tasks} <= pairs
    assert counts.log_candidates == 2 * len(tasks) and counts.log_passed == len(tasks)
    assert counts.sampled == len(samples) == 4 * len(tasks)
    assert counts.verified == counts.sampled + counts.log_candidates
    assert counts.passed < counts.verified
    assert counts.examples == len(examples) <= counts.passed


def test_identical_responses_count_once_and_each_task_is_capped():
    t = train_suite("math", 1)[0]
    other = t.solution.replace(". Answer:", ".  Answer:")  # a second, different passing response
    cands = [Candidate(t, t.solution, "logs"), Candidate(t, t.solution, "policy"), Candidate(t, other, "policy"),
             Candidate(t, t.solution, "policy"), Candidate(t, _forged(t), "policy")]
    verify(cands, score)
    assert [c.verdict.passed for c in cands] == [True, True, True, True, False]

    counts = RftCounts()
    examples = select_examples(cands, max_per_task=4, seed=0, counts=counts)
    assert sorted(e.response for e in examples) == sorted([t.solution, other])
    assert examples[0].source == "logs"  # the first copy is the one kept
    assert (counts.passed, counts.duplicates, counts.capped, counts.examples) == (4, 2, 0, 2)

    capped = RftCounts()
    assert len(select_examples(cands, max_per_task=1, seed=0, counts=capped)) == 1
    assert (capped.duplicates, capped.capped, capped.examples) == (2, 1, 1)


def test_one_step_changes_the_weights_and_saves_an_hf_folder(tiny_model_dir, tmp_path):
    from safetensors.torch import load_file

    tasks = _tasks()
    wh = _warehouse(tmp_path, tasks)
    out = tmp_path / "rft-policy"
    result = run_rft(CFG, tiny_model_dir, tasks, out, score_fn=score, warehouse=wh)
    assert result.output_dir == out and len(result.losses) == 1 and result.counts.examples > 0
    before, after = load_file(str(tiny_model_dir / "model.safetensors")), load_file(str(out / "model.safetensors"))
    assert before.keys() == after.keys()
    assert any(not before[k].equal(after[k]) for k in before)
    info = json.loads((out / "flywheel_rft.json").read_text())
    assert info["counts"]["examples"] == result.counts.examples and info["config"]["steps"] == 1
    assert info["base_formats"] == base_formats(tiny_model_dir) != {}  # the lineage's formats travel with it
    saved = [json.loads(x) for x in (out / "rft_dataset.jsonl").read_text().splitlines()]
    assert saved == [e.to_dict() for e in result.examples]


def test_same_seed_gives_the_same_dataset(tiny_model, tmp_path):
    model, tok = tiny_model
    tasks = _tasks()
    wh = _warehouse(tmp_path, tasks)
    first = collect_examples(CFG, model, tok, tasks, score, warehouse=wh)
    again = collect_examples(CFG, model, tok, tasks, score, warehouse=wh)
    assert first == again
    # the seed is what fixes it: another seed draws other samples
    drawn = [c.response for c in sample_candidates(model, tok, tasks, CFG, "cpu")]
    assert [c.response for c in sample_candidates(model, tok, tasks, CFG.replace(seed=1), "cpu")] != drawn


def test_config_rejects_what_cannot_run_and_documents_every_field(tiny_model_dir, tmp_path):
    import dataclasses

    assert all(f.metadata.get("help") for f in dataclasses.fields(RftConfig))
    with pytest.raises(ValueError, match="temperature"):
        RftConfig(temperature=0)
    with pytest.raises(ValueError, match="device"):
        RftConfig(device="tpu")
    with pytest.raises(ValueError, match="RFT found no verified response"):
        run_rft(RftConfig(tasks_per_domain={}, include_logs=False), tiny_model_dir, _tasks(), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_given_sampler_draws_the_policy_samples_and_is_closed(tiny_model_dir, tmp_path):
    """The rollout-engine resource's sampler (vLLM in production) reaches RFT: built over the checkpoint
    folder, used for every policy sample, closed before fine-tuning."""
    from flywheel.rollout import build_engine

    built = []

    class Closing:
        def __init__(self, path):
            self.inner, self.calls, self.closed = build_engine("torch", path), 0, False
            built.append((path, self))

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def generate(self, *a, **kw):
            self.calls += 1
            return self.inner.generate(*a, **kw)

        def close(self):
            self.closed = True

    tasks = _tasks()
    result = run_rft(CFG, tiny_model_dir, tasks, tmp_path / "out", score_fn=score, warehouse=_warehouse(tmp_path, tasks),
                     sample_engine=Closing)
    [(path, eng)] = built
    assert path == str(tiny_model_dir) and eng.calls > 0 and eng.closed
    assert result.counts.sampled == result.counts.tasks * CFG.samples_per_task > 0


def test_a_restart_samples_with_the_champion_and_trains_the_base_on_both_datasets(tiny_model_dir, tmp_path):
    """`restart_from` (init_from=rebase): the champion's examples are carried into the new dataset, and the
    weights start from the base again (with a learning rate too small to move a float32 weight, the policy
    is the base itself, not the champion)."""
    from safetensors.torch import load_file

    tasks = _tasks()
    wh = _warehouse(tmp_path, tasks)
    champ = run_rft(CFG, tiny_model_dir, tasks[:5], tmp_path / "champ", score_fn=score, warehouse=wh)
    out = tmp_path / "rebased"
    res = run_rft(CFG.replace(seed=1, lr=1e-20), champ.output_dir, tasks[5:], out, score_fn=score, warehouse=wh,
                  restart_from=tiny_model_dir)
    old = {(e.prompt, e.response) for e in champ.examples}
    saved = {(d["prompt"], d["response"]) for d in map(json.loads, (out / "rft_dataset.jsonl").read_text().splitlines())}
    assert old and old <= saved and len(saved) > len(old)  # both datasets, each example once
    assert res.carried == len(old - {(e.prompt, e.response) for e in res.examples[:len(res.examples) - res.carried]})
    info = json.loads((out / "flywheel_rft.json").read_text())
    assert info["base_model"] == str(tiny_model_dir) and info["sampled_with"] == str(champ.output_dir)
    assert base_formats(out) == base_formats(tiny_model_dir)
    base, got = load_file(str(tiny_model_dir / "model.safetensors")), load_file(str(out / "model.safetensors"))
    first = load_file(str(champ.output_dir / "model.safetensors"))
    assert all(got[k].equal(base[k]) for k in base) and not all(got[k].equal(first[k]) for k in first)


def test_a_broken_carried_dataset_names_its_file_and_line(tmp_path):
    from flywheel.train.rft.run import carried_examples

    (tmp_path / "rft_dataset.jsonl").write_text('{"task_id": "a", "domain": "math", "prompt": "p", "response": "r", '
                                                '"source": "policy"}\n{"task_id": "b"}\n')
    with pytest.raises(ValueError, match=r"rft_dataset.jsonl:2: not an RFT example"):
        carried_examples(tmp_path)
    assert carried_examples(tmp_path / "nowhere") == []
