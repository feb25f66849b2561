"""The clip kinds' bounds in a reader's words (each clip kind's ``clip_rule``, :class:`registry_base.ClipRule`):
what the diagnoses ask their clipping questions in (core/diagnose.py, through objective.clip_rule). Registered
with the kinds in ``kinds_loss``; kept here so that module stays one slot's formulas."""

from __future__ import annotations

import numpy as np

from unipo_build.core.numbers import fmt_num
from unipo_build.core.registry_base import ClipRule


def _n(x: float) -> str:
    """A bound as the diagnoses write it (three significant digits, a true minus)."""
    return fmt_num(float(x), 3)


def _asymmetric(p: dict) -> tuple[float, float]:
    return (p["eps_low"], p["eps_high"])


def range_rule(name: str, bounds):
    """A clip kind's ``clip_rule``: PPO's clip of the ratio to [1 - eps_low, 1 + eps_high] (``bounds``)."""
    def rule(p: dict) -> ClipRule:
        eps_low, eps_high = bounds(p)
        low, high = 1 - eps_low, 1 + eps_high
        return ClipRule(name, f"the ratio's range [{_n(low)}, {_n(high)}]", low, high,
                        f"A < 0, ratio below {_n(low)}", f"A > 0, ratio above {_n(high)}")
    return rule


def dual_rule(p: dict) -> ClipRule:
    """The dual clip's bound: PPO's range, and for a negative advantage the floor c·A, which holds a token whose
    ratio rose above c (counted on the high side, as the trainers count it)."""
    rule = range_rule("PPO's clip with the dual clip's floor", _asymmetric)(p)
    c = _n(p["c"])
    return ClipRule(rule.name, f"{rule.bound} and, for A < 0, the floor c·A from ratio {c} up", rule.low, rule.high,
                    rule.low_side, f"{rule.high_side}; A < 0, ratio above the floor's c = {c}")


def cispo_rule(p: dict) -> ClipRule:
    """CISPO's cap on the importance weight: the token keeps its gradient, only its size is capped; no lower bound
    unless eps_low is set."""
    high = 1 + p["eps_high"]
    low = None if p.get("eps_low") is None else 1 - p["eps_low"]
    bound = f"the weight's cap at {_n(high)}" + (f" and floor at {_n(low)}" if low is not None else " (no lower bound)")
    return ClipRule("CISPO's cap on the importance weight", bound, low, high,
                    f"A < 0, ratio below {_n(low)}" if low is not None else "", f"A > 0, ratio above the cap {_n(high)}",
                    silences=False)


def geo_rule(p: dict) -> ClipRule:
    """GMPO's clip of the log-ratio to [-eps_low, eps_high]: the ratio's [exp(-eps_low), exp(eps_high)]."""
    low, high = float(np.exp(-p["eps_low"])), float(np.exp(p["eps_high"]))
    lo, hi = _n(-p["eps_low"]), _n(p["eps_high"])
    return ClipRule("GMPO's log-space clip", f"the log-ratio's range [{lo}, {hi}] (the ratio's [{_n(low)}, {_n(high)}])",
                    low, high, f"A < 0, log-ratio below {lo}, ratio below {_n(low)}",
                    f"A > 0, log-ratio above {hi}, ratio above {_n(high)}")


def dppo_rule(p: dict) -> ClipRule:
    """DPPO's mask on the change of a token's probability: a token of probability p_old is masked above the ratio
    1 + delta_high / p_old (A > 0) or below 1 - delta_low / p_old (A < 0), so the ratio's thresholds are those of a
    token of probability 1, 1 - delta_low and 1 + delta_high, and a less likely token's lie further out; a delta of 1
    or more is a side that never acts (no probability moves that far)."""
    lo_d, hi_d = _n(p["delta_low"]), _n(p["delta_high"])
    low = 1 - p["delta_low"] if p["delta_low"] < 1 else None
    high = 1 + p["delta_high"] if p["delta_high"] < 1 else None
    return ClipRule("DPPO's mask on the probability's change",
                    f"a fall of more than {lo_d} (A < 0) or a rise of more than {hi_d} (A > 0) in the token's "
                    "probability, which no ratio inside "
                    f"[{_n(1 - p['delta_low'])}, {_n(1 + p['delta_high'])}] reaches",
                    low, high,
                    f"A < 0, probability fell by more than {lo_d}" if low is not None else "",
                    f"A > 0, probability rose by more than {hi_d}" if high is not None else "")
