"""What a rejection-sampling fine-tuning run does (`flywheel.train.rft.run`): its config alone, light to
import, so the CLI can generate its flags without loading torch.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from flywheel.config_fields import check_choices, option
from flywheel.train.common.lora import LORA_FIELDS, lora_option
from flywheel.train.common.placement import PLACEMENT_FIELDS, placement_option

REPLAY_REFERENCES = ("none", "failed", "all")
"""Which replay tasks also get their reference solution as a candidate (`RftConfig.replay_references`)."""
RFT_PREFIX = "rft_"
"""Where the RFT stage's fields appear beside TrainConfig's: `--rft-steps`, Dagster `rft_steps`."""
RFT_RUN_FIELDS = ("seed", *PLACEMENT_FIELDS, *LORA_FIELDS, "num_threads")
"""RftConfig fields a training run sets from its own config and resources, not shown as RFT settings: the
placement (backend, ZeRO stage, device) is the run's, so both stages update through the same backend."""


@dataclass(frozen=True)
class RftConfig:
    """What one RFT run does: which candidates it draws, which it keeps, how it fine-tunes.

    The defaults are the measured recipe (docs/training.md, "Rejection-sampling fine-tuning" and "Turns that
    compound"): the task counts and SFT settings from tiny-v1 (1500 fresh math tasks a turn instead of 300
    lifted the held-out math ceiling of repeated rounds from ~0.74 to 0.77 at T=0.7); variants, reference
    solutions and the replay share from whole turns on tiny-v3.
    """

    seed: int = option(0, "Seed for task choice, sampling, the per-task cap and SFT batch order.")
    # candidates
    tasks_per_domain: dict[str, int] = option(
        {"math": 1500, "code": 150, "agent": 1200},
        "Most of the run's tasks sampled per domain (seeded choice); 0 or absent: the domain gets no policy "
        "samples. Keys may be globs (rg.*) or family:NAME, each matched domain getting the count. agent was 0 "
        "while the base solved ~2% of its tasks (tiny-v1/v2: nothing to keep); a base taught the worked plan "
        "(tiny-v3) passes enough of them for RFT to learn from. One example per distinct correct trajectory "
        "makes the agent share of a round about its task count: at 600 (408-424 of ~2,100 examples) three turns' "
        "champions gained +0.6 to +1.6 points of production agent, noise on every traffic seed; at 1200 "
        "(~1,165 of ~2,800), where the mined share no longer displaces half the replay, champions gained +6.6 "
        "points of production agent on traffic seeds 0 and 1, each interval above 0, and 3 of 3 turns promoted "
        "on both, for ~4 more minutes a turn (docs/training.md).", ge=0)
    pool_first: bool = option(True, "Take each domain's mined pool tasks first (up to its tasks_per_domain), then "
                                    "fill the count with replay: the failures production showed are what a turn "
                                    "is for (off: one seeded choice over pool and replay alike, ~90% replay).")
    samples_per_task: int = option(8, "Policy samples drawn per task (0 = logged successes only).", ge=0)
    pool_samples_per_task: int = option(
        16, "Policy samples per mined pool task and per variant of one (0: samples_per_task). A frontier task at "
            "pass@1 0.05 shows a passing sample in 8 draws 34% of the time, in 16 draws 56%; replay tasks keep "
            "samples_per_task. 16 with variants_per_task 4 measured best on a dev split (docs/training.md).", ge=0)
    variants_per_task: int = option(
        8, "Fresh tasks of each chosen mined pool task's own kind (its environment's `variants`: same level, new "
           "numbers and names; train split, decontaminated against every evaluation suite) taken after the pool "
           "and before replay under tasks_per_domain (and replay_share): one mined failure becomes a small "
           "curriculum. 0: none; a replay-only run has no pool, so none. 8 with reference_solutions measured best on "
           "a dev split of the production distribution (docs/training.md; 4 was the best without references).",
        ge=0)
    replay_share: float = option(
        0.5, "Least share of each domain's tasks_per_domain kept for replay when pool tasks and their variants "
             "would take every place (variants are then cut evenly across pool tasks). Without replay the policy "
             "drifts on the distribution it was built on: three turns with share 0 lost 4.9 held-out points "
             "(docs/training.md). 0: the pool and its variants may take every place.", ge=0, le=1)
    reference_solutions: bool = option(
        True, "Also train on each variant's reference solution (its environment's gold answer, written in the "
              "base's SFT format when the base is a tiny release; verified like any candidate): a teacher for the "
              "kinds of failure production showed, spent where mining points. Off: RFT learns from the policy's "
              "own passing samples only, which cannot teach a task the policy never solves.")
    replay_references: str = option(
        "none", "Also train on the reference solution of replay tasks (gold answers of the distribution the base "
                "was built on, in its SFT format, verified like any candidate): an anchor against the drift of "
                "training on the policy's own samples turn after turn. all: every replay task; failed: those none "
                "of whose policy samples passed; none: replay learns from the policy's samples only.",
        choices=REPLAY_REFERENCES)
    temperature: float = option(0.7, "Sampling temperature of the policy's own samples (0.7 measured better than 1.0: "
                                        "cleaner demonstrations; greedy would give one response per task).", gt=0)
    max_new_tokens: int = option(128, "Longest sampled response in tokens (per turn for agent tasks).", ge=1)
    max_tool_steps: int = option(6, "Most tool calls in one agent sample.", ge=0)
    include_logs: bool = option(False, "Also use logged production responses of the run's tasks that the "
                                       "verifiers pass on re-verification. Off by default: logs from another "
                                       "model are off-policy demonstrations; measured in a turn on the tiny "
                                       "model, with them held-out code fell 15 points, without them it rose 9.")
    log_candidates_per_task: int = option(16, "Most distinct logged responses (claimed successes) re-verified "
                                              "per task.", ge=0)
    max_examples_per_task: int = option(4, "Distinct passing responses kept per task (identical ones are "
                                           "deduplicated first), so easy tasks do not dominate the data.", ge=1)
    # SFT
    steps: int = option(400, "SFT optimizer steps on the kept responses.", ge=1)
    lr: float = option(1e-4, "Peak AdamW learning rate (linear warmup, then cosine decay to 10%).", gt=0)
    batch_size: int = option(16, "Examples per SFT step.", ge=1)
    warmup: int = option(5, "Linear LR warmup steps.", ge=0)
    max_len: int = option(384, "Examples are truncated to this many tokens (prompt + response).", ge=1)
    # infrastructure
    backend: str = placement_option("backend")
    zero_stage: int = placement_option("zero_stage")
    device: str = placement_option("device")
    lora_rank: int = lora_option("lora_rank")
    lora_alpha: float = lora_option("lora_alpha")
    lora_targets: str = lora_option("lora_targets")
    num_threads: int = option(1, "torch intra-op threads while the stage runs (0 = leave torch's default); "
                                 "1 is fastest for the tiny model on a shared CPU.", ge=0)

    def __post_init__(self) -> None:
        check_choices(self)  # every field's own range; below, what the ranges cannot say
        if any(k not in ("math", "code", "agent") for k in self.tasks_per_domain):
            from flywheel.environments.mix import expand_counts  # loads the installed environments

            object.__setattr__(self, "tasks_per_domain", expand_counts(self.tasks_per_domain))

    def replace(self, **changes: Any) -> RftConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
