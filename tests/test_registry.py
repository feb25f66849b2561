"""The component registry is the single source of each kind: adding one is one register() call.

The test adds an advantage kind (each reward minus its group's median) in a temporary registry,
with nothing else changed, and finds it in a spec that validates, in the trained objective, in
the composed formula, in the Algorithm Explainer's card and in the components reference; and
every place that asks about kinds (group baseline, KL placement, clip bounds) answers from the
registry's properties.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from unipo_build import objective as O
from unipo_build import registry
from unipo_build.formula import objective_latex
from unipo_build.project import spec_dir
from unipo_build.registry import REGISTRY, NoParams, Term
from unipo_build.specs import load_spec, resolve
from unipo_build.views.explainer import objective_card
from unipo_build.views.reference import component_catalogue_markdown


def group_median_advantage(rewards):
    """r_i - median of the group's rewards (numpy only: enough for this test)."""
    return rewards - np.median(rewards, axis=-1, keepdims=True)


def _register_median():
    return registry.register(
        "advantage", "group_median", NoParams,
        "Each reward minus its group's median.",
        lambda p: r"\hat{A}_{i,t}=r_i-\operatorname{median}(\{r_j\}_{j=1}^{G})",
        (Term("median", r"\operatorname{median}", "The middle reward of the group."),),
        fn=group_median_advantage, group_baseline=True, label="group median",
        apply=lambda rewards, p: group_median_advantage(rewards))


def _spec_using(tmp_path, kind: str):
    data = yaml.safe_load((spec_dir() / "grpo.yaml").read_text(encoding="utf-8"))
    data.update(id="median_po", predecessor=None)
    data["components"]["advantage"] = {"kind": kind, "explanation": "The median is robust to one odd reward."}
    path = tmp_path / "median_po.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_a_kind_added_to_the_registry_is_trained_shown_and_explained(tmp_path):
    with registry.scoped():
        _register_median()
        spec = load_spec(_spec_using(tmp_path, "group_median"))
        cfg = resolve(spec, max_new_tokens=8)
        # the objective dispatches through the registry: rewards 1, 1, 0, 0, 1 -> median 1
        mask = np.ones((5, 3))
        adv, returns = O.compute_advantages(cfg, rewards=np.array([1.0, 1.0, 0.0, 0.0, 1.0]), group_size=5, mask=mask)
        assert returns is None
        np.testing.assert_allclose(adv[:, 0], [0.0, 0.0, -1.0, -1.0, 0.0])
        assert O.group_baseline(cfg) and not O.uses_critic(cfg)
        # the one formula composer writes the kind's formula into the objective
        assert r"\operatorname{median}(\{r_j\}_{j=1}^{G})" in objective_latex(spec)
        # the explainer's card: its summary, its term's tooltip, the spec's own words
        card = objective_card(spec, uid="median-card")
        assert "Each reward minus its group&#x27;s median." in card and "The middle reward of the group." in card
        assert "The median is robust to one odd reward." in card
        # the components reference lists it, with the function that computes it
        catalogue = component_catalogue_markdown({"median_po": spec})
        assert "group_median" in catalogue and "group_median_advantage" in catalogue
    # outside the block the kind is gone, and a spec naming it says so
    assert "group_median" not in REGISTRY["advantage"]
    with pytest.raises(ValueError, match="unknown component 'group_median'"):
        load_spec(_spec_using(tmp_path, "group_median"))


def test_every_kind_says_what_it_is():
    """Each kind brings what the code asks of it instead of testing its name."""
    for slot, kinds in REGISTRY.items():
        for name, kind in kinds.items():
            assert kind.summary and callable(kind.latex), (slot, name)
            if slot == "advantage":
                assert kind.apply is not None and kind.fn is not None and kind.label, name
            if slot == "ratio":
                assert kind.apply is not None and kind.worked is not None, name
            if slot == "clip":
                assert kind.bounds is not None and kind.worked is not None, name
            if slot == "aggregation":
                assert kind.apply is not None and kind.weight_tex.startswith("w_{i,t}=") and kind.weight_meaning, name
            if slot in ("filter", "shaping") and not kind.is_none:
                assert kind.apply is not None, name
    assert {k.kl_place for k in REGISTRY["kl"].values()} == {None, "loss", "reward"}
    assert [k.name for k in REGISTRY["advantage"].values() if k.needs_critic] == ["gae"]


def test_recomputation_checks_weights_by_the_registrys_properties():
    """check_step recomputes a count-fixed weight through the kind's own function and notices a
    wrong one; a token-mean step must weigh every token the same."""
    from unipo_build.recompute import check_step
    from unipo_build.runs import discover

    runs = {r.header.algorithm: r for r in discover() if r.ok and r.config is not None and r.token_steps()}
    for algorithm in ("grpo", "dapo"):
        run = runs.get(algorithm)
        if run is None:
            pytest.skip(f"no {algorithm} run with token files in the build's runs")
        detail = run.reader.detail(run.token_steps()[0]).model_copy(deep=True)
        assert check_step(run.config, detail) == []
        prompt = next(p for p in detail.prompts if not p.filtered and p.responses[0].tokens is not None)
        prompt.responses[0].tokens.weight[0] *= 1.5
        problems = "\n".join(check_step(run.config, detail))
        kind = run.config.kind("aggregation")
        if REGISTRY["aggregation"][kind].weights_from_counts:
            assert f"is not the {kind} weight" in problems
        else:
            assert f"{kind} weights differ between tokens" in problems


def test_the_token_mean_card_divides_by_the_batch_like_its_weights():
    """DAPO's token mean weighs every token of the batch by one over all the batch's tokens. Its card
    must say so: a normaliser written as one group's lengths (the paper's notation) would give the
    tokens of a group of short answers a larger weight than the weights the objective computes.
    Two groups of two answers, lengths (1, 3) and (2, 6): 12 tokens, every weight 1/12."""
    kind = registry.kind("aggregation", "token_mean")
    mask = np.zeros((4, 6))
    for row, length in enumerate((1, 3, 2, 6)):
        mask[row, :length] = 1.0
    weights = np.asarray(kind.apply(mask, {}))
    assert np.allclose(weights[mask > 0], 1 / 12) and np.all(weights[mask == 0] == 0)
    tex = kind.latex({})
    # inside the expectation over one group: B / (all the batch's tokens); averaged over the B = 2
    # groups that is 1/12 a token, the weight above (one group's sum would give the first 1/4 / 2)
    assert tex.startswith(r"\frac{B}{\sum_{j=1}^{BG}|o_j|}\sum_{i=1}^{G}")
    B, total = 2, mask.sum()
    assert B / total / B == pytest.approx(weights[0, 0])
    assert r"\sum_{i=1}^{G}|o_i|" not in tex
    terms = {t.key: t.symbol for t in kind.terms}
    assert terms["total_length"] == r"\sum_{j=1}^{BG}|o_j|" and "batch" in kind.summary
