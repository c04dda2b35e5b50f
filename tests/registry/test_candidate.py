"""A turn's evaluation: the champion is scored again every turn, under the seed it shares with the candidate."""

from __future__ import annotations

import json

from flywheel.evaluation.suites import EvalConfig, derived_seed
from flywheel.registry.candidate import evaluate_candidate, load_candidate_eval
from flywheel.verifiers import score

CFG = EvalConfig(n_samples=2, tasks_per_domain={"math": 3, "agent": 1}, n_boot=100, max_new_tokens=40, max_steps=2,
                 suites=("heldout",))


def test_champion_is_rescored_under_each_turns_fresh_seed(tiny_model_dir, flywheel_home, seed_mlflow_db, tmp_path):
    import torch

    torch.set_num_threads(1)
    seed_mlflow_db(flywheel_home)
    scored: list[str] = []

    def counting(domain, task, response):
        scored.append(domain)
        return score(domain, task, response)

    def turn(day: str):
        scored.clear()
        ev = evaluate_candidate(tiny_model_dir, "tiny-quick", tiny_model_dir, CFG, flywheel_home,
                                candidate_name=f"candidate-{day}", log_partitions=[day], score=counting)
        return ev, len(scored)

    first, n1 = turn("2026-12-01")
    second, n2 = turn("2026-12-02")
    per_model = 4 * (2 + 1)  # 4 tasks x (2 samples + 1 greedy)
    assert n1 == n2 == 2 * per_model  # both models scored in both turns: no champion report reused
    assert first.champion_uri == second.champion_uri  # same champion (nothing was promoted) ...
    s1, s2 = derived_seed("tiny-quick", ["2026-12-01"]), derived_seed("tiny-quick", ["2026-12-02"])
    assert s1 != s2
    for ev, seed in ((first, s1), (second, s2)):  # ... re-evaluated under each turn's own seed, shared
        assert ev.champion.config.seed == ev.candidate.config.seed == seed
        assert f"seed {seed}, derived from base model `tiny-quick` and log partitions [2026-12-0" in ev.markdown
        assert "### Failure types" in ev.markdown and "greedy@1 difference" in ev.markdown
    assert not (flywheel_home.home / "eval" / "_cache").exists()

    # same weights, same seed: the paired differences are exactly 0 and read as noise
    assert second.comparison.diffs["overall"].value == 0 and second.comparison.greedy_diffs["overall"].value == 0
    assert "noise (CI contains 0)" in second.markdown
    s = second.summary()
    assert s["eval_before_greedy"] == s["eval_after_greedy"] and set(s["eval_before_greedy"]) == {
        "math", "agent", "overall"}
    assert s["eval_before"] == s["eval_after"] and s["eval_seed"] == s2
    assert set(s["failure_types"]) == {"before", "after"}
    flat = second.flat_metrics()
    assert flat["eval_seed"] == s2 and "after/overall/greedy@1" in flat and flat["greedy_diff/overall"] == 0

    # what deploy_candidate and `flywheel turn` read back from the folder says the same
    again = load_candidate_eval(second.report_dir)
    assert again.seed_note == second.seed_note and again.summary()["eval_after_greedy"] == s["eval_after_greedy"]
    payload = json.loads((second.report_dir / "report.json").read_text())
    assert payload["seed"]["seed"] == s2 and payload["failure_types"]["before"] is not None
    meta = json.loads((second.report_dir / "meta.json").read_text())
    assert meta["seed"] == s2 and meta["log_partitions"] == ["2026-12-02"]

    # a seed set in the config is used as given, every turn
    fixed = EvalConfig(**{**CFG.to_dict(), "seed": 7, "derive_seed": False})
    ev = evaluate_candidate(tiny_model_dir, "tiny-quick", tiny_model_dir, fixed, flywheel_home,
                            log_partitions=["2026-12-03"])
    assert ev.champion.config.seed == ev.candidate.config.seed == 7 and "seed 7, set in the config" in ev.markdown


def test_training_prompts_cover_pool_replay_and_the_bases_sft_data(tmp_path):
    """The evaluation is decontaminated against everything training could have shown, not only the pool."""
    import duckdb

    from flywheel.models.recipe import recipe_for
    from flywheel.models.sft_data import sft_mix
    from flywheel.registry.candidate import training_prompts
    from flywheel.tasks.suites import train_suite

    warehouse = tmp_path / "w.duckdb"
    assert training_prompts(warehouse) is None  # nothing checked yet: the check fails, not passes
    con = duckdb.connect(str(warehouse))
    con.execute("CREATE TABLE task_pool (prompt VARCHAR)")
    con.execute("INSERT INTO task_pool VALUES ('a mined prompt')")
    con.close()
    assert training_prompts(warehouse) == ["a mined prompt"]
    full = set(training_prompts(warehouse, base_model="tiny-quick", replay_per_domain=5))
    assert "a mined prompt" in full
    assert {p for _, p, _ in sft_mix(recipe_for("tiny-quick"))} <= full
    assert {t.prompt for t in train_suite("math", 20)} <= full
