"""The trainer's configuration: one frozen dataclass, each field with `help` (TRL style).

Its defaults are the measured RLVR recipe for the tiny model, the one place the turn, the
`flywheel train` flags, the `rlvr_policy` Dagster config and the learning proof take them
from (the flags and the Dagster config are generated from this class). Found by the sweep in
docs/training.md: a 393k-parameter policy is destroyed by lr >= 1e-3 within 10-20 steps and
regresses held-out math at 5e-4 (-10 points after 60 steps on the mined pool); 2e-4 with a
cosine decay and mean-only (Dr. GRPO) advantages gains +20.5 math points in 360 steps. Real
checkpoints (Qwen, Llama) want their own values: every field is overridable.

Frozen after construction (verl) and validated there: a run's config cannot drift mid-run,
a bad value fails before any model loads, and the whole object is logged as MLflow params.
`TrainConfig.replace(**kw)` makes a changed copy.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from flywheel.config_fields import check_choices, option
from flywheel.train.common.lora import LORA_FIELDS, lora_option
from flywheel.train.common.placement import PLACEMENT_FIELDS, placement_option
from flywheel.train.common.schedule import OptimSpec

STAGES = ("rft", "rl", "rft_rl")
"""Training stages a run can chain (`flywheel.train.rft.stage`)."""
ADVANTAGES = ("grpo", "dr_grpo")
"""The advantage estimators `flywheel.train.grpo.loss` registers (a test keeps the two in step)."""


@dataclass(frozen=True)
class TrainConfig:
    """What one training run does: the stages it chains, its data, GRPO's settings (RFT's are `RftConfig`),
    and where both stages run (backend, device), here so it is logged."""

    # run
    stage: str = option("rft", "What the training asset runs: rft (fine-tune on the policy's verified samples, "
                               "flywheel.train.rft.run) | rl (GRPO) | rft_rl (RFT, then GRPO from its weights). "
                               "rft measured best for the tiny model (docs/training.md).",
                        choices=STAGES)
    init_from: str = option("champion", "Where a turn's training starts: champion (the registry's champion when it "
                                        "was trained from this base model, so turns compound; else the base "
                                        "model) | base (always the base model) | rebase (RFT: the champion "
                                        "samples, and the fine-tuning restarts from the base model on this "
                                        "turn's examples and those the champion was trained on, so turns "
                                        "accumulate data instead of stacking fine-tunes).",
                            choices=("champion", "base", "rebase"))
    seed: int = option(0, "Seed for task sampling, generation and init; same seed + same data = same weights.")
    steps: int = option(120, "Number of policy updates (the learning proof runs 360).", ge=0)
    time_budget_s: float = option(0.0, "Stop (and save the policy) once the run has taken this long (0 = no cap); "
                                       "the LR horizon shrinks to the steps the budget reaches.", ge=0)
    budget_clock: str = option("wall", "What time_budget_s counts: wall (elapsed) | cpu (this process's CPU time, "
                                       "what the run would take on dedicated cores of a shared machine).",
                               choices=("wall", "cpu"))
    # batch
    prompts_per_step: int = option(8, "Groups (distinct tasks) per update after dynamic sampling.", ge=1)
    group_size: int = option(8, "Responses sampled per task; GRPO normalizes rewards within this group.", ge=2)
    micro_batch_size: int = option(32, "Rollouts per forward/backward; the step accumulates gradients over "
                                       "micro-batches.", ge=1)
    # optimizer
    lr: float = option(2e-4, "AdamW learning rate (the tiny model: 2e-4; >= 5e-4 regresses it).", gt=0)
    weight_decay: float = option(0.0, "AdamW weight decay.", ge=0)
    adam_betas: tuple[float, float] = option((0.9, 0.99), "AdamW betas.")
    warmup_steps: int = option(0, "Linear LR warmup steps.", ge=0)
    lr_schedule: str = option("cosine", "LR schedule after warmup: constant | cosine (decays to 10% over steps, or "
                                        "over the steps a time budget reaches).",
                              choices=("constant", "cosine"))
    max_grad_norm: float = option(1.0, "Gradient clipping by global norm (0 disables).", ge=0)
    # loss
    advantage: str = option("dr_grpo", "Advantage estimator: grpo ((r - mean) / std per group) | "
                                       "dr_grpo (r - mean, Dr. GRPO).", choices=ADVANTAGES)
    clip_low: float = option(0.2, "PPO ratio clip below: ratio >= 1 - clip_low.", ge=0, le=1)
    clip_high: float = option(0.28, "PPO ratio clip above (DAPO clip-higher): ratio <= 1 + clip_high.", ge=0)
    kl_coef: float = option(0.0, "Weight of the k3 KL penalty to a frozen reference policy (0 = no reference kept).", ge=0)
    loss_agg: str = option("token-mean", "Loss aggregation: token-mean (DAPO) | seq-mean-token-mean (GRPO paper).",
                           choices=("token-mean", "seq-mean-token-mean"))
    ppo_epochs: int = option(1, "Optimizer passes over each batch (1 = on-policy GRPO; >1 exercises the clip).", ge=1)
    # sampling
    temperature: float = option(1.0, "Sampling temperature (the loss uses the same tempered distribution).", gt=0)
    top_p: float = option(1.0, "Nucleus sampling (1.0 = off; < 1 biases log-probs, keep 1.0 for RL).", gt=0, le=1)
    max_new_tokens: int = option(80, "Longest response in tokens (the tiny model's math scratchpad needs up to ~60).", ge=1)
    max_tool_steps: int = option(6, "Most tool calls in one agent rollout.", ge=0)
    # data: what the run samples from
    replay_tasks_per_domain: int = option(
        1536, "Tasks per weighted domain from its train suite (never held-out) mixed with the mined pool, so a "
              "turn does not memorise a small mined slice and RFT has fresh tasks each turn (0 = pool only).", ge=0)
    use_pool: bool = option(True, "Train on the mined task pool; off: replay only, the pool ignored (the "
                                  "replay-only arm of benchmarks/bench_ablation.py: same compute, no mining).")
    replay_share: float = option(0.5, "Share of a domain's draws taken from replay while the domain has both "
                                      "pool and replay tasks under the cap (the rest from the pool).", ge=0, le=1)
    max_samples_per_task: int = option(64, "Most responses sampled for one task in one run; the scheduler stops "
                                           "drawing a task whose next group would pass it (0 = no cap).", ge=0)
    # dev split: early stopping and the best checkpoint
    dev_every: int = option(20, "Score the dev split every N steps (and at step 0 and the end); the best-scoring "
                                "checkpoint is the run's policy (0 = off: the last step's policy).", ge=0)
    dev_tasks_per_domain: int = option(32, "Dev tasks per weighted domain: train-suite tasks drawn with their own "
                                           "seed, disjoint from every task the run trains on.", ge=0)
    dev_temperature: float = option(0.0, "Dev decoding temperature (0 = greedy).", ge=0)
    dev_samples: int = option(1, "Responses per dev task (1 with greedy decoding).", ge=1)
    patience: int = option(3, "Stop after this many dev scores in a row without a new best (0 = never stop early).", ge=0)
    # scheduler
    domain_weights: dict[str, float] = option(
        {"math": 0.8, "code": 0.1, "agent": 0.1},
        "Sampling weight of each domain (normalized); a small share of code and agent keeps them from being "
        "forgotten while math is pushed. A key may also be a glob over the installed environments' domains "
        "(rg.*) or family:NAME: its weight is split evenly over the domains it matches.", ge=0)
    domain_mix: str = option("weights", "weights: sample domains by domain_weights; pool_failures: by each weighted "
                                        "domain's share of the mined pool (its logged failures), floored at a tenth "
                                        "of its configured weight's share", choices=("weights", "pool_failures"))
    target_pass_rate: float = option(0.5, "Difficulty sampling prefers tasks whose running pass rate is near this.", ge=0, le=1)
    difficulty_sharpness: float = option(4.0, "How strongly sampling prefers the target (0 = uniform).", ge=0)
    min_task_weight: float = option(0.05, "Floor on a task's sampling weight so solved/unsolved tasks are revisited.", ge=0, le=1)
    pass_rate_prior: float = option(0.5, "Pass rate assumed for a task never attempted.", ge=0, le=1)
    adaptive_prior: bool = option(True, "Unseen tasks start at their domain's observed pass rate instead of "
                                        "pass_rate_prior.")
    pass_rate_momentum: float = option(0.5, "EMA weight of the old pass rate when a group's result arrives.", ge=0, le=1)
    partial_credit: bool = option(False, "Reward a failed rollout with partial credit where its verifier reports "
                                         "one (agent: half its share of items right, flywheel.train.grpo.reward): "
                                         "groups of failures get signal. Only the reward: evaluation, pass rates "
                                         "and the dev split stay binary.")
    dynamic_sampling: bool = option(True, "Drop groups whose rewards are all equal and refill the batch (DAPO).")
    max_refill_rounds: int = option(1, "Extra generation rounds to refill dropped groups before updating anyway.", ge=0)
    # pipelining
    off_policy_pipeline: bool = option(False, "Generate step k+1 in a thread while step k updates.")
    max_staleness: int = option(1, "Most policy versions a rollout may lag the policy it updates.", ge=0)
    # infrastructure
    backend: str = placement_option("backend")
    zero_stage: int = placement_option("zero_stage")
    device: str = placement_option("device")
    lora_rank: int = lora_option("lora_rank")
    lora_alpha: float = lora_option("lora_alpha")
    lora_targets: str = lora_option("lora_targets")
    checkpoint_every: int = option(10, "Checkpoint every N steps (0 = only at the end).", ge=0)
    num_threads: int = option(0, "torch intra-op threads for the run (0 = 1 on CPU, where more threads spin-wait "
                                 "on a shared machine; torch's default on a GPU).", ge=0)

    def __post_init__(self) -> None:
        check_choices(self)  # every field's own range; below, what ties fields together
        if not self.domain_weights or sum(self.domain_weights.values()) <= 0:
            raise ValueError("domain_weights must be a non-empty mapping whose weights are not all zero")
        if any(k not in ("math", "code", "agent") for k in self.domain_weights):
            from flywheel.environments.mix import expand_weights  # loads the installed environments

            object.__setattr__(self, "domain_weights", expand_weights(self.domain_weights))
        if self.max_staleness < 1 and self.off_policy_pipeline:
            raise ValueError("off_policy_pipeline needs max_staleness >= 1")
        if 0 < self.max_samples_per_task < self.group_size:
            raise ValueError("max_samples_per_task must be >= group_size (or 0): a task is sampled a group at a time")

    def optim(self) -> OptimSpec:
        """The GRPO stage's optimizer and schedule values (the cosine's horizon: `steps`, which a time
        budget may shorten while the run goes)."""
        return OptimSpec(lr=self.lr, betas=tuple(self.adam_betas), weight_decay=self.weight_decay,
                         max_grad_norm=self.max_grad_norm, warmup_steps=self.warmup_steps,
                         cosine=self.lr_schedule == "cosine", horizon=self.steps)

    def replace(self, **changes: Any) -> TrainConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_params(self) -> dict[str, str]:
        """Flat string params for MLflow (`cfg.<name>`)."""
        out = {}
        for k, v in self.to_dict().items():
            out[f"cfg.{k}"] = json.dumps(v, sort_keys=True) if isinstance(v, (dict, list, tuple)) else str(v)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in d.items() if k in names}
        if "adam_betas" in kw:
            kw["adam_betas"] = tuple(kw["adam_betas"])
        return cls(**kw)

    @classmethod
    def help(cls) -> dict[str, str]:
        return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(cls)}


GRPOConfig = TrainConfig
"""The old name of `TrainConfig` (it configured a run whose default stage is RFT, not GRPO); kept for users'
code, the repository uses `TrainConfig`."""


RUN_FIELDS = ("stage", "init_from", "seed", "use_pool", "replay_tasks_per_domain", "domain_weights", "dev_every",
              "dev_tasks_per_domain", *PLACEMENT_FIELDS, "num_threads", *LORA_FIELDS)
"""`TrainConfig` fields every stage reads: the run, its task set (`build_task_set`), placement and adapter; the
other fields are GRPO's settings, which a run of stage `rft` ignores (its own are `RftConfig`'s)."""


def ignored_by_stage(stage: str, names: list[str] | tuple[str, ...], rft_prefix: str = "rft_") -> list[str]:
    """Which of the settings `names` (TrainConfig fields; RftConfig's as `rft_<field>`) a run of `stage` never
    reads: GRPO's under `rft`, RFT's under `rl`; under `rft_rl` both stages run."""
    if stage == "rft":
        return [n for n in names if not n.startswith(rft_prefix) and n not in RUN_FIELDS]
    if stage == "rl":
        return [n for n in names if n.startswith(rft_prefix)]
    return []
