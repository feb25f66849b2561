"""The component registry: the single source of every kind of every slot of an objective.

An algorithm is a choice of one component per slot (advantage, ratio, clip, kl, aggregation,
filter, shaping). Each kind is registered here once, with everything the project needs of it:

- its **parameters** (a pydantic model: names, defaults, constraints, descriptions);
- its **implementation**: ``fn``, the function of ``unipo_build.components`` that computes it
  (the site links a formula to this function's file and line), and ``apply``, the call in the
  slot's convention (below) that ``unipo_build.objective`` dispatches through;
- its **properties**: a group-based baseline, needs a critic, where a KL term sits (and so
  whether a reference model is needed);
- its **formula pieces**: the TeX of its definition (``latex``), its terms with tooltips,
  an aggregation's per-token weight (``weight_tex``) and what that weight means;
- its **worked example** (``worked``): the arithmetic of one group, one token or one weight with
  logged numbers, as TeX lines (the anatomy page shows them);
- its **explainer data** (``explain``, made by :func:`explain`): what the Algorithm Explainer and
  the card beside a token in the Step Inspector show for it, the rows of its live table (a label,
  how the value is computed, the value and the logged field it is checked against) and the
  sentences that explain a token's numbers, as templates the browser fills from the token's log
  (overrides/assets/explainer.js renders them and never asks for a kind by name). A kind without
  it cannot be explained, and the site build and ``unipo validate`` say so (:func:`explainer_problem`).

Nothing else in the project branches on a kind's name: code asks the registry. Adding a kind is
one ``register(...)`` call here and its function in ``components.py``.

Slot conventions of ``apply`` (arrays are numpy or torch; shapes as in ``components``):

========== ================================================================================
advantage  group kinds (``group_baseline``): ``apply(rewards (n_groups, G), params)``;
           token kinds: ``apply(token_rewards, mask, rewards, values, params) -> (adv, returns)``
ratio      ``apply(logp, old_logp, mask, params)`` -> ratio (B, T)
clip       ``bounds(params)`` -> (eps_low, eps_high), (None, None) without clipping
kl         ``kl_place``: None, "loss" or "reward"; the estimator is a parameter
aggregation ``apply(mask, params)`` -> weights (B, T)
filter     ``apply(correct (n_groups, G), params)`` -> keep (n_groups,), None: keep every group
shaping    ``apply(lengths (B,), params)`` -> reward term (B,), None: no term
========== ================================================================================
"""

from __future__ import annotations

import contextlib
import copy
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from . import components as C
from . import limits
from .numbers import param_text, tex_fraction, tex_num

SLOTS = ("advantage", "ratio", "clip", "kl", "aggregation", "filter", "shaping")


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @field_validator("*")
    @classmethod
    def _in_range(cls, value: Any) -> Any:
        """Every parameter within the bounds the math carries (unipo_build.limits)."""
        if (problem := limits.number_problem(value)) is not None:
            raise ValueError(problem)
        return value


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
    bounds: Callable[[dict], tuple[float | None, float | None]] | None = None
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

    @property
    def is_none(self) -> bool:
        """The empty choice of its slot: it adds nothing to the objective."""
        return self.name == "none"

    @property
    def needs_reference(self) -> bool:
        return self.kl_place is not None


REGISTRY: dict[str, dict[str, Kind]] = {slot: {} for slot in SLOTS}


def register(slot: str, name: str, params: type[_Params], summary: str, latex: Callable[[dict], str],
             terms: tuple[Term, ...] = (), run_resolved: tuple[str, ...] = (), **properties: Any) -> Kind:
    """Add a component kind (``properties``: the other fields of :class:`Kind`)."""
    if slot not in REGISTRY:
        raise ValueError(f"unknown slot {slot!r} (slots: {', '.join(SLOTS)})")
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


_fmt = param_text


# --- what the browser says about a kind ------------------------------------
#
# The Algorithm Explainer (overrides/assets/explainer.js) shows a selected token's numbers slot by
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
# with numbers, 'strings', null, true, false, + - * /, comparisons, && || !, a ? b : c, and the functions below.

#: The names an explainer expression may start with, and the functions it may call.
EXPLAIN_ROOTS = ("token", "calc", "response", "group", "step", "update", "length", "params", "counts",
                 "ratio_symbol")
EXPLAIN_FUNCTIONS = ("mean", "std", "min", "max", "sum", "round", "count", "has", "raw", "fmtq", "nums", "join")
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


_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)|(?P<str>'(?:[^'\\]|\\.)*')"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?P<call>\s*\()?"
    r"|(?P<op>==|!=|<=|>=|&&|\|\||[-+*/<>!?:(),]))")


class _Unreadable(ValueError):
    pass


def _tokens(expr: str) -> list[tuple[str, str]]:
    """(sort, text) of each token: num, str, name, call (a function's name and its '('), op."""
    out, pos = [], 0
    while expr[pos:].strip():
        m = _TOKEN.match(expr, pos)
        if m is None or m.end() == pos:
            raise _Unreadable(f"cannot read {expr[pos:].strip()[:20]!r} in {expr!r}")
        pos = m.end()
        if m.group("name"):
            out.append(("call" if m.group("call") else "name", m.group("name")))
        else:
            sort = next(k for k in ("num", "str", "op") if m.group(k) is not None)
            out.append((sort, m.group(sort)))
    return out


def _parse(expr: str, toks: list[tuple[str, str]]) -> None:
    """Reads ``toks`` with the grammar explainer.js evaluates (``evaluate``), or raises _Unreadable."""
    at = 0

    def peek(*ops: str) -> bool:
        return at < len(toks) and toks[at][0] == "op" and toks[at][1] in ops

    def take(op: str) -> None:
        nonlocal at
        if not peek(op):
            found = toks[at][1] if at < len(toks) else "the end"
            raise _Unreadable(f"expected {op!r}, found {found!r} in {expr!r}")
        at += 1

    def primary() -> None:
        nonlocal at
        if at >= len(toks):
            raise _Unreadable(f"the expression ends too soon: {expr!r}")
        sort, text = toks[at]
        at += 1
        if sort in ("num", "str", "name"):
            return
        if sort == "call":
            while not peek(")"):
                ternary()
                if not peek(")"):
                    take(",")
            take(")")
        elif text == "(":
            ternary()
            take(")")
        elif text in ("-", "!"):
            primary()
        else:
            raise _Unreadable(f"unexpected {text!r} in {expr!r}")

    def binary(operand: Callable[[], None], *ops: str, once: bool = False) -> Callable[[], None]:
        def read() -> None:
            nonlocal at
            operand()
            while peek(*ops):
                at += 1
                operand()
                if once:
                    break
        return read

    product = binary(primary, "*", "/")
    total = binary(product, "+", "-")
    comparison = binary(total, "==", "!=", "<", "<=", ">", ">=", once=True)
    disjunction = binary(binary(comparison, "&&"), "||")

    def ternary() -> None:
        nonlocal at
        disjunction()
        if peek("?"):
            at += 1
            ternary()
            take(":")
            ternary()

    ternary()
    if at < len(toks):
        raise _Unreadable(f"unexpected {toks[at][1]!r} in {expr!r}")


def expression_problem(expr: str) -> str | None:
    """What is wrong with an explainer expression (a name or function the browser does not know,
    something its grammar cannot read), or None."""
    try:
        toks = _tokens(expr)
        _parse(expr, toks)
    except _Unreadable as err:
        return str(err)
    for sort, name in toks:
        if sort == "call" and name not in EXPLAIN_FUNCTIONS:
            return f"unknown function {name!r} in {expr!r} (known: {', '.join(EXPLAIN_FUNCTIONS)})"
        if sort == "name" and name.split(".")[0] not in EXPLAIN_ROOTS and name not in ("null", "true", "false"):
            return f"unknown name {name!r} in {expr!r} (names start with {', '.join(EXPLAIN_ROOTS)})"
    return None


def placeholders(template: str) -> list[str] | str:
    """The expressions of a template's ``{...}`` placeholders, or what is wrong with its braces."""
    out, i = [], 0
    while i < len(template):
        if template[i] == "}":
            return f"a '}}' without its '{{' in {template!r}"
        if template[i] != "{":
            i += 1
            continue
        depth, j, quote = 1, i + 1, False
        while j < len(template) and depth:
            c = template[j]
            if quote:
                quote = c != "'" or template[j - 1] == "\\"
            elif c == "'":
                quote = True
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            j += 1
        if depth:
            return f"a '{{' without its '}}' in {template!r}"
        out.append(template[i + 1:j - 1])
        i = j
    return out


def _template_problem(template: Any) -> str | None:
    if isinstance(template, list):
        for case in template:
            if not isinstance(case, dict) or not isinstance(case.get("text"), str):
                return "a case without its text"
            problem = (expression_problem(case["when"]) if "when" in case else None) or _template_problem(case["text"])
            if problem:
                return problem
        return None if template else "cases() with no case"
    if not isinstance(template, str):
        return f"a text that is not a template: {template!r}"
    found = placeholders(template)
    if isinstance(found, str):
        return found
    for expr in found:
        if problem := expression_problem(expr):
            return problem
    return None


def explainer_problem(k: Kind) -> str | None:
    """Why the browser cannot explain ``k``, in one line naming the kind and what is missing; None
    when its explainer data is complete."""
    where = f"{k.slot} kind {k.name!r}"
    data = k.explain
    if data is None:
        return (f"{where} has no explainer data: give its register() call explain=explain(...) with the rows and "
                "sentences the Algorithm Explainer shows for it (docs/guides/contribute.md, step 3)")
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
_MEAN = Term("mean", r"\operatorname{mean}", "The average reward of the G responses to the same prompt: the baseline.")


def _distinct(rewards: list[float], advantages: list[float]) -> list[tuple[float, float, int]]:
    """(reward, advantage, count) per distinct reward, in order of first appearance."""
    out: list[tuple[float, float, int]] = []
    for r, a in zip(rewards, advantages):
        if r not in [d[0] for d in out]:
            out.append((r, a, rewards.count(r)))
    return out


def _mean_line(rewards: list[float]) -> str:
    mean = sum(rewards) / len(rewards)
    return (r"\operatorname{mean}(r)=\frac{" + "+".join(tex_num(r) for r in rewards) + "}{" + str(len(rewards))
            + "}=" + tex_num(mean))


def _zscore_worked(rewards: list[float], advantages: list[float], params: dict) -> list[str]:
    G, ddof, eps = len(rewards), int(params.get("std_ddof", 1)), float(params.get("eps", 1e-6))
    mean = sum(rewards) / G
    spread = (sum((r - mean) ** 2 for r in rewards) / (G - ddof)) ** 0.5 if G > ddof else 0.0
    terms = "+".join(f"{c}\\,({tex_num(r)}-{tex_num(mean)})^2" for r, _, c in _distinct(rewards, advantages))
    lines = [_mean_line(rewards), r"\operatorname{std}_{" + ("n-1" if ddof == 1 else "n") + r"}(r)=\sqrt{\frac{"
             + terms + "}{" + str(G - ddof) + "}}=" + tex_num(spread)]
    if spread == 0:
        return lines + [r"\hat{A}=0\quad\text{for every response: all rewards are equal, so there is nothing to compare}"]
    for r, a, _ in _distinct(rewards, advantages):
        lines.append(r"\hat{A}_{r=" + tex_num(r) + r"}=\frac{" + tex_num(r) + "-" + tex_num(mean) + "}{"
                     + tex_num(spread) + "+" + tex_num(eps) + "}=" + tex_num(a))
    return lines


def _mean_worked(rewards: list[float], advantages: list[float], params: dict) -> list[str]:
    mean = sum(rewards) / len(rewards)
    return [_mean_line(rewards)] + [r"\hat{A}_{r=" + tex_num(r) + "}=" + tex_num(r) + "-" + tex_num(mean) + "="
                                    + tex_num(a) for r, a, _ in _distinct(rewards, advantages)]


def _loo_worked(rewards: list[float], advantages: list[float], params: dict) -> list[str]:
    G, total = len(rewards), sum(rewards)
    return [r"\textstyle\sum_j r_j=" + tex_num(total)] + [
        r"\hat{A}_{r=" + tex_num(r) + "}=" + tex_num(r) + r"-\frac{" + tex_num(total) + "-" + tex_num(r) + "}{"
        + str(G - 1) + "}=" + tex_num(a) for r, a, _ in _distinct(rewards, advantages)]


# What the Explainer shows of a group kind: the group's rewards and its mean, then the kind's rows.
_GROUP_REWARDS = (say("Rewards of the group's {raw(group.size)} responses: {nums(group.rewards)} (this response: "
                      "{response.reward})."),
                  row("mean of the group", "baseline", "mean(group.rewards)", key="reward_mean"))
_STD = "std(group.rewards, params.std_ddof)"

register("advantage", "group_zscore", ZScoreParams,
         "Each reward minus its group's mean, divided by the group's standard deviation.",
         lambda p: r"\hat{A}_{i,t}=\frac{r_i-\operatorname{mean}(\{r_j\}_{j=1}^{G})}{\operatorname{std}_{%s}(\{r_j\}_{j=1}^{G})+\epsilon}"
         % ("n-1" if p["std_ddof"] == 1 else "n"),
         (_A, _R, _MEAN,
          Term("std", r"\operatorname{std}", "The spread of rewards in the group. Dividing by it makes near-solved and near-hopeless prompts count as much as 50/50 ones.")),
         fn=C.group_zscore_advantage, group_baseline=True, label="group z-score", worked=_zscore_worked,
         explain=explain(
             *_GROUP_REWARDS,
             row("std of the group", cases(("params.std_ddof == 1", "sample std (divides by n − 1 = {raw(group.size - 1)})"),
                                           (None, "population std (divides by n = {raw(group.size)})")),
                 _STD, key="reward_std"),
             row("ε", "added to the std", "params.eps", key="eps"),
             row("advantage Â", cases(("max(group.rewards) == min(group.rewards)", "every reward is equal: 0 for the whole group"),
                                      (None, "(rᵢ − mean) / (std + ε) = ({response.reward} − {mean(group.rewards)}) / "
                                             "({" + _STD + "} + {params.eps})")),
                 "calc.advantage", key="advantage", check="token.advantage")),
         apply=lambda rewards, p: C.group_zscore_advantage(rewards, std_ddof=p.get("std_ddof", 1), eps=p.get("eps", 1e-6)))
register("advantage", "group_mean", NoParams,
         "Each reward minus its group's mean; no division by the spread.",
         lambda p: r"\hat{A}_{i,t}=r_i-\operatorname{mean}(\{r_j\}_{j=1}^{G})",
         (_A, _R, _MEAN),
         fn=C.group_mean_advantage, group_baseline=True, label="group mean", worked=_mean_worked,
         explain=explain(*_GROUP_REWARDS,
                         row("advantage Â", "rᵢ − mean = {response.reward} − {mean(group.rewards)}", "calc.advantage",
                             key="advantage", check="token.advantage")),
         apply=lambda rewards, p: C.group_mean_advantage(rewards))
register("advantage", "leave_one_out", NoParams,
         "Each reward minus the mean reward of the other responses to the same prompt.",
         lambda p: r"\hat{A}_{i,t}=r_i-\frac{1}{G-1}\sum_{j\neq i}r_j",
         (_A, _R),
         fn=C.leave_one_out_advantage, group_baseline=True, label="leave-one-out baseline", worked=_loo_worked,
         explain=explain(*_GROUP_REWARDS,
                         row("advantage Â", "rᵢ − mean of the other {raw(group.size - 1)} rewards", "calc.advantage",
                             key="advantage", check="token.advantage")),
         apply=lambda rewards, p: C.leave_one_out_advantage(rewards))


def _gae(token_rewards, mask, rewards, values, p):
    if values is None:
        raise ValueError("GAE needs the critic's values")
    return C.gae_advantage(token_rewards, values, mask, gamma=p.get("gamma", 1.0), lam=p.get("lam", 0.95))


def _reinforce_return(token_rewards, mask, rewards, values, p):
    from array_api_compat import array_namespace

    returns = C.reward_to_go(token_rewards, mask, gamma=p.get("gamma", 1.0))
    if p.get("baseline", "batch_mean") == "batch_mean":
        return (returns - array_namespace(rewards).mean(rewards)) * mask, returns
    return returns, returns


def _whitened_return(token_rewards, mask, rewards, values, p):
    returns = C.reward_to_go(token_rewards, mask, gamma=p.get("gamma", 1.0))
    return C.batch_whiten(returns, mask, eps=p.get("eps", 1e-6)), returns


register("advantage", "gae", GaeParams,
         "Generalised advantage estimation from per-token rewards and a learned critic V.",
         lambda p: r"\hat{A}_{i,t}=\sum_{l\ge 0}(\gamma\lambda)^{l}\,\delta_{i,t+l},\quad \delta_{i,t}=r_{i,t}+\gamma V(s_{t+1})-V(s_t),\quad \gamma=%s,\ \lambda=%s"
         % (_fmt(p["gamma"]), _fmt(p["lam"])),
         (_A, Term("delta", r"\delta_{i,t}", "The temporal-difference error: what the critic did not predict at this token."),
          Term("value", r"V(s_t)", "The critic's estimate of the reward still to come from this token on."),
          Term("gamma", r"\gamma", "Discount per token (1: a reward at the end counts fully for every token)."),
          Term("lambda", r"\lambda", "Trades bias (small) against variance (large) in the advantage.")),
         fn=C.gae_advantage, needs_critic=True, label="critic (GAE)", apply=_gae,
         explain=explain(
             row("reward rᵢ", "on the last token (plus −β·KL on every token)", "response.reward", key="reward"),
             row("critic value V(sₜ)", "the critic's prediction at this token", "token.value", key="value",
                 when="has(token.value)"),
             row("return Rₜ", "the λ-return, the critic's target", "token.return", key="return", when="has(token.return)"),
             row("advantage Â", "Rₜ − V(sₜ) (GAE, γ {params.gamma}, λ {params.lam})", "token.return - token.value",
                 key="advantage", check="token.advantage", when="has(token.value) && has(token.return)"),
             row("advantage Â", "as logged", "token.advantage", key="advantage",
                 when="!(has(token.value) && has(token.return))")))
register("advantage", "reinforce_return", ReturnParams,
         "The reward to go, minus a batch-wide baseline (or none).",
         lambda p: r"\hat{A}_{i,t}=\sum_{t'\ge t}\gamma^{t'-t}r_{i,t'}%s" % (
             r"-\operatorname{mean}_{\text{batch}}(r)" if p["baseline"] == "batch_mean" else ""),
         (_A, Term("return", r"r_{i,t'}", "Per-token reward: the answer's reward sits on the last token; a KL penalty, if any, on every token."),
          Term("baseline", r"\operatorname{mean}_{\text{batch}}", "One baseline for the whole batch, shared by every prompt: easy and hard prompts are judged against the same bar.")),
         fn=C.reward_to_go, label="batch baseline", apply=_reinforce_return,
         explain=explain(
             row("reward rᵢ", "the response's reward", "response.reward", key="reward"),
             row("return Gₜ", "reward to go from this token", "token.return", key="return", when="has(token.return)"),
             row("baseline", cases(("params.baseline == 'batch_mean'", "mean reward of the batch (Gₜ − Â)"), (None, "none")),
                 "token.return - token.advantage", key="baseline", when="has(token.return)"),
             row("advantage Â", "Gₜ − baseline", "token.advantage", key="advantage")))
register("advantage", "whitened_return", WhitenParams,
         "The reward to go, whitened over the whole batch (REINFORCE++).",
         lambda p: r"\hat{A}_{i,t}=\frac{G_{i,t}-\operatorname{mean}_{\text{batch}}(G)}{\operatorname{std}_{\text{batch}}(G)}",
         (_A, Term("return", r"G_{i,t}", "The reward to go from token t."),),
         fn=C.batch_whiten, label="batch-whitened return", apply=_whitened_return,
         explain=explain(
             row("return Gₜ", "reward to go from this token", "token.return", key="return", when="has(token.return)"),
             row("advantage Â", "whitened over the batch", "token.advantage", key="advantage")))

# --- ratio -----------------------------------------------------------------

# The Explainer's rows of a ratio taken against the sampling policy: the two log-probabilities.
_LOGPS = (row("log πθ(token)", "the policy being trained, at this update", "token.logp", key="logp"),
          row("log πold(token)", "the policy that sampled it", "token.old_logp", key="old_logp"))

register("ratio", "token", NoParams,
         "The token's probability under the current policy over its probability when it was sampled.",
         lambda p: r"\rho_{i,t}=\frac{\pi_\theta(o_{i,t}\mid q,o_{i,<t})}{\pi_{\theta_{\text{old}}}(o_{i,t}\mid q,o_{i,<t})}",
         (Term("ratio", r"\rho_{i,t}", "Importance ratio: above 1 the update has already made this token more likely than when it was sampled, below 1 less likely."),
          Term("policy", r"\pi_\theta", "The policy being trained."),
          Term("old_policy", r"\pi_{\theta_{\text{old}}}", "The policy that sampled the responses (frozen during this rollout's updates).")),
         fn=C.token_ratio, apply=lambda logp, old_logp, mask, p: C.token_ratio(logp, old_logp), symbol_text="\u03c1",
         worked=lambda logp, old_logp, rho: (r"\rho=\exp\big(" + tex_num(logp) + "-(" + tex_num(old_logp)
                                              + r")\big)=" + tex_num(rho, 5)), label="per-token ratio",
         explain=explain(*_LOGPS, row("ratio ρ", "exp(log πθ − log πold)", "calc.ratio", key="ratio", check="token.ratio")))
register("ratio", "sequence", NoParams,
         "One ratio per response: the geometric mean of its token ratios (GSPO).",
         lambda p: r"s_{i}=\left(\frac{\pi_\theta(o_i\mid q)}{\pi_{\theta_{\text{old}}}(o_i\mid q)}\right)^{1/|o_i|}",
         (Term("ratio", r"s_i", "Sequence ratio: the length-normalised likelihood ratio of the whole response, shared by all its tokens."),),
         fn=C.sequence_ratio, apply=lambda logp, old_logp, mask, p: C.sequence_ratio(logp, old_logp, mask),
         symbol_text="s\u1d62",
         worked=lambda logp, old_logp, rho: r"s_i=" + tex_num(rho, 5) + r"\ \text{(the whole response's ratio)}", label="sequence ratio (one per response)",
         explain=explain(*_LOGPS, row("sequence ratio sᵢ", "exp(mean over the {raw(length)} tokens of log πθ − log πold)",
                                      "calc.ratio", key="ratio")))
register("ratio", "none", NoParams,
         "No importance ratio: the plain score-function (REINFORCE) objective, one update per sample.",
         lambda p: r"\rho_{i,t}=\frac{\pi_\theta(o_{i,t}\mid q,o_{i,<t})}{\operatorname{sg}[\pi_\theta(o_{i,t}\mid q,o_{i,<t})]}=1",
         (Term("ratio", r"\rho_{i,t}", "Always 1 in value; its gradient is that of log pi, so rho A has the REINFORCE gradient A grad log pi."),
          Term("sg", r"\operatorname{sg}", "Stop-gradient: treated as a constant when differentiating.")),
         fn=C.self_ratio, apply=lambda logp, old_logp, mask, p: C.self_ratio(logp), symbol_text="\u03c1",
         worked=lambda logp, old_logp, rho: r"\rho=1\ \text{(no importance ratio)}", label="no ratio (plain policy gradient)",
         explain=explain(row("ratio ρ", "πθ / sg[πθ] = exp(log πθ − log πθ)", "calc.ratio", key="ratio")))

# --- clip ------------------------------------------------------------------

class SymmetricClip(_Params):
    eps: float = Field(0.2, gt=0, lt=1, description="The ratio is clipped to [1 - eps, 1 + eps].")


class AsymmetricClip(_Params):
    eps_low: float = Field(0.2, gt=0, lt=1, description="Lower clip: the ratio may fall to 1 - eps_low.")
    eps_high: float = Field(0.28, gt=0, description="Upper clip: the ratio may rise to 1 + eps_high.")


def _clip_worked(rho: float, adv: float, bounds: tuple[float | None, float | None]) -> tuple[str, float]:
    """The clipped surrogate of one token as a TeX line, and its value."""
    low, high = bounds
    if low is None:
        return (r"\rho\hat{A}=" + tex_num(rho, 5) + r"\times" + tex_num(adv, 5) + "=" + tex_num(rho * adv, 5),
                rho * adv)
    surrogate = min(rho * adv, min(max(rho, 1 - low), 1 + high) * adv)
    return (r"\min\big(\rho\hat{A},\,\operatorname{clip}(\rho," + tex_num(1 - low) + "," + tex_num(1 + high)
            + r")\hat{A}\big)=" + tex_num(surrogate, 5), surrogate)


# The clip kinds are written on the token ratio (RATIO_TEX); formula.with_ratio rewrites them with
# the algorithm's own ratio (GSPO clips its sequence ratio s_i, not a token's).
#: The symbol the clip kinds' formulas are written with.
RATIO_TEX = r"\rho_{i,t}"
_CLIP_AFTER = ("It does not bound the ratio: the ratio itself can move on, pushed by the updates of other "
               "tokens, far outside the range.")
_CLIP_TERM = ("Once the ratio has left [1 - eps, 1 + eps] in the direction the advantage pushes, the term is "
              "constant and the token's gradient is zero. " + _CLIP_AFTER)

# The Explainer's rows of a clipped surrogate: the bounds, both branches of the min, and which won.
_CLIPPED = "min(max(calc.ratio, 1 - calc.eps_low), 1 + calc.eps_high)"
_CLIP_ROWS = explain(
    row("bounds", "[1 − {calc.eps_low}, 1 + {calc.eps_high}]", text="[{1 - calc.eps_low}, {1 + calc.eps_high}]"),
    row("unclipped {ratio_symbol}·Â", "{calc.ratio} × {token.advantage}", "calc.ratio * token.advantage", key="unclipped"),
    row("clipped clip({ratio_symbol})·Â", "{" + _CLIPPED + "} × {token.advantage}", _CLIPPED + " * token.advantage",
        key="clipped"),
    row("ℓ = min(…)", "the smaller of the two", "calc.surrogate", key="surrogate"),
    say(cases(("calc.clip_side == 1", "The clipped branch won on the high side: {ratio_symbol} > {1 + calc.eps_high} with "
               "Â > 0, so this token no longer pushes its probability up (its gradient is 0)."),
              ("calc.clip_side == -1", "The clipped branch won on the low side: {ratio_symbol} < {1 - calc.eps_low} with "
               "Â < 0, so this token no longer pushes its probability down (its gradient is 0)."),
              ("calc.ratio * token.advantage == " + _CLIPPED + " * token.advantage",
               "Both branches are equal: {ratio_symbol} is inside the bounds (or Â = 0), so the gradient flows unclipped."),
              (None, "The unclipped branch is the smaller: {ratio_symbol} is outside the bounds on the side the advantage "
                     "pushes away from, so the gradient still flows.")), cls="unipo-live-branch"),
    say("The log says clip side {raw(token.clip)}, the recomputation {raw(calc.clip_side)}.",
        when="has(token.clip) && token.clip != calc.clip_side", cls="unipo-live-warn"))

register("clip", "none", NoParams, "No clipping: the surrogate is the ratio times the advantage.",
         lambda p: r"\ell_{i,t}=\rho_{i,t}\,\hat{A}_{i,t}",
         fn=C.clipped_surrogate, bounds=lambda p: (None, None), worked=_clip_worked, label="no clip",
         explain=explain(row("ℓ = {ratio_symbol}·Â", "{calc.ratio} × {token.advantage} (nothing is clipped)", "calc.surrogate",
                             key="surrogate")))
register("clip", "symmetric", SymmetricClip,
         "PPO's pessimistic clip: once the ratio leaves [1 - eps, 1 + eps] in the advantage's direction, the token stops pushing.",
         lambda p: r"\ell_{i,t}=\min\!\big(\rho_{i,t}\hat{A}_{i,t},\ \operatorname{clip}(\rho_{i,t},1-%s,1+%s)\,\hat{A}_{i,t}\big)"
         % (_fmt(p["eps"]), _fmt(p["eps"])),
         (Term("clip", r"\operatorname{clip}", _CLIP_TERM),
          Term("min", r"\min", "The pessimistic choice: the smaller of the clipped and unclipped objectives.")),
         fn=C.clipped_surrogate, bounds=lambda p: (p["eps"], p["eps"]), worked=_clip_worked, label="symmetric clip",
         explain=_CLIP_ROWS)
register("clip", "asymmetric", AsymmetricClip,
         "Separate lower and upper bounds, 1 - eps_low and 1 + eps_high: once the ratio has left them in the advantage's direction, the term stops pushing.",
         lambda p: r"\ell_{i,t}=\min\!\big(\rho_{i,t}\hat{A}_{i,t},\ \operatorname{clip}(\rho_{i,t},1-%s,1+%s)\,\hat{A}_{i,t}\big)"
         % (_fmt(p["eps_low"]), _fmt(p["eps_high"])),
         (Term("clip", r"\operatorname{clip}", "Asymmetric bounds: the term stops pushing up once the ratio exceeds "
               "1 + eps_high and stops pushing down once it falls below 1 - eps_low. " + _CLIP_AFTER),
          Term("min", r"\min", "The pessimistic choice: the smaller of the clipped and unclipped objectives.")),
         fn=C.clipped_surrogate, bounds=lambda p: (p["eps_low"], p["eps_high"]), worked=_clip_worked, label="asymmetric clip (clip-higher)",
         explain=_CLIP_ROWS)

# --- kl --------------------------------------------------------------------

class KlParams(_Params):
    estimator: Literal["k1", "k2", "k3"] = Field(description="Schulman's estimator of KL(pi_theta || pi_ref).")
    beta: float = Field(gt=0, description="KL coefficient.")


def kl_latex(estimator: str, policy: str = r"\pi_\theta") -> str:
    """Schulman's estimator of KL(policy || pi_ref) at one sampled token (computed by
    components.kl_estimate), in TeX. ``policy``: the policy whose log-probability enters it, pi_theta
    for a KL in the loss (it carries a gradient), the sampling policy for a KL in the reward."""
    num, ref = policy + r"(o_{i,t}\mid\cdot)", r"\pi_{\text{ref}}(o_{i,t}\mid\cdot)"
    return {
        "k1": r"\log\frac{%s}{%s}" % (num, ref),
        "k2": r"\tfrac12\Big(\log\frac{%s}{%s}\Big)^{2}" % (ref, num),
        "k3": r"\frac{%s}{%s}-\log\frac{%s}{%s}-1" % (ref, num, ref, num),
    }[estimator]


#: The sampling policy, as the KL in the reward is computed: at sampling time, a constant with no
#: gradient (the policy gradient reaches it only through the advantage).
OLD_POLICY_TEX = r"\pi_{\theta_{\text{old}}}"
_KL_TERMS = (Term("beta", r"\beta", "How strongly drifting away from the reference model is penalised."),
             Term("kl", r"\mathbb{D}_{i,t}", "Per-token estimate of the KL divergence from the frozen reference model."),
             Term("ref", r"\pi_{\text{ref}}", "The reference model: the warm-started policy before RL, kept frozen."))


def _kl_loss_worked(surrogate: float, beta: float, kl: float, objective: float) -> str:
    return (r"\ell=" + tex_num(surrogate, 5) + "-" + tex_num(beta) + r"\times(" + tex_num(kl, 3) + ")="
            + tex_num(objective, 5))


def _kl_how(policy: str) -> list[dict]:
    """Schulman's estimators in plain text (the Explainer's row of D), with ``policy`` as log π."""
    lp = "log " + policy
    return cases(("params.estimator == 'k1'", f"{lp} − log πref"),
                 ("params.estimator == 'k2'", f"½ (log πref − {lp})²"),
                 ("params.estimator == 'k3'", f"exp(log πref − {lp}) − (log πref − {lp}) − 1"),
                 (None, "{raw(params.estimator)}"))


_KL_ROWS = (row("β", "KL coefficient", "params.beta", key="beta"),)

register("kl", "none", NoParams, "No KL term: nothing ties the policy to the reference model.", lambda p: "", label="no KL penalty",
         explain=explain(say("This algorithm has no KL term: nothing ties the policy to the reference model.")))
register("kl", "in_loss", KlParams,
         "A KL penalty subtracted from every token's objective (GRPO style).",
         lambda p: r"-\beta\,\mathbb{D}_{i,t},\quad \mathbb{D}_{i,t}=%s,\quad \beta=%s" % (kl_latex(p["estimator"]), _fmt(p["beta"])),
         _KL_TERMS, fn=C.kl_estimate, kl_place="loss", worked=_kl_loss_worked, label="KL penalty in the loss",
         explain=explain(
             row("log πref(token)", "the frozen reference model", "token.ref_logp", key="ref_logp", when="has(token.ref_logp)"),
             row("D ({raw(params.estimator)})", _kl_how("πθ"), "calc.kl", key="kl", check="token.kl"),
             *_KL_ROWS,
             row("−β·D", "subtracted from this token's objective", "-params.beta * calc.kl", key="kl_term")))
register("kl", "in_reward", KlParams,
         "A KL penalty folded into the per-token reward before advantages are computed (RLHF / PPO style).",
         lambda p: (r"r_{i,t}=-\beta\,\mathbb{D}_{i,t}+[t=|o_i|]\,r_i,\quad \mathbb{D}_{i,t}=%s,\quad \beta=%s"
                    % (kl_latex(p["estimator"], OLD_POLICY_TEX), _fmt(p["beta"]))),
         (_KL_TERMS[0],
          Term("kl", r"\mathbb{D}_{i,t}", "Per-token estimate of the KL divergence from the frozen reference model, "
               "computed once at sampling time with the sampling policy: a constant in the reward, with no gradient "
               "of its own."),
          _KL_TERMS[2]),
         fn=C.kl_estimate, kl_place="reward", label="KL penalty in the reward",
         explain=explain(
             row("D ({raw(params.estimator)})", [{**c, "text": "estimated when the response was sampled: " + c["text"]}
                                                 for c in _kl_how("πold")], "calc.kl", key="kl"),
             *_KL_ROWS,
             row("−β·D", "added to this token's reward before the advantage", "-params.beta * calc.kl", key="kl_term"),
             say("The penalty is already inside the advantage Â; nothing is subtracted from the objective.")))

# --- aggregation -----------------------------------------------------------

class ConstantNormalizer(_Params):
    normalizer: int | None = Field(None, gt=0, description="The constant L; null means the run's generation budget (max new tokens).")


register("aggregation", "seq_mean_token_mean", NoParams,
         "Average over each response's tokens, then over responses: every response weighs the same.",
         lambda p: r"\frac{1}{G}\sum_{i=1}^{G}\frac{1}{|o_i|}\sum_{t=1}^{|o_i|}",
         (Term("length", r"|o_i|", "The response's length in tokens. Dividing by it gives each token of a short response more weight than one of a long response."),
          Term("G", r"G", "The number of responses sampled per prompt.")),
         fn=C.seq_mean_token_mean_weights, apply=lambda mask, p: C.seq_mean_token_mean_weights(mask),
         label="mean per response, then over responses", weight_tex=r"w_{i,t}=\frac{1}{N\,|o_i|}",
         weights_from_counts=True,
         explain=explain(row("weight w", "1 / (N · |oᵢ|) = 1 / ({raw(update.responses)} × {raw(length)})", "calc.weight", key="weight", check="token.weight")),
         weight_meaning="A token of a short response weighs more than a token of a long one; every response "
                        "carries the same total weight.",
         worked=lambda w, n, length, p: (r"w=\frac{1}{N\,|o_i|}=\frac{1}{" + str(n) + r"\times" + str(length) + "}="
                                         + tex_fraction(w)))
register("aggregation", "token_mean", NoParams,
         "One average over every token of the batch: every token weighs the same.",
         # The normaliser is the batch's: B groups of G responses. Inside the expectation over one
         # group it reads B / (all the batch's tokens), so that averaging over the B groups gives each
         # token the weight 1 / sum_j |o_j| that the weights below compute (verl token-mean; the DAPO
         # paper writes the sum over one group's lengths inside its expectation).
         lambda p: r"\frac{B}{\sum_{j=1}^{BG}|o_j|}\sum_{i=1}^{G}\sum_{t=1}^{|o_i|},\quad B=\text{groups in the batch}",
         (Term("total_length", r"\sum_{j=1}^{BG}|o_j|", "All response tokens of the batch together (B groups of G responses): each token weighs one over this, so long responses carry more of the total."),
          Term("B", r"B", "The number of prompt groups in the batch (in the update's minibatch).")),
         fn=C.token_mean_weights, apply=lambda mask, p: C.token_mean_weights(mask),
         label="mean over every token of the batch", weight_tex=r"w_{i,t}=\frac{1}{\sum_{j}|o_j|}",
         uniform_weights=True,
         # its weight is one over the update's tokens, which a step's log holds only as that weight
         explain=explain(row("weight w", "1 / Σ|oⱼ| = 1 / {raw(counts.tokens)} (the update's tokens, from the log)", "calc.weight", key="weight", check="token.weight"),
                         counts={"tokens": "token.weight > 0 ? round(1 / token.weight) : null"}),
         weight_meaning="Every token weighs the same; a long response carries more of the total than a short one.",
         worked=lambda w, n, length, p: r"w=\frac{1}{\sum_j|o_j|}=\frac{1}{" + str(round(1.0 / w) if w > 0 else 0) + "}")
register("aggregation", "constant_normalizer", ConstantNormalizer,
         "Token objectives summed and divided by a constant: no length enters the weights.",
         lambda p: r"\frac{1}{G\,L}\sum_{i=1}^{G}\sum_{t=1}^{|o_i|},\quad L=%s" % (
             _fmt(p["normalizer"]) if p.get("normalizer") else r"\text{max new tokens}"),
         (Term("L", r"L", "A constant (the generation budget), the same for every response and every step."),
          Term("G", r"G", "The number of responses sampled per prompt.")),
         run_resolved=("normalizer",),
         resolve=lambda p, max_new_tokens: {**p, "normalizer": p["normalizer"] or max_new_tokens},
         fn=C.constant_normalizer_weights, apply=lambda mask, p: C.constant_normalizer_weights(mask, p.get("normalizer")),
         label="sum divided by a constant", weight_tex=r"w_{i,t}=\frac{1}{N\,L}", weights_from_counts=True,
         explain=explain(row("weight w", "1 / (N · L) = 1 / ({raw(update.responses)} × {raw(params.normalizer)})", "calc.weight", key="weight", check="token.weight")),
         weight_meaning="A constant: no length enters the weight, for the token or for the batch.",
         worked=lambda w, n, length, p: (r"w=\frac{1}{N\,L}=\frac{1}{" + str(n) + r"\times" + str(p.get("normalizer"))
                                         + "}=" + tex_fraction(w)))
register("aggregation", "seq_mean_token_sum", NoParams,
         "Token objectives summed per response, then averaged over responses.",
         lambda p: r"\frac{1}{G}\sum_{i=1}^{G}\sum_{t=1}^{|o_i|}",
         (Term("G", r"G", "The number of responses sampled per prompt."),),
         fn=C.seq_mean_token_sum_weights, apply=lambda mask, p: C.seq_mean_token_sum_weights(mask),
         label="sum per response, then mean over responses", weight_tex=r"w_{i,t}=\frac{1}{N}",
         weights_from_counts=True,
         explain=explain(row("weight w", "1 / N = 1 / {raw(update.responses)}", "calc.weight", key="weight", check="token.weight")),
         weight_meaning="Token objectives are summed per response: a long response carries more in proportion to "
                        "its length.",
         worked=lambda w, n, length, p: r"w=\frac{1}{N}=\frac{1}{" + str(n) + "}=" + tex_fraction(w))

# --- filter ----------------------------------------------------------------

class DynamicSampling(_Params):
    max_rounds: int = Field(10, ge=1, description="At most this many sampling rounds to fill the batch with informative groups (verl: max_num_gen_batches, 10).")


register("filter", "none", NoParams, "Every sampled group is trained on.", lambda p: "", label="no filter",
         explain=explain(say(cases(
             ("group.n_correct == 0 || group.n_correct == group.size",
              "This token's group has {raw(group.n_correct)}/{raw(group.size)} correct answers. Every group is trained on, including this one although "
              "its advantages are all 0."),
             (None, "This token's group has {raw(group.n_correct)}/{raw(group.size)} correct answers. Every group is trained on.")))))
register("filter", "dynamic_sampling", DynamicSampling,
         "Groups where every response is right, or every one wrong, are dropped and the batch is refilled.",
         lambda p: r"\text{s.t.}\ \ 0<\big|\{o_i : o_i\ \text{correct}\}\big|<G",
         (Term("filter", r"0<|\{\cdot\}|<G", "Keep a group only if some but not all of its responses are correct: otherwise every advantage is zero."),),
         fn=C.dynamic_sampling_keep, apply=lambda correct, p: C.dynamic_sampling_keep(correct), label="dynamic sampling",
         explain=explain(
             say(cases(("group.n_correct > 0 && group.n_correct < group.size",
                        "This token's group has {raw(group.n_correct)}/{raw(group.size)} correct answers: 0 < {raw(group.n_correct)} < {raw(group.size)}, "
                        "so the filter kept it."),
                       (None, "This token's group has {raw(group.n_correct)}/{raw(group.size)} correct answers: the filter would have dropped it."))),
             say(cases(("count(step.filtered_groups) > 0",
                        "Before this update the filter dropped {raw(count(step.filtered_groups))} logged group(s): "
                        "{join(step.filtered_groups, 'group {raw(index)} ({raw(n_correct)}/{raw(size)} correct)', ', ')}."),
                       (None, "The log lists no dropped groups for this step (drops are logged on the first update of a "
                              "rollout).")))))

# --- shaping ---------------------------------------------------------------

class OverlongShaping(_Params):
    max_length: int | None = Field(None, gt=0, description="L_max; null means the run's generation budget.")
    cache_fraction: float = Field(0.2, gt=0, le=1, description="L_cache as a fraction of L_max (DAPO: 4,096 of 20,480, the expected 16,384 plus the cache).")
    cache_length: int | None = Field(None, gt=0, description="L_cache in tokens; filled from cache_fraction when null.")
    penalty: float = Field(1.0, gt=0, description="The penalty at L_max and beyond (DAPO: 1, against a correctness reward of +1/-1; 0.5 keeps that weight against a 1/0 reward).")


def _penalty_factor(p: dict) -> str:
    """The ramp's factor in the formula: nothing for the paper's penalty of 1."""
    penalty = p.get("penalty", 1.0)
    return "" if penalty == 1 else _fmt(penalty) + r"\,"


def _resolve_overlong(p: dict, max_new_tokens: int) -> dict:
    p = {**p, "max_length": p["max_length"] or max_new_tokens}
    if p["cache_length"] is None:
        p["cache_length"] = max(1, round(p["cache_fraction"] * p["max_length"]))
    return p


#: Overlong shaping's rows need its two lengths (a run fills them in: resolve).
_BUDGET = "has(params.max_length) && has(params.cache_length)"

register("shaping", "none", NoParams, "The reward is used as it is.", lambda p: "", label="no shaping",
         explain=explain(say("The reward is used as it is: rᵢ = {response.reward}.")))
register("shaping", "overlong", OverlongShaping,
         "A soft length penalty added to the reward as a response nears the generation budget.",
         lambda p: (r"R_{\text{length}}(y)=\begin{cases}0,&|y|\le L_{\max}-L_{\text{cache}}\\ %s\frac{(L_{\max}-L_{\text{cache}})-|y|}{L_{\text{cache}}},&L_{\max}-L_{\text{cache}}<|y|\le L_{\max}\\ -%s,&|y|>L_{\max}\end{cases}"
                    % (_penalty_factor(p), _fmt(p.get("penalty", 1.0)))),
         (Term("L_max", r"L_{\max}", "The generation budget."),
          Term("L_cache", r"L_{\text{cache}}", "The stretch before the budget over which the penalty ramps from 0 to its floor.")),
         run_resolved=("max_length", "cache_length"), resolve=_resolve_overlong,
         fn=C.overlong_penalty,
         apply=lambda lengths, p: C.overlong_penalty(lengths, p["max_length"], p["cache_length"], p.get("penalty", 1.0)), label="overlong penalty",
         explain=explain(
             row("|oᵢ|", "this response's length", "response.length", key="length"),
             row("L_max, L_cache", "the budget and the ramp before it", text="{raw(params.max_length)}, {raw(params.cache_length)}",
                 when=_BUDGET),
             row("R_length", cases(("response.length <= params.max_length - params.cache_length", "0: shorter than L_max − L_cache"),
                                   (None, "penalty × (L_max − L_cache − |oᵢ|) / L_cache")),
                 "calc.shaping", key="shaping", check="response.reward_components.shaping", when=_BUDGET),
             row("reward rᵢ", "after shaping", "response.reward", key="reward")))
