"""Algorithm specs: one YAML file per algorithm, validated against the component registry.

An algorithm is a choice of one component per slot (advantage, ratio, clip, kl,
aggregation, filter, shaping) plus its prose. The registry below is the only place
that knows which kinds exist, which parameters each takes, and how each is written
in LaTeX; the trainer's loss (unipo_build.objective) and the site's cards read it.

Conventions the literature splits on are explicit parameters: the std's ddof, the KL
estimator and where the KL sits, the constant normaliser.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

SLOTS = ("advantage", "ratio", "clip", "kl", "aggregation", "filter", "shaping")
SPEC_DIR = Path(__file__).resolve().parent.parent / "data" / "algorithms"


class SpecError(ValueError):
    """A spec that does not validate. The message names the file and the field."""


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


@dataclass(frozen=True)
class Term:
    """One symbol of a component's formula with the tooltip a reader sees on hover."""

    key: str
    symbol: str
    tooltip: str


@dataclass(frozen=True)
class Kind:
    """One registered component kind of one slot."""

    slot: str
    name: str
    params: type[_Params]
    summary: str
    latex: Callable[[dict], str]
    terms: tuple[Term, ...] = ()
    # Which parameters the run fills in when the spec leaves them null (e.g. the
    # constant normaliser defaults to the run's generation budget).
    run_resolved: tuple[str, ...] = field(default=())


REGISTRY: dict[str, dict[str, Kind]] = {slot: {} for slot in SLOTS}


def register(slot: str, name: str, params: type[_Params], summary: str, latex: Callable[[dict], str],
             terms: tuple[Term, ...] = (), run_resolved: tuple[str, ...] = ()) -> Kind:
    """Add a component kind. New algorithms that need a new component call this."""
    if slot not in REGISTRY:
        raise ValueError(f"unknown slot {slot!r} (slots: {', '.join(SLOTS)})")
    kind = Kind(slot, name, params, summary, latex, terms, run_resolved)
    REGISTRY[slot][name] = kind
    return kind


def _fmt(value: Any) -> str:
    """A parameter value as it appears in a formula: shortest exact decimal."""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


# --- advantage -------------------------------------------------------------

class GaeParams(_Params):
    gamma: float = Field(1.0, ge=0, le=1, description="Discount per token.")
    lam: float = Field(0.95, ge=0, le=1, description="GAE lambda: bias-variance trade-off.")
    value_clip: float | None = Field(0.2, gt=0, description="Clip range of the value loss; null for none.")


class ZScoreParams(_Params):
    std_ddof: Literal[0, 1] = Field(1, description="1: sample std (n-1, torch/OpenRLHF/TRL); 0: population std (n).")
    eps: float = Field(1e-6, ge=0, description="Added to the std so equal rewards do not divide by zero.")


class NoParams(_Params):
    pass


class ReturnParams(_Params):
    baseline: Literal["none", "batch_mean"] = Field(
        "batch_mean", description="Subtracted from the return: nothing, or the mean reward of the whole batch.")
    gamma: float = Field(1.0, ge=0, le=1, description="Discount per token.")


class WhitenParams(_Params):
    gamma: float = Field(1.0, ge=0, le=1, description="Discount per token.")
    eps: float = Field(1e-6, ge=0, description="Added to the batch std.")


_R = Term("reward", r"r_i", "The reward of response i: 1 if its final answer is right, 0 if not.")
_A = Term("advantage", r"\hat{A}_{i,t}", "The advantage: how much better than expected this response (or token) did. Its sign decides whether the token is pushed up or down.")

register("advantage", "group_zscore", ZScoreParams,
         "Each reward minus its group's mean, divided by the group's standard deviation.",
         lambda p: r"\hat{A}_{i,t}=\frac{r_i-\operatorname{mean}(\{r_j\}_{j=1}^{G})}{\operatorname{std}_{%s}(\{r_j\}_{j=1}^{G})+\epsilon}"
         % ("n-1" if p["std_ddof"] == 1 else "n"),
         (_A, _R, Term("mean", r"\operatorname{mean}", "The average reward of the G responses to the same prompt: the baseline."),
          Term("std", r"\operatorname{std}", "The spread of rewards in the group. Dividing by it makes near-solved and near-hopeless prompts count as much as 50/50 ones.")))
register("advantage", "group_mean", NoParams,
         "Each reward minus its group's mean; no division by the spread.",
         lambda p: r"\hat{A}_{i,t}=r_i-\operatorname{mean}(\{r_j\}_{j=1}^{G})",
         (_A, _R, Term("mean", r"\operatorname{mean}", "The average reward of the G responses to the same prompt: the baseline.")))
register("advantage", "leave_one_out", NoParams,
         "Each reward minus the mean reward of the other responses to the same prompt.",
         lambda p: r"\hat{A}_{i,t}=r_i-\frac{1}{G-1}\sum_{j\neq i}r_j",
         (_A, _R))
register("advantage", "gae", GaeParams,
         "Generalised advantage estimation from per-token rewards and a learned critic V.",
         lambda p: r"\hat{A}_{i,t}=\sum_{l\ge 0}(\gamma\lambda)^{l}\,\delta_{i,t+l},\quad \delta_{i,t}=r_{i,t}+\gamma V(s_{t+1})-V(s_t),\quad \gamma=%s,\ \lambda=%s"
         % (_fmt(p["gamma"]), _fmt(p["lam"])),
         (_A, Term("delta", r"\delta_{i,t}", "The temporal-difference error: what the critic did not predict at this token."),
          Term("value", r"V(s_t)", "The critic's estimate of the reward still to come from this token on."),
          Term("gamma", r"\gamma", "Discount per token (1: a reward at the end counts fully for every token)."),
          Term("lambda", r"\lambda", "Trades bias (small) against variance (large) in the advantage.")))
register("advantage", "reinforce_return", ReturnParams,
         "The reward to go, minus a batch-wide baseline (or none).",
         lambda p: r"\hat{A}_{i,t}=\sum_{t'\ge t}\gamma^{t'-t}r_{i,t'}%s" % (
             r"-\operatorname{mean}_{\text{batch}}(r)" if p["baseline"] == "batch_mean" else ""),
         (_A, Term("return", r"r_{i,t'}", "Per-token reward: the answer's reward sits on the last token; a KL penalty, if any, on every token."),
          Term("baseline", r"\operatorname{mean}_{\text{batch}}", "One baseline for the whole batch, shared by every prompt: easy and hard prompts are judged against the same bar.")))
register("advantage", "whitened_return", WhitenParams,
         "The reward to go, whitened over the whole batch (REINFORCE++).",
         lambda p: r"\hat{A}_{i,t}=\frac{G_{i,t}-\operatorname{mean}_{\text{batch}}(G)}{\operatorname{std}_{\text{batch}}(G)}",
         (_A, Term("return", r"G_{i,t}", "The reward to go from token t."),))

# --- ratio -----------------------------------------------------------------

register("ratio", "token", NoParams,
         "The token's probability under the current policy over its probability when it was sampled.",
         lambda p: r"\rho_{i,t}=\frac{\pi_\theta(o_{i,t}\mid q,o_{i,<t})}{\pi_{\theta_{\text{old}}}(o_{i,t}\mid q,o_{i,<t})}",
         (Term("ratio", r"\rho_{i,t}", "Importance ratio: above 1 the update has already made this token more likely than when it was sampled, below 1 less likely."),
          Term("policy", r"\pi_\theta", "The policy being trained."),
          Term("old_policy", r"\pi_{\theta_{\text{old}}}", "The policy that sampled the responses (frozen during this rollout's updates).")))
register("ratio", "sequence", NoParams,
         "One ratio per response: the geometric mean of its token ratios (GSPO).",
         lambda p: r"s_{i}=\left(\frac{\pi_\theta(o_i\mid q)}{\pi_{\theta_{\text{old}}}(o_i\mid q)}\right)^{1/|o_i|}",
         (Term("ratio", r"s_i", "Sequence ratio: the length-normalised likelihood ratio of the whole response, shared by all its tokens."),))
register("ratio", "none", NoParams,
         "No importance ratio: the plain score-function (REINFORCE) objective, one update per sample.",
         lambda p: r"\rho_{i,t}=\frac{\pi_\theta(o_{i,t}\mid q,o_{i,<t})}{\operatorname{sg}[\pi_\theta(o_{i,t}\mid q,o_{i,<t})]}=1",
         (Term("ratio", r"\rho_{i,t}", "Always 1 in value; its gradient is that of log pi, so rho A has the REINFORCE gradient A grad log pi."),
          Term("sg", r"\operatorname{sg}", "Stop-gradient: treated as a constant when differentiating.")))

# --- clip ------------------------------------------------------------------

class SymmetricClip(_Params):
    eps: float = Field(0.2, gt=0, lt=1, description="The ratio is clipped to [1 - eps, 1 + eps].")


class AsymmetricClip(_Params):
    eps_low: float = Field(0.2, gt=0, lt=1, description="Lower clip: the ratio may fall to 1 - eps_low.")
    eps_high: float = Field(0.28, gt=0, description="Upper clip: the ratio may rise to 1 + eps_high.")


register("clip", "none", NoParams, "No clipping: the surrogate is the ratio times the advantage.",
         lambda p: r"\ell_{i,t}=\rho_{i,t}\,\hat{A}_{i,t}")
register("clip", "symmetric", SymmetricClip,
         "PPO's pessimistic clip: once the ratio leaves [1 - eps, 1 + eps] in the advantage's direction, the token stops pushing.",
         lambda p: r"\ell_{i,t}=\min\!\big(\rho_{i,t}\hat{A}_{i,t},\ \operatorname{clip}(\rho_{i,t},1-%s,1+%s)\,\hat{A}_{i,t}\big)"
         % (_fmt(p["eps"]), _fmt(p["eps"])),
         (Term("clip", r"\operatorname{clip}", "Keeps the ratio inside the trust region; outside it, in the direction the advantage pushes, the gradient is zero."),
          Term("min", r"\min", "The pessimistic choice: the smaller of the clipped and unclipped objectives.")))
register("clip", "asymmetric", AsymmetricClip,
         "Clip-higher: a wider upper bound lets unlikely tokens with positive advantage grow before clipping stops them.",
         lambda p: r"\ell_{i,t}=\min\!\big(\rho_{i,t}\hat{A}_{i,t},\ \operatorname{clip}(\rho_{i,t},1-%s,1+%s)\,\hat{A}_{i,t}\big)"
         % (_fmt(p["eps_low"]), _fmt(p["eps_high"])),
         (Term("clip", r"\operatorname{clip}", "Asymmetric trust region: the upper bound 1 + eps_high is wider than the lower 1 - eps_low."),
          Term("min", r"\min", "The pessimistic choice: the smaller of the clipped and unclipped objectives.")))

# --- kl --------------------------------------------------------------------

class KlParams(_Params):
    estimator: Literal["k1", "k2", "k3"] = Field(description="Schulman's estimator of KL(pi_theta || pi_ref).")
    beta: float = Field(gt=0, description="KL coefficient.")


_KL_LATEX = {
    "k1": r"\log\frac{\pi_\theta(o_{i,t}\mid\cdot)}{\pi_{\text{ref}}(o_{i,t}\mid\cdot)}",
    "k2": r"\tfrac12\Big(\log\frac{\pi_{\text{ref}}(o_{i,t}\mid\cdot)}{\pi_\theta(o_{i,t}\mid\cdot)}\Big)^{2}",
    "k3": r"\frac{\pi_{\text{ref}}(o_{i,t}\mid\cdot)}{\pi_\theta(o_{i,t}\mid\cdot)}-\log\frac{\pi_{\text{ref}}(o_{i,t}\mid\cdot)}{\pi_\theta(o_{i,t}\mid\cdot)}-1",
}
_KL_TERMS = (Term("beta", r"\beta", "How strongly drifting away from the reference model is penalised."),
             Term("kl", r"\mathbb{D}_{i,t}", "Per-token estimate of the KL divergence from the frozen reference model."),
             Term("ref", r"\pi_{\text{ref}}", "The reference model: the warm-started policy before RL, kept frozen."))

register("kl", "none", NoParams, "No KL term: nothing ties the policy to the reference model.", lambda p: "")
register("kl", "in_loss", KlParams,
         "A KL penalty subtracted from every token's objective (GRPO style).",
         lambda p: r"-\beta\,\mathbb{D}_{i,t},\quad \mathbb{D}_{i,t}=%s,\quad \beta=%s" % (_KL_LATEX[p["estimator"]], _fmt(p["beta"])),
         _KL_TERMS)
register("kl", "in_reward", KlParams,
         "A KL penalty folded into the per-token reward before advantages are computed (RLHF / PPO style).",
         lambda p: r"r_{i,t}=-\beta\,\mathbb{D}_{i,t}+[t=|o_i|]\,r_i,\quad \mathbb{D}_{i,t}=%s,\quad \beta=%s" % (_KL_LATEX[p["estimator"]], _fmt(p["beta"])),
         _KL_TERMS)

# --- aggregation -----------------------------------------------------------

class ConstantNormalizer(_Params):
    normalizer: int | None = Field(None, gt=0, description="The constant L; null means the run's generation budget (max new tokens).")


register("aggregation", "seq_mean_token_mean", NoParams,
         "Average over each response's tokens, then over responses: every response weighs the same.",
         lambda p: r"\frac{1}{G}\sum_{i=1}^{G}\frac{1}{|o_i|}\sum_{t=1}^{|o_i|}",
         (Term("length", r"|o_i|", "The response's length in tokens. Dividing by it gives each token of a short response more weight than one of a long response."),
          Term("G", r"G", "The number of responses sampled per prompt.")))
register("aggregation", "token_mean", NoParams,
         "One average over every token of the batch: every token weighs the same.",
         lambda p: r"\frac{1}{\sum_{i=1}^{G}|o_i|}\sum_{i=1}^{G}\sum_{t=1}^{|o_i|}",
         (Term("total_length", r"\sum_i|o_i|", "All response tokens together: each token weighs one over this, so long responses carry more of the total."),))
register("aggregation", "constant_normalizer", ConstantNormalizer,
         "Token objectives summed and divided by a constant: no length enters the weights.",
         lambda p: r"\frac{1}{G\,L}\sum_{i=1}^{G}\sum_{t=1}^{|o_i|},\quad L=%s" % (
             _fmt(p["normalizer"]) if p.get("normalizer") else r"\text{max new tokens}"),
         (Term("L", r"L", "A constant (the generation budget), the same for every response and every step."),
          Term("G", r"G", "The number of responses sampled per prompt.")),
         run_resolved=("normalizer",))
register("aggregation", "seq_mean_token_sum", NoParams,
         "Token objectives summed per response, then averaged over responses.",
         lambda p: r"\frac{1}{G}\sum_{i=1}^{G}\sum_{t=1}^{|o_i|}",
         (Term("G", r"G", "The number of responses sampled per prompt."),))

# --- filter ----------------------------------------------------------------

class DynamicSampling(_Params):
    max_rounds: int = Field(4, ge=1, description="At most this many sampling rounds to refill the batch with informative groups.")


register("filter", "none", NoParams, "Every sampled group is trained on.", lambda p: "")
register("filter", "dynamic_sampling", DynamicSampling,
         "Groups where every response is right, or every one wrong, are dropped and the batch is refilled.",
         lambda p: r"\text{s.t.}\ \ 0<\big|\{o_i : o_i\ \text{correct}\}\big|<G",
         (Term("filter", r"0<|\{\cdot\}|<G", "Keep a group only if some but not all of its responses are correct: otherwise every advantage is zero."),))

# --- shaping ---------------------------------------------------------------

class OverlongShaping(_Params):
    max_length: int | None = Field(None, gt=0, description="L_max; null means the run's generation budget.")
    cache_fraction: float = Field(0.2, gt=0, le=1, description="L_cache as a fraction of L_max (DAPO: 4,096 of 20,480, the expected 16,384 plus the cache).")
    cache_length: int | None = Field(None, gt=0, description="L_cache in tokens; filled from cache_fraction when null.")
    penalty: float = Field(1.0, gt=0, description="The penalty at L_max and beyond (DAPO: 1, against a correctness reward of +1/-1; 0.5 keeps that weight against a 1/0 reward).")


register("shaping", "none", NoParams, "The reward is used as it is.", lambda p: "")
register("shaping", "overlong", OverlongShaping,
         "A soft length penalty added to the reward as a response nears the generation budget.",
         lambda p: (r"R_{\text{length}}(y)=\begin{cases}0,&|y|\le L_{\max}-L_{\text{cache}}\\ %s\frac{(L_{\max}-L_{\text{cache}})-|y|}{L_{\text{cache}}},&L_{\max}-L_{\text{cache}}<|y|\le L_{\max}\\ -%s,&|y|>L_{\max}\end{cases}"
                    % ("" if p.get("penalty", 1.0) == 1 else _fmt(p["penalty"]) + r"\cdot", _fmt(p.get("penalty", 1.0)) if p.get("penalty", 1.0) != 1 else "1")),
         (Term("L_max", r"L_{\max}", "The generation budget."),
          Term("L_cache", r"L_{\text{cache}}", "The stretch before the budget over which the penalty ramps from 0 to its floor.")),
         run_resolved=("max_length", "cache_length"))


# ---------------------------------------------------------------------------
# The spec file
# ---------------------------------------------------------------------------

class Reference(BaseModel):
    model_config = ConfigDict(extra="forbid")
    arxiv: str | None = Field(None, pattern=r"^\d{4}\.\d{4,5}$")
    title: str
    authors: str
    year: int
    note: str | None = None


class ComponentSpec(BaseModel):
    """One slot of an algorithm: the kind, its parameters and the algorithm's own words on it."""

    model_config = ConfigDict(extra="forbid")
    kind: str
    params: dict[str, Any] = Field(default_factory=dict)
    explanation: str = Field(min_length=1, description="Plain language: what this choice does in this algorithm and why.")
    tooltips: dict[str, str] = Field(default_factory=dict, description="Overrides of the registry's term tooltips, by term key.")


class RunDefaults(BaseModel):
    """Training settings an algorithm asks for, over the preset's."""

    model_config = ConfigDict(extra="forbid")
    epochs: int | None = Field(None, ge=1)
    minibatches: int | None = Field(None, ge=1)
    lr: float | None = Field(None, gt=0)
    critic_lr: float | None = Field(None, gt=0)


class AlgorithmSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    name: str
    full_name: str
    year: int = Field(ge=1990, le=2100)
    paper: Reference
    predecessor: str | None = None
    summary: str = Field(min_length=1, description="One sentence: what the algorithm is.")
    changed: str = Field(min_length=1, description="A paragraph: what it changed relative to its predecessor, and why.")
    components: dict[str, ComponentSpec]
    defaults: RunDefaults = Field(default_factory=RunDefaults)
    references: list[Reference] = Field(default_factory=list)

    @model_validator(mode="after")
    def _components_are_registered(self) -> "AlgorithmSpec":
        problems = []
        missing = [s for s in SLOTS if s not in self.components]
        extra = [s for s in self.components if s not in SLOTS]
        if missing:
            problems.append(f"components: missing slot(s) {', '.join(missing)}")
        if extra:
            problems.append(f"components: unknown slot(s) {', '.join(extra)} (slots: {', '.join(SLOTS)})")
        for slot, comp in self.components.items():
            if slot not in REGISTRY:
                continue
            kinds = REGISTRY[slot]
            if comp.kind not in kinds:
                problems.append(f"components.{slot}.kind: unknown component {comp.kind!r} "
                                f"(known for {slot}: {', '.join(sorted(kinds))})")
                continue
            try:
                kinds[comp.kind].params.model_validate(comp.params)
            except ValidationError as err:
                for e in err.errors():
                    where = ".".join(str(x) for x in e["loc"])
                    if e["type"] == "extra_forbidden":
                        known = ", ".join(kinds[comp.kind].params.model_fields) or "none"
                        problems.append(f"components.{slot}.params.{where}: unknown parameter of "
                                        f"{comp.kind} (known: {known})")
                    else:
                        problems.append(f"components.{slot}.params.{where}: {e['msg']}")
            known_terms = {t.key for t in kinds[comp.kind].terms}
            for key in comp.tooltips:
                if key not in known_terms:
                    problems.append(f"components.{slot}.tooltips.{key}: {comp.kind} has no term {key!r} "
                                    f"(terms: {', '.join(sorted(known_terms)) or 'none'})")
        if not problems:
            problems += _cross_slot_problems(self.components)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def component(self, slot: str) -> Kind:
        return REGISTRY[slot][self.components[slot].kind]

    def params(self, slot: str) -> dict[str, Any]:
        """The slot's parameters with the registry's defaults filled in."""
        return self.component(slot).params.model_validate(self.components[slot].params).model_dump()

    def tooltip(self, slot: str, term: Term) -> str:
        return self.components[slot].tooltips.get(term.key, term.tooltip)


TOKEN_LEVEL_ADVANTAGES = {"gae", "reinforce_return", "whitened_return"}


def _cross_slot_problems(components: dict[str, ComponentSpec]) -> list[str]:
    """Combinations that validate slot by slot but cannot be trained as written."""
    problems = []
    if components["kl"].kind == "in_reward" and components["advantage"].kind not in TOKEN_LEVEL_ADVANTAGES:
        problems.append("components.kl.kind: in_reward puts the KL into per-token rewards, which only a "
                        f"token-level advantage uses ({', '.join(sorted(TOKEN_LEVEL_ADVANTAGES))}); "
                        f"{components['advantage'].kind} would ignore it (use in_loss)")
    if components["ratio"].kind == "none" and components["clip"].kind != "none":
        problems.append("components.clip.kind: with ratio 'none' the ratio is always 1, so clipping never acts "
                        "(use clip 'none')")
    return problems


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------

def _format_validation(path: Path, err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "value_error" and not loc:
            lines.extend(f"{path}: {part}" for part in msg.split("; "))
        elif e["type"] == "extra_forbidden":
            lines.append(f"{path}: {loc}: unknown field")
        else:
            lines.append(f"{path}: {loc}: {msg}")
    return "\n".join(lines)


def load_spec(path: str | Path) -> AlgorithmSpec:
    """Load and validate one spec file; SpecError names the file and every bad field."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"{path}: no such spec file") from None
    except yaml.YAMLError as err:
        raise SpecError(f"{path}: not valid YAML: {err}") from None
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: a spec is a mapping with id, name, components, ...")
    try:
        spec = AlgorithmSpec.model_validate(raw)
    except ValidationError as err:
        raise SpecError(_format_validation(path, err)) from None
    if spec.id != path.stem:
        raise SpecError(f"{path}: id: {spec.id!r} must match the file name {path.stem!r}")
    return spec


def load_specs(directory: str | Path = SPEC_DIR) -> dict[str, AlgorithmSpec]:
    """Every spec in a directory, by id; predecessors must name a spec that exists."""
    directory = Path(directory)
    specs = {}
    errors = []
    for path in sorted(directory.glob("*.yaml")):
        try:
            spec = load_spec(path)
        except SpecError as err:
            errors.append(str(err))
            continue
        specs[spec.id] = spec
    for spec in specs.values():
        if spec.predecessor is not None and spec.predecessor not in specs:
            errors.append(f"{directory / (spec.id + '.yaml')}: predecessor: no spec {spec.predecessor!r} "
                          f"in {directory}")
    if errors:
        raise SpecError("\n".join(errors))
    return specs


def lineage(specs: dict[str, AlgorithmSpec]) -> list[AlgorithmSpec]:
    """Specs ordered so each comes after its predecessor (then by year, then id)."""
    ordered, placed = [], set()
    remaining = sorted(specs.values(), key=lambda s: (s.year, s.id))
    while remaining:
        for spec in remaining:
            if spec.predecessor is None or spec.predecessor in placed or spec.predecessor not in specs:
                ordered.append(spec)
                placed.add(spec.id)
                remaining.remove(spec)
                break
    return ordered


def load_algorithm(name: str) -> AlgorithmSpec:
    """A spec by id (data/algorithms/<id>.yaml) or by the path of a spec file.

    Raises SpecError for a bad spec file and ValueError naming the known ids for an unknown one.
    """
    path = Path(name)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return load_spec(path)
    specs = load_specs(SPEC_DIR)
    if name in specs:
        return specs[name]
    for ablation in ablation_spec_paths(SPEC_DIR):
        if ablation.stem == name:
            return load_spec(ablation)
    raise ValueError(f"unknown algorithm {name!r} (known: {', '.join(sorted(specs))}; or give a spec file path)")


def ablation_spec_paths(directory: str | Path = SPEC_DIR) -> list[Path]:
    """Specs in subdirectories (data/algorithms/ladder: the ablation ladder's rungs).

    They train and validate like any spec but are not chapters of the course: load_specs, which
    lists the course's algorithms, reads the top-level directory only.
    """
    return sorted(Path(directory).glob("*/*.yaml"))


# ---------------------------------------------------------------------------
# Resolution: the concrete configuration a run trains with (copied into its log)
# ---------------------------------------------------------------------------

class ResolvedComponent(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    kind: str
    params: dict[str, Any] = Field(default_factory=dict)


class ResolvedAlgorithm(BaseModel):
    """What a run actually trained with: every slot's kind and concrete parameters."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    id: str
    name: str
    components: dict[str, ResolvedComponent]

    @model_validator(mode="after")
    def _registered(self) -> "ResolvedAlgorithm":
        problems = []
        for slot in SLOTS:
            if slot not in self.components:
                problems.append(f"components: missing slot {slot}")
                continue
            comp = self.components[slot]
            if comp.kind not in REGISTRY[slot]:
                problems.append(f"components.{slot}.kind: unknown component {comp.kind!r} "
                                f"(known for {slot}: {', '.join(sorted(REGISTRY[slot]))})")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def kind(self, slot: str) -> str:
        return self.components[slot].kind

    def param(self, slot: str, name: str, default: Any = None) -> Any:
        return self.components[slot].params.get(name, default)


def resolve(spec: AlgorithmSpec, *, max_new_tokens: int) -> ResolvedAlgorithm:
    """Fill the run-dependent parameters (normaliser, overlong lengths) from the run."""
    components = {}
    for slot in SLOTS:
        params = spec.params(slot)
        if slot == "aggregation" and spec.components[slot].kind == "constant_normalizer":
            params["normalizer"] = params["normalizer"] or max_new_tokens
        if slot == "shaping" and spec.components[slot].kind == "overlong":
            params["max_length"] = params["max_length"] or max_new_tokens
            if params["cache_length"] is None:
                params["cache_length"] = max(1, round(params["cache_fraction"] * params["max_length"]))
        components[slot] = ResolvedComponent(kind=spec.components[slot].kind, params=params)
    return ResolvedAlgorithm(id=spec.id, name=spec.name, components=components)
