"""Component kinds that exist only for tests (never shipped): registered inside
``registry.scoped()`` so that they are gone after the test.

``group_standardised`` is an advantage kind the browser has never seen: it reuses the group
z-score's function (so unipo-math.js computes it with no change) under its own name, and says
what it does with a token's numbers in its own words, its explainer data. A run that uses it is
explained by explainer.js from that data alone.
"""

from __future__ import annotations

from unipo_build.core import components as C
from unipo_build.core import registry as R

NAME = "group_standardised"
#: The sentence the Explainer shows for it, a template the browser fills from the token's log.
SENTENCE = ("Test kind: the {raw(group.size)} rewards of this group ({nums(group.rewards)}) are "
            "standardised, this response's reward {response.reward} against their mean {mean(group.rewards)}.")
ROW_HOW = "standardised: ({response.reward} − {mean(group.rewards)}) / ({std(group.rewards, params.std_ddof)} + {params.eps})"


def register_standardised(with_explainer: bool = True) -> R.Kind:
    """The test kind; ``with_explainer`` False registers it without explainer data (the build refuses it)."""
    data = R.explain(
        R.say(SENTENCE),
        R.row("spread of the group", "std with n − {raw(params.std_ddof)} in the divisor",
              "std(group.rewards, params.std_ddof)", key="reward_std"),
        R.row("advantage Â", ROW_HOW, "calc.advantage", key="advantage", check="token.advantage")) if with_explainer else None
    return R.register(
        "advantage", NAME, R.ZScoreParams,
        "Each reward standardised within its group (a test-only kind).",
        lambda p: r"\hat{A}_{i,t}=\operatorname{standardise}_{G}(r)_i",
        (R.Term("advantage", r"\hat{A}_{i,t}", "The standardised reward."),),
        fn=C.group_zscore_advantage, group_baseline=True, label="group standardised (test kind)",
        apply=lambda rewards, p: C.group_zscore_advantage(rewards, std_ddof=p.get("std_ddof", 1), eps=p.get("eps", 1e-6)),
        explain=data)
