"""The component registry: the single source of every kind of every slot of an objective.

An algorithm is a choice of one component per slot (advantage, ratio, clip, kl, aggregation,
filter, shaping, correction; a spec or a log may leave out the slots of ``OPTIONAL_SLOTS``). Each kind is registered here once, with everything the project needs of it:

- its **parameters** (a pydantic model: names, defaults, constraints, descriptions);
- its **implementation**: ``fn``, the function of ``unipo_build.core.components`` that computes it
  (the site links a formula to this function's file and line), and ``apply``, the call in the
  slot's convention (below) that ``unipo_build.core.objective`` dispatches through;
- its **properties**: a group-based baseline, needs a critic, where a KL term sits (and so
  whether a reference model is needed);
- its **formula pieces**: the TeX of its definition (``latex``), its terms with tooltips,
  an aggregation's per-token weight (``weight_tex``) and what that weight means;
- its **worked example** (``worked``): the arithmetic of one group, one token or one weight with
  logged numbers, as TeX lines (the anatomy page shows them; a clip kind's is
  ``worked(rho, advantage, bounds, params) -> (line, value)``);
- its **explainer data** (``explain``, made by :func:`explain`): what the Algorithm Explainer and
  the card beside a token in the Step Inspector show for it, the rows of its live table (a label,
  how the value is computed, the value and the logged field it is checked against) and the
  sentences that explain a token's numbers, as templates the browser fills from the token's log
  (unipo_build/site/views/explainer/explainer.js renders them and never asks for a kind by name). A kind without
  it cannot be explained, and the site build and ``unipo validate`` say so (:func:`explainer_problem`);
- its **settings in the trainers** (``trainers``, made by :func:`setting`, or given later by
  :func:`trainer_settings`): what selects it in TRL, verl, prime-rl and OpenRLHF (:data:`TRAINERS`), each
  read in that trainer's code (:data:`TRAINER_SOURCES`); the components reference shows them as one table. A
  kind no trainer ships has none and shows a dash in every column; an unknown trainer is refused in one line.
  What each trainer's code computes of it (``translators``: OpenRLHF's flags, verl's and TRL's parameters) is on
  the entry too, read through ``core/registry_trainers.py``: no module of unipo_build/trainers names a kind.

The kinds themselves are registered beside this module, each once: the slots that turn a
response's reward into an advantage (advantage, filter, shaping) in ``core/kinds_reward.py``, those of
the per-token objective (ratio, clip, kl, aggregation) in ``core/kinds_loss.py`` and those of the
rollout correction in ``core/kinds_correction.py``. This module holds
what every kind is made of and checked against: :class:`Kind`, :func:`register`, the explainer
data's builders (:func:`row`, :func:`say`, :func:`cases`, :func:`explain`) and the grammar of its
expressions. The kinds modules import it; ``unipo_build.core.registry`` imports it and them, so that
importing the registry registers the shipped kinds and no module imports one that imports it back.

Nothing else in the project branches on a kind's name: code asks the registry. Adding a kind is
one ``register(...)`` call in the kinds module of its slot and its function in ``core/components.py``.

Slot conventions of ``apply`` (arrays are numpy or torch; shapes as in ``components``):

========== ================================================================================
advantage  group kinds (``group_baseline``): ``apply(rewards (n_groups, G), params)``;
           token kinds: ``apply(token_rewards, mask, rewards, values, params) -> (adv, returns)``
ratio      ``apply(logp, old_logp, mask, params)`` -> ratio (B, T)
clip       ``apply(ratio, advantage, params)`` -> (surrogate, clip side) (B, T): the surrogate's form
           (``needs_mask``: ``apply(ratio, advantage, params, mask)``, a term that reads the whole response;
           ``needs_old_logp``: ``apply(ratio, advantage, params, old_logp=...)``, a term that reads the token's
           probability when it was sampled, DPPO's mask on its change);
           ``bounds(params)`` -> (eps_low, eps_high) of the ratio, (None, None) without bounds;
           ``clip_rule(params)`` -> :class:`ClipRule`, its bound in words (the diagnoses' terms)
kl         ``kl_place``: None, "loss" or "reward"; the estimator is a parameter
aggregation ``apply(mask, params)`` -> weights (B, T)
filter     ``apply(correct (n_groups, G), params)`` -> keep (n_groups,), None: keep every group;
           ``response_keep(truncated (B,), params)`` -> keep (B,): responses whose tokens stay in the loss
shaping    ``apply(lengths (B,), params)`` -> reward term (B,), None: no term
correction ``apply(old_logp, sampler_logp, mask, params)`` -> (weight, side) (B, T): the behaviour
           policy's weight on each token's surrogate (rollout correction), None: weight 1; it
           needs the sampler's log-probs (the token files' ``sample_logp``)
========== ================================================================================
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from unipo_build.core import limits
from unipo_build.core.registry_grammar import (  # noqa: F401  (re-exported: the registry's names)
    EXPLAIN_FUNCTIONS, EXPLAIN_ROOTS, _template_problem, expression_problem, placeholders)

SLOTS = ("advantage", "ratio", "clip", "kl", "aggregation", "filter", "shaping", "correction")
#: Slots added after the first run-log version, with the kind a spec or a log that leaves one out means
#: (a log of schema unipo-run/1 has no correction slot: its sampler was taken to be its learner).
OPTIONAL_SLOTS = {"correction": "none"}


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @field_validator("*")
    @classmethod
    def _in_range(cls, value: Any) -> Any:
        """Every parameter within the bounds the math carries (unipo_build.core.limits)."""
        if (problem := limits.number_problem(value)) is not None:
            raise ValueError(problem)
        return value


class NoParams(_Params):
    pass


@dataclass(frozen=True)
class Term:
    """One symbol of a component's formula with the tooltip a reader sees on hover."""

    key: str
    symbol: str
    tooltip: str


@dataclass(frozen=True)
class Kind:
    """One registered component kind of one slot (see the module docstring)."""

    slot: str
    name: str
    params: type[_Params]
    summary: str
    latex: Callable[[dict], str]
    terms: tuple[Term, ...] = ()
    # Which parameters the run fills in when the spec leaves them null (e.g. the
    # constant normaliser defaults to the run's generation budget).
    run_resolved: tuple[str, ...] = field(default=())
    fn: Callable | None = None
    apply: Callable | None = None
    # A clip kind's derivative of its term with respect to the token's log-probability, stop-gradients
    # counted: ``grad(ratio, advantage, params)`` on numpy arrays (objective.terms_and_gradients; the site
    # needs numpy only; ``grad(ratio, advantage, params, old_logp=...)`` for a ``needs_old_logp`` kind).
    # None for a kind whose term reads the whole response (``needs_mask``).
    grad: Callable | None = None
    bounds: Callable[[dict], tuple[float | None, float | None]] | None = None
    # A clip kind that only means something on these ratio kinds (CISPO weights each token's own
    # log-probability by that token's ratio); empty: any ratio. specs refuses another.
    ratio_kinds: tuple[str, ...] = ()
    # A clip kind whose term reads the whole response (GMPO's geometric mean of its token ratios): its
    # apply is ``apply(ratio, advantage, params, mask)``.
    needs_mask: bool = False
    # A clip kind whose term reads the token's log-probability when it was sampled, not only its ratio
    # (DPPO's mask on the change of the token's probability): its apply and grad take ``old_logp=`` (B, T).
    needs_old_logp: bool = False
    # A kind that means what it says only with these aggregation kinds (GMPO's geometric mean is one
    # term per response, averaged over responses: seq_mean_token_mean); empty: any. specs refuses another.
    aggregation_kinds: tuple[str, ...] = ()
    # A filter kind that also takes single responses out of the loss (masking truncated responses):
    # ``response_keep(truncated (B,), params) -> keep (B,)``; objective.weights gives a dropped response's
    # tokens weight 0, and the kind's ``count_masked`` parameter says whether the normaliser still counts it.
    response_keep: Callable | None = None
    group_baseline: bool = False
    needs_critic: bool = False
    kl_place: Literal["loss", "reward"] | None = None
    label: str = ""
    # A ratio kind's symbol as plain text (the browser's live card writes it without TeX).
    symbol_text: str = ""
    weight_tex: str = ""
    weight_meaning: str = ""
    # An aggregation whose token weight follows from counts alone (N responses, the response's
    # own length, a constant), and one whose tokens all weigh the same (recompute checks them).
    weights_from_counts: bool = False
    uniform_weights: bool = False
    worked: Callable[..., Any] | None = None
    # Fills the run_resolved parameters: resolve(params, max_new_tokens) -> params.
    resolve: Callable[[dict, int], dict] | None = None
    # What the browser says about the kind (explain(...)); compared and hashed by name, not by it.
    explain: dict | None = field(default=None, compare=False)
    # The setting that selects it in each trainer that ships it (``setting(...)``, :data:`TRAINERS`); empty:
    # no trainer ships it (the components reference shows a dash). ``trainer_settings`` sets them after register.
    trainers: tuple["Setting", ...] = field(default=(), compare=False)
    # What each trainer's code in unipo_build/trainers reads of the kind (``translators`` of :func:`trainer_settings`,
    # or register's ``translators={...}``): {trainer: function}. "openrlhf": the command builder's flags,
    # ``fn(params, cfg, max_new_tokens) -> Flags``; "verl", "trl": an importer's parameters of the kind its settings
    # select, ``fn(read) -> params`` with ``read(key, default)`` the trainer's config. None of them: the builder refuses
    # the kind in one line, an importer takes the parameters {} (core/registry_trainers.py; kinds_openrlhf.py).
    translators: dict = field(default_factory=dict, compare=False)
    # What the course's prose says of the kind where a chapter writes about it (``describe(...)``): {fact: function},
    # e.g. a correction's "bounds" (params -> 'a cap of 2 and no lower bound') and "tokens" (what it did to one
    # update's tokens), read by site/pages/dynamics/sampler_facts.py; a kind without one gets the slot's plain words.
    words: dict = field(default_factory=dict, compare=False)
    # A clip kind's bound in a reader's words and the ratio's numbers: ``clip_rule(params) -> ClipRule``. The
    # diagnoses ask their clipping questions in its terms (core/diagnose.py, through objective.clip_rule); None: a
    # kind that clips no token (no clip, SAPO's gate), or one that gives only its ``bounds`` (PPO's words then).
    clip_rule: Callable[[dict], "ClipRule"] | None = field(default=None, compare=False)
    # The trainers that write the kind's loss in its paper's form, not the registry's (CISPO's -sg(w) A log pi, whose
    # value is log pi times the kind's, the gradient the same; TRL with the weight's cap itself as epsilon_high):
    # their importers compare with it in that form (core/registry_trainers.py: paper_form_kind).
    paper_form: tuple[str, ...] = field(default=(), compare=False)

    @property
    def is_none(self) -> bool:
        """The empty choice of its slot: it adds nothing to the objective."""
        return self.name == "none"

    @property
    def needs_reference(self) -> bool:
        return self.kl_place is not None


@dataclass(frozen=True)
class ClipRule:
    """What a clip kind bounds, said as a reader reads it (a clip kind's ``clip_rule``): its name, where its bound
    sits, the ratio below which its low side and above which its high side act (None: no such side), the tokens
    each side counts (the logged clip/frac_low and clip/frac_high), and whether a counted token loses its gradient
    (PPO's clip) or keeps it, only its size capped (CISPO's weight)."""

    name: str  # "PPO's clip", "CISPO's cap on the importance weight", ...
    bound: str  # "the ratio's range [0.8, 1.2]", "the weight's cap at 5 (no lower bound)", ...
    low: float | None  # the ratio below which the low side acts; None: no low side
    high: float | None  # the ratio above which the high side acts; None: no high side
    low_side: str = ""  # the tokens the low side counts: "A < 0, ratio below 0.8"
    high_side: str = ""  # the tokens the high side counts: "A > 0, ratio above 1.2"
    silences: bool = True  # a counted token's gradient is 0; False: it flows, only its size is capped


REGISTRY: dict[str, dict[str, Kind]] = {slot: {} for slot in SLOTS}

#: The symbol the clip kinds' formulas are written with (formula.with_ratio rewrites them with the
#: algorithm's own ratio: GSPO clips its sequence ratio s_i, not a token's).
RATIO_TEX = r"\rho_{i,t}"
#: The sampling policy, as the KL in the reward is computed: at sampling time, a constant with no
#: gradient (the policy gradient reaches it only through the advantage).
OLD_POLICY_TEX = r"\pi_{\theta_{\text{old}}}"


def register(slot: str, name: str, params: type[_Params], summary: str, latex: Callable[[dict], str],
             terms: tuple[Term, ...] = (), run_resolved: tuple[str, ...] = (), **properties: Any) -> Kind:
    """Add a component kind (``properties``: the other fields of :class:`Kind`)."""
    if slot not in REGISTRY:
        raise ValueError(f"unknown slot {slot!r} (slots: {', '.join(SLOTS)})")
    if problem := (settings_problem(slot, name, properties.get("trainers", ()))
                   or translators_problem(slot, name, properties.get("translators", {}))):
        raise ValueError(problem)
    kind = Kind(slot, name, params, summary, latex, terms, run_resolved, **properties)
    REGISTRY[slot][name] = kind
    return kind


def kind(slot: str, name: str) -> Kind:
    """The registered kind, or a ValueError naming the known ones."""
    try:
        return REGISTRY[slot][name]
    except KeyError:
        known = ", ".join(sorted(REGISTRY.get(slot, {}))) or "none"
        raise ValueError(f"unknown {slot} component {name!r} (known: {known})") from None


@contextlib.contextmanager
def scoped() -> Iterator[dict[str, dict[str, Kind]]]:
    """Kinds registered inside the block are gone after it (tests, scaffolding previews)."""
    saved = copy.copy({slot: dict(kinds) for slot, kinds in REGISTRY.items()})
    try:
        yield REGISTRY
    finally:
        for slot in SLOTS:
            REGISTRY[slot].clear()
            REGISTRY[slot].update(saved[slot])



# --- each kind in the trainers ---------------------------------------------
#
# A kind's ``trainers``: the settings that select it in TRL, verl, prime-rl and OpenRLHF, each checked
# against that trainer's own code (TRAINER_SOURCES), and nothing for a trainer that does not ship it. The
# components reference renders them as one table (site/pages/guides/reference.py, trainer_settings_table);
# an importer whose trainer names a kind by one setting reads its table from here (trainer_values).

#: The trainers, in the table's order, with the name and version the reference shows.
TRAINERS = {"trl": "TRL 1.16", "verl": "verl", "prime-rl": "prime-rl", "openrlhf": "OpenRLHF 0.11.2"}
#: Where each trainer's settings were read (the reference prints it under the table).
TRAINER_SOURCES = {
    "trl": "trl 1.16.0: trl/trainer/grpo_config.py (GRPOConfig) and trl/trainer/grpo_trainer.py "
           "(_generate_and_score_completions, _compute_loss)",
    "verl": "verl at commit b178a3c: verl/trainer/ppo/core_algos.py (the advantage estimators, policy losses, "
            "agg_loss, kl_penalty), verl/trainer/ppo/rollout_corr_helper.py, verl/trainer/config/actor/actor.yaml, "
            "verl/trainer/config/ppo_trainer.yaml, verl/trainer/config/algorithm/rollout_correction.yaml, "
            "docs/algo/rollout_corr.md and docs/algo/dapo.md",
    "prime-rl": "prime-rl at commit 559b447: src/prime_rl/trainer/rl/loss.py and packages/prime-rl-configs "
                "(algorithm.py, trainer.py, orchestrator.py)",
    "openrlhf": "openrlhf 0.11.2: openrlhf/cli/train_ppo_ray.py (the flags), openrlhf/models/loss.py (PolicyLoss) "
                "and openrlhf/trainer/ppo_utils/experience_maker.py",
}


@dataclass(frozen=True)
class Setting:
    """One setting of one trainer: ``key`` as the trainer spells it and the ``value`` that selects the kind
    (None: the key alone, True for a flag), whether it is the trainer's ``default``, and a ``note`` (what else
    it takes, where it differs); a setting with no key is a note alone (prime-rl's ratio is always taken
    against the inference log-probs)."""

    trainer: str
    key: str = ""
    value: Any = None
    default: bool = False
    note: str = ""

    def text(self) -> str:
        """The setting as one types it: TRL a GRPOConfig argument, verl a Hydra override, prime-rl a TOML
        line, OpenRLHF a command-line flag."""
        if not self.key:
            return ""
        v = self.value
        if self.trainer == "openrlhf":
            return f"--{self.key}" + ("" if v is None or v is True else f" {v}")
        if v is None:
            return self.key
        if self.trainer == "trl":
            return f"{self.key}={v!r}" if not isinstance(v, str) else f'{self.key}="{v}"'
        if self.trainer == "prime-rl":
            shown = f'"{v}"' if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else repr(v)
            return f"{self.key} = {shown}"
        return f"{self.key}={str(v).lower() if isinstance(v, bool) else v}"


def setting(trainer: str, key: str = "", value: Any = None, *, default: bool = False, note: str = "") -> Setting:
    """A kind's setting in one trainer (see :class:`Setting`)."""
    return Setting(trainer, key, value, default, note)


def settings_problem(slot: str, name: str, settings: Any) -> str | None:
    """What is wrong with a kind's trainer settings, in one line naming the kind, or None."""
    where = f"{slot} kind {name!r}"
    if not isinstance(settings, (tuple, list)):
        return f"{where}: its trainer settings must be a tuple of setting(...), not {type(settings).__name__}"
    for s in settings:
        if not isinstance(s, Setting):
            return f"{where}: a trainer setting must be made by setting(trainer, key, value), not {s!r}"
        if s.trainer not in TRAINERS:
            return f"{where}: unknown trainer {s.trainer!r} in its trainer settings (known: {', '.join(TRAINERS)})"
        if not s.key and not s.note:
            return f"{where}: a {s.trainer} setting with neither a key nor a note"
    return None


def trainer_settings(slot: str, name: str, *settings: Setting, **translators: Callable) -> Kind:
    """Give the registered kind its settings in the trainers (replacing any it had), and with ``translators``
    (``openrlhf=fn``, ``verl=fn``, ``trl=fn``, ``prime_rl=fn``: :attr:`Kind.translators`) what each trainer's
    code reads of it, added to those it had."""
    k = kind(slot, name)
    if problem := settings_problem(slot, name, settings) or translators_problem(slot, name, translators):
        raise ValueError(problem)
    joined = {**k.translators, **{t.replace("_", "-"): fn for t, fn in translators.items()}}
    REGISTRY[slot][name] = k = dataclasses.replace(k, trainers=tuple(settings) if settings else k.trainers,
                                                   translators=joined)
    return k


def describe(slot: str, name: str, **words: Callable) -> Kind:
    """Give the registered kind the course's words for it (:attr:`Kind.words`), added to those it had."""
    k = kind(slot, name)
    REGISTRY[slot][name] = k = dataclasses.replace(k, words={**k.words, **words})
    return k


def translators_problem(slot: str, name: str, translators: Any) -> str | None:
    """What is wrong with a kind's translators, in one line naming the kind, or None."""
    if not isinstance(translators, dict):
        return f"{slot} kind {name!r}: its translators must be a dict of trainer: function"
    for trainer, fn in translators.items():
        if trainer.replace("_", "-") not in TRAINERS:
            return (f"{slot} kind {name!r}: unknown trainer {trainer!r} among its translators "
                    f"(known: {', '.join(TRAINERS)})")
        if not callable(fn):
            return f"{slot} kind {name!r}: its {trainer} translator is not a function"
    return None


def settings_of(k: Kind, trainer: str) -> tuple[Setting, ...]:
    """The kind's settings in ``trainer`` (empty: the trainer does not ship it)."""
    return tuple(s for s in k.trainers if s.trainer == trainer)


def trainer_values(trainer: str, key: str, slot: str) -> dict[Any, str]:
    """{value of ``key`` in ``trainer``: the kind of ``slot`` it selects}, from the kinds' settings (an
    importer's table of a trainer's names: verl's loss_agg_mode)."""
    return {s.value: k.name for k in REGISTRY[slot].values() for s in settings_of(k, trainer) if s.key == key}


# --- what the browser says about a kind ------------------------------------
#
# The Algorithm Explainer (unipo_build/site/views/explainer/explainer.js) shows a selected token's numbers slot by
# slot. What it shows for a kind is data, sent to the browser with the run's configuration
# (objective.browser_config): a list of items, each a row of the slot's live table or a sentence.
# Texts are templates: ``{expression}`` is replaced by the expression's value (a number as the
# site writes numbers, ``raw(x)`` as it is, ``fmtq(x)`` as a quantity whose rounding noise reads
# 0*); a text may instead be ``cases(...)``, the first text whose condition holds. Expressions
# read the token's log and what the browser recomputes from it, through these names only:
#
# ============== ==============================================================================
# token.F        the selected token's logged field F (logp, old_logp, ref_logp, advantage, kl,
#                value, return, weight, clip, ...); null when the log has none
# calc.F         recomputed by the browser's math port: the token's ratio, surrogate, clip_side,
#                kl, objective (and the clip's eps_low, eps_high); advantage (a group kind's, from
#                the group's rewards), weight (the aggregation's, from counts), shaping (the
#                response's reward term)
# response.F     the token's response as logged (reward, length, contribution, reward_components)
# group.F        its group: rewards (list), size, n_correct, and what the log holds of it
# step.F         the update as logged (objective, filtered_groups, ...)
# update.F       responses (N, the responses of the update), groups
# length         the response's length in tokens
# params.F       the kind's parameters (the registry's defaults where the log has none)
# counts.F       an aggregation's counts: responses, length, and those its ``counts`` reads
# ratio_symbol   the algorithm's ratio as plain text (ρ, or GSPO's sᵢ)
# ============== ==============================================================================
#
# with numbers, 'strings', null, true, false, + - * /, comparisons, && || !, a ? b : c, and the functions of
# EXPLAIN_FUNCTIONS (the grammar and its reader: core/registry_grammar.py).

#: The row each slot's kinds must show (the card beside a token and the tests read it by key).
EXPLAIN_REQUIRED_ROW = {"ratio": "ratio", "advantage": "advantage", "clip": "surrogate", "aggregation": "weight"}
_ITEM_KEYS = {"row": {"row", "how", "value", "text", "key", "check", "when"}, "say": {"say", "when", "class"}}


def row(label: Any, how: Any = "", value: str | None = None, *, key: str | None = None, check: str | None = None,
        when: str | None = None, text: Any = None) -> dict:
    """A row of a live table: ``label`` and ``how`` (templates), its ``value`` (an expression) or
    ``text`` (a template), ``key`` (the quantity, data-key in the page), ``check`` (the logged value it is
    checked against: the row then says whether the log agrees) and ``when`` (shown only when it holds)."""
    out = {"row": label, "how": how, "value": value, "text": text, "key": key, "check": check, "when": when}
    return {k: v for k, v in out.items() if v is not None}


def say(text: Any, *, when: str | None = None, cls: str | None = None) -> dict:
    """A sentence about the token's numbers (a template), shown when ``when`` holds."""
    out = {"say": text, "when": when, "class": cls}
    return {k: v for k, v in out.items() if v is not None}


def cases(*pairs: tuple[str | None, str]) -> list[dict]:
    """A text chosen by condition: the first (condition, template) whose condition holds; None: otherwise."""
    return [{"when": w, "text": t} if w is not None else {"text": t} for w, t in pairs]


def explain(*items: dict, counts: dict[str, str] | None = None) -> dict:
    """A kind's explainer data: its items in order (rows and sentences); an aggregation's ``counts``
    names the counts its weight needs beyond N and the length, each an expression (token_mean reads
    the update's token count from the logged weight)."""
    out: dict[str, Any] = {"items": list(items)}
    if counts:
        out["counts"] = dict(counts)
    return out


def explainer_problem(k: Kind) -> str | None:
    """Why the browser cannot explain ``k``, in one line naming the kind and what is missing; None
    when its explainer data is complete."""
    where = f"{k.slot} kind {k.name!r}"
    data = k.explain
    if data is None:
        return (f"{where} has no explainer data: give its register() call explain=explain(...) with the rows and "
                "sentences the Algorithm Explainer shows for it (docs/guides/contribute.md, section 1, 'The kind')")
    items = data.get("items") if isinstance(data, dict) else None
    if not items:
        return f"{where}: its explainer data has no items (rows or sentences) to show"
    keys = set()
    for n, item in enumerate(items, 1):
        sort = "row" if "row" in item else "say" if "say" in item else None
        if sort is None:
            return f"{where}: explainer item {n} is neither a row() nor a say()"
        if extra := set(item) - _ITEM_KEYS[sort]:
            return f"{where}: explainer item {n} has unknown fields {', '.join(sorted(extra))}"
        if sort == "row" and "value" not in item and "text" not in item:
            return f"{where}: explainer row {n} ({item['row']!r}) has neither a value nor a text"
        keys.add(item.get("key"))
        for field_ in ("value", "check", "when"):
            if field_ in item and (problem := expression_problem(item[field_])):
                return f"{where}: explainer item {n} {field_}: {problem}"
        for field_ in ("row", "how", "text", "say"):
            if field_ in item and (problem := _template_problem(item[field_])):
                return f"{where}: explainer item {n} {field_}: {problem}"
    for name, expr in (data.get("counts") or {}).items():
        if problem := expression_problem(expr):
            return f"{where}: explainer counts {name}: {problem}"
    need = EXPLAIN_REQUIRED_ROW.get(k.slot)
    if need and need not in keys:
        return f"{where}: its explainer data has no row with key {need!r} (every {k.slot} kind shows one)"
    return None


def check_explainable() -> None:
    """Every registered kind can be explained in the browser, or a ValueError with the first one-line problem."""
    for slot in SLOTS:
        for k in REGISTRY[slot].values():
            if problem := explainer_problem(k):
                raise ValueError(problem)


def explainer_data(k: Kind) -> dict | None:
    """The kind's explainer data as the browser reads it: its items and counts, the kind's name and
    label, and its parameters' defaults (for a log that leaves one out)."""
    if k.explain is None:
        return None
    defaults = {name: f.default for name, f in k.params.model_fields.items() if not f.is_required()}
    return {**k.explain, "kind": k.name, "defaults": defaults}
