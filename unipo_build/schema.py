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
tokens): see unipo_build.importers for the mapping. Unknown fields are kept
(``extra="allow"``) so a log written by a newer version or another tool stays readable.
NaN and infinities are rejected everywhere; a metric that is undefined at a step is null.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .specs import ResolvedAlgorithm

SCHEMA_VERSION = "unipo-run/1"

Finite = Annotated[float, Field(allow_inf_nan=False)]


class _Model(BaseModel):
    """Unknown fields are kept; NaN and infinity are errors."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False, populate_by_name=True)


# ---------------------------------------------------------------------------
# Header
# ---------------------------------------------------------------------------

class TaskInfo(_Model):
    name: str = Field(description="Human-readable task name.")
    source: str = Field(description="Where the prompts came from: a generator and seed, or a file path.")
    n_train: int | None = Field(None, ge=0)
    n_eval: int | None = Field(None, ge=0)
    seed: int | None = None
    description: str | None = None


class RewardComponentInfo(_Model):
    name: str = Field(description="Key in Response.reward_components, e.g. 'correct' or 'format'.")
    description: str
    weight: Finite = Field(description="Weight of this component in the scalar reward.")


class RewardInfo(_Model):
    description: str
    components: list[RewardComponentInfo] = Field(default_factory=list)


class ModelInfo(_Model):
    name: str = Field(description="Preset name or checkpoint path.")
    architecture: str | None = None
    parameters: int | None = Field(None, ge=0, description="Number of parameters.")
    checkpoint: str | None = Field(None, description="Path of the checkpoint the weights came from.")
    tokenizer: str | None = None
    vocab_size: int | None = Field(None, ge=1)


class Hardware(_Model):
    device: str = Field(description="cpu, cuda, ...")
    device_name: str | None = None
    cpu: str | None = None
    cores: int | None = Field(None, ge=1)
    threads: int | None = Field(None, ge=1)
    dtype: str | None = None


class LengthProbe(_Model):
    """How much room the task leaves for length to matter, measured on the starting policy.

    G responses are sampled at the training temperature for each of the first ``prompts`` held-out
    problems. A task where every answer to a prompt has the same length gives per-response
    normalisation, length bias and overlong shaping nothing to act on.
    """

    prompts: int = Field(ge=1, description="Held-out prompts probed.")
    group_size: int = Field(ge=1, description="Responses sampled per prompt.")
    budget: int = Field(ge=1, description="The generation budget (max new tokens).")
    median_length: Finite = Field(ge=0, description="Median response length in tokens.")
    mean_length: Finite = Field(ge=0)
    within_group_sd: Finite = Field(ge=0, description="Mean over prompts of the standard deviation (n) of the lengths within a group.")
    overlong_band: Finite | None = Field(None, ge=0, le=1, description="Fraction of responses longer than 80% of the budget (DAPO's overlong band: the last 20%).")
    truncated: Finite = Field(ge=0, le=1, description="Fraction of responses that hit the budget.")
    accuracy: Finite = Field(ge=0, le=1, description="Fraction of the probed responses that are correct.")


class RunHeader(_Model):
    schema_version: Literal["unipo-run/1"] = SCHEMA_VERSION
    run_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    algorithm: str = Field(description="The spec id (data/algorithms/<id>.yaml).")
    algorithm_config: ResolvedAlgorithm | None = Field(
        None, description="The resolved components the run trained with, copied in so the log stays readable when specs change. Null for imported runs whose objective is unknown.")
    title: str | None = None
    task: TaskInfo
    reward: RewardInfo
    model: ModelInfo
    reference_model: ModelInfo | None = None
    preset: str | None = None
    hyperparameters: dict[str, Any] = Field(default_factory=dict)
    seed: int | None = None
    hardware: Hardware | None = None
    software: dict[str, str] = Field(default_factory=dict)
    commit: str | None = None
    engine: str = Field("unipo", description="What produced the log: unipo (this trainer), openrlhf, unipo-import, ...")
    created_at: datetime
    finished_at: datetime | None = None
    steps_per_rollout: int | None = Field(None, ge=1)
    length_probe: LengthProbe | None = Field(
        None, description="Response lengths of the starting policy, measured before the first update.")
    notes: str | None = None


# ---------------------------------------------------------------------------
# Per-step metrics
# ---------------------------------------------------------------------------

class MetricInfo(BaseModel):
    label: str
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
    "clip/frac_low": _m("Clipped low", "Fraction of tokens with negative advantage whose ratio fell below 1 - eps_low.", "policy"),
    "clip/frac_high": _m("Clipped high", "Fraction of tokens with positive advantage whose ratio rose above 1 + eps_high.", "policy"),
    "ratio/min": _m("Ratio min", "Smallest token importance ratio in the minibatch.", "policy"),
    "ratio/mean": _m("Ratio mean", "Mean token importance ratio in the minibatch.", "policy"),
    "ratio/max": _m("Ratio max", "Largest token importance ratio in the minibatch.", "policy"),
    "length/mean": _m("Response length", "Mean length in tokens of the trained responses (kept groups only under a sampling filter).", "length", scope="rollout"),
    "length/correct": _m("Length (correct)", "Mean length of correct responses; null if none.", "length", scope="rollout"),
    "length/incorrect": _m("Length (wrong)", "Mean length of wrong responses; null if none.", "length", scope="rollout"),
    "length/truncated_frac": _m("Truncated", "Fraction of responses that hit the generation budget.", "length", "worse", "rollout"),
    "grad_norm": _m("Gradient norm", "Norm of the policy gradient before clipping.", "optimiser"),
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
    step: int = Field(ge=0, description="Gradient update index, from 0.")
    rollout: int = Field(ge=0, description="Which rollout this update trains on.")
    first_in_rollout: bool = Field(description="True on the first update after a rollout phase: a rollout boundary.")
    metrics: dict[str, Finite | None] = Field(default_factory=dict)
    has_tokens: bool = Field(False, description="True when tokens/step_NNNNNN.json exists for this step.")


class EvalRecord(_Model):
    step: int = Field(ge=0, description="Updates done before this evaluation (0 = before training).")
    phase: Literal["start", "periodic", "end"]
    n: int = Field(ge=1, description="Number of held-out problems.")
    accuracy_greedy: Finite | None = Field(None, ge=0, le=1)
    accuracy_sampled: Finite | None = Field(None, ge=0, le=1)
    mean_length: Finite | None = Field(None, ge=0, description="Mean length of the greedy answers (the sampled ones if there is no greedy pass).")
    mean_length_sampled: Finite | None = Field(None, ge=0)
    temperature: Finite | None = None
    problems: str | None = Field(None, description="Which held-out problems, e.g. 'eval rows 1-500': the same problems in the same order at every evaluation that names the same range, so evaluations can be compared problem by problem.")
    correct_greedy: str | None = Field(None, pattern=r"^[01]*$", description="One character per problem, in order: 1 if the greedy answer is right, 0 if not.")
    correct_sampled: str | None = Field(None, pattern=r"^[01]*$", description="Likewise for the sampled answer (one sample per problem at the training temperature).")

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

TOKEN_FLOAT_FIELDS = ("logp", "old_logp", "ref_logp", "value", "advantage", "return", "kl", "ratio",
                      "entropy", "weight", "objective")


class TokenArrays(_Model):
    """Per-token arrays of one response, all of the same length as ``ids``.

    Optional arrays are null when the algorithm does not have the quantity (no ``value``
    without a critic, no ``ref_logp`` without a KL term).
    """

    ids: list[int] = Field(description="Token ids of the response.")
    text: list[str] = Field(description="Each token's text as the tokenizer decodes it.")
    logp: list[Finite] = Field(description="log pi_theta of the token at this update.")
    old_logp: list[Finite] = Field(description="log pi_old of the token (the sampling policy).")
    ref_logp: list[Finite] | None = Field(None, description="log pi_ref (the frozen reference model).")
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
    index: int = Field(ge=0, description="Position in its group.")
    text: str
    reward: Finite = Field(description="The scalar reward used for the advantage (after shaping).")
    reward_components: dict[str, Finite] = Field(default_factory=dict)
    advantage: Finite | None = Field(None, description="Response-level advantage (group-based algorithms); null when it varies by token.")
    length: int = Field(ge=0)
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
    index: int = Field(ge=0, description="Index of the group in its rollout.")
    prompt: str
    answer: str | None = Field(None, description="The reference answer (label).")
    filtered: bool = False
    contribution: Finite | None = Field(None, description="Sum of its responses' contributions to the step objective.")
    responses: list[Response]


class GroupSummary(_Model):
    index: int = Field(ge=0)
    size: int = Field(ge=1)
    n_correct: int | None = Field(None, ge=0)
    reward_mean: Finite | None = None
    filtered: bool = False
    contribution: Finite = Field(description="The group's share of the step objective (0 when every advantage is 0).")
    detailed: bool = Field(False, description="True when this group's tokens are in StepDetail.prompts.")


class StepDetail(_Model):
    schema_version: Literal["unipo-run/1"] = SCHEMA_VERSION
    step: int = Field(ge=0)
    rollout: int = Field(ge=0)
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


def json_schema() -> dict[str, Any]:
    """The JSON Schema of every file of a run, for the reference docs."""
    return {
        "header.json": RunHeader.model_json_schema(by_alias=True),
        "steps.jsonl (one object per line)": StepRecord.model_json_schema(by_alias=True),
        "evals.jsonl (one object per line)": EvalRecord.model_json_schema(by_alias=True),
        "tokens/step_NNNNNN.json": StepDetail.model_json_schema(by_alias=True),
    }
