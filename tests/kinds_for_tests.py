"""Component kinds that exist only for tests (never shipped): registered inside
``registry.scoped()`` so that they are gone after the test.

``group_standardised`` is an advantage kind the browser has never seen: it reuses the group
z-score's function (so unipo-math.js computes it with no change) under its own name, and says
what it does with a token's numbers in its own words, its explainer data. A run that uses it is
explained by explainer.js from that data alone. Its entry also says what it is in the trainers (its settings:
``scale_rewards="standardised"`` in TRL, ``algorithm.adv_estimator=standardised`` in verl, OpenRLHF's group_norm)
and what each trainer's code reads of it (its translators), so that the OpenRLHF command builder translates it and
the verl and TRL importers map a config to it with no other file edited (tests/test_kind_reaches_trainers.py).
"""

from __future__ import annotations

from unipo_build.core import components as C
from unipo_build.core import registry as R

NAME = "group_standardised"
#: The sentence the Explainer shows for it, a template the browser fills from the token's log.
SENTENCE = ("Test kind: the {raw(group.size)} rewards of this group ({nums(group.rewards)}) are "
            "standardised, this response's reward {response.reward} against their mean {mean(group.rewards)}.")
#: Its names in the trainers (fictional in TRL and verl: the test kind is no trainer's).
TRL_VALUE, VERL_VALUE = "standardised", "standardised"
OPENRLHF_NOTE = "group_norm standardises with the std + 1e-9 (the test kind's own words)"
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
        explain=data,
        trainers=(R.setting("trl", "scale_rewards", TRL_VALUE), R.setting("verl", "algorithm.adv_estimator", VERL_VALUE),
                  R.setting("openrlhf", "algo.advantage.estimator", "group_norm", note="test kind")),
        translators={"openrlhf": lambda p, cfg, budget: R.Flags(["--algo.advantage.estimator", "group_norm"],
                                                                [OPENRLHF_NOTE]),
                     "verl": lambda read: {"std_ddof": 1, "eps": float(read("algorithm.standardised_eps", 1e-6))},
                     "trl": lambda read: {"std_ddof": 1, "eps": 1e-4}})
