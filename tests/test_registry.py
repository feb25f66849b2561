"""The component registry is the single source of each kind: adding one is one register() call.

The test adds an advantage kind (each reward minus its group's median) in a temporary registry,
with nothing else changed, and finds it in a spec that validates, in the trained objective, in
the composed formula, in the Algorithm Explainer's card and in the components reference; and
every place that asks about kinds (group baseline, KL placement, clip bounds) answers from the
registry's properties.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import yaml

from unipo_build.core import objective as O
from unipo_build.core import registry
from unipo_build.core.formula import objective_latex
from unipo_build.core.project import spec_dir
from unipo_build.core.registry import REGISTRY, NoParams, Term
from unipo_build.core.specs import load_spec, resolve
from unipo_build.site.views.explainer.explainer import explainer_config, objective_card
from unipo_build.site.pages.guides.reference import component_catalogue_markdown, trainer_settings_html


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
        apply=lambda rewards, p: group_median_advantage(rewards),
        explain=registry.explain(registry.row("advantage Â", "rᵢ − median = {response.reward} − median of the group",
                                              "token.advantage", key="advantage")))


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
        # the browser's configuration carries what the explainer shows for it
        assert explainer_config(cfg)["components"]["advantage"]["explain"]["items"][0]["row"] == "advantage Â"
        registry.check_explainable()
        # the components reference lists it, with the function that computes it
        catalogue = component_catalogue_markdown({"median_po": spec})
        assert "group_median" in catalogue and "group_median_advantage" in catalogue
        # and every trainer's tab names it among the kinds that trainer does not ship (it was given no settings)
        lines = re.findall(r'<p class="unipo-trainer-lacks"[^>]*>(.*?)</p>', trainer_settings_html())
        assert len(lines) == len(registry.TRAINERS)
        assert all('href="#component-advantage-group_median"' in line for line in lines)
        assert 'data-kind="group_median"' not in trainer_settings_html()
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
    from unipo_build.core.recompute import check_step
    from unipo_build.core.runs import discover

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


# ---------------------------------------------------------------------------
# What the browser says about a kind: its explainer data (registry.explain)
# ---------------------------------------------------------------------------

import re  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kinds_for_tests as K  # noqa: E402 (the tests' own kinds, never shipped)

VIEWS = Path(__file__).resolve().parents[1] / "unipo_build" / "site" / "views"
NO_DATA = (f"advantage kind '{K.NAME}' has no explainer data: give its register() call explain=explain(...) with "
           "the rows and sentences the Algorithm Explainer shows for it (docs/guides/contribute.md, section 1, 'The kind')")


def test_every_shipped_kind_has_complete_explainer_data():
    for slot, kinds in REGISTRY.items():
        for name, kind in kinds.items():
            assert registry.explainer_problem(kind) is None, (slot, name)
            data = registry.explainer_data(kind)
            assert data["kind"] == name and data["items"], (slot, name)
            # a parameter's default is sent with it (a log that leaves one out reads the registry's)
            assert set(data["defaults"]) <= set(kind.params.model_fields), (slot, name)
            if slot in registry.EXPLAIN_REQUIRED_ROW:
                assert registry.EXPLAIN_REQUIRED_ROW[slot] in [i.get("key") for i in data["items"]], (slot, name)
    registry.check_explainable()
    assert registry.explainer_data(registry.kind("advantage", "group_zscore"))["defaults"] == {"std_ddof": 1, "eps": 1e-6}


def test_the_browser_asks_for_no_kind_by_name():
    """explainer.js and inspector-tokens.js compare no kind with a name: what they say about a kind
    is its data (the test kind of tests/browser/test_kind_from_data.py is explained with no JS change)."""
    names = sorted({name for kinds in REGISTRY.values() for name in kinds})
    for script in ("explainer/explainer.js", "inspector/inspector-tokens.js"):
        js = (VIEWS / script).read_text(encoding="utf-8")
        assert "kindOf" not in js and not re.search(r"components(\.\w+|\[[^\]]+\])\.kind\s*[!=]=", js), script
        for name in names:
            quoted = r"[\"']" + re.escape(name) + r"[\"']"
            assert not re.search(r"[!=]==?\s*" + quoted + "|" + quoted + r"\s*[!=]==?", js), (script, name)


def test_a_kind_without_explainer_data_is_refused_in_one_line(tmp_path):
    from mkdocs.exceptions import PluginError

    from unipo_build.site import hooks
    from unipo_build.cli.main import validate_path

    with registry.scoped():
        kind = K.register_standardised(with_explainer=False)
        assert registry.explainer_problem(kind) == NO_DATA
        with pytest.raises(ValueError) as err:
            registry.check_explainable()
        assert str(err.value) == NO_DATA
        # the site build stops before any page renders, with that line (MkDocs prints it)
        with pytest.raises(PluginError) as err:
            hooks.check_kinds()
        assert str(err.value) == NO_DATA
        # `unipo validate` of a spec using it names the file and the field
        spec = _spec_using(tmp_path, K.NAME)
        assert validate_path(spec, None) == [f"{spec}: components.advantage.kind: {NO_DATA}"]
    registry.check_explainable()  # gone with its scope


def test_a_run_using_a_kind_without_explainer_data_stops_unipo_explain(tmp_path, caplog):
    """Through the build itself: `unipo explain` of a run whose configuration names the kind."""
    import json

    from unipo_build.site import explain
    from unipo_build.trainers import import_log

    with registry.scoped():
        K.register_standardised(with_explainer=False)
        run = tmp_path / "runs" / "grpo_small"
        import_log("unipo", Path(__file__).resolve().parent / "fixtures" / "unipo" / "grpo_small.json", run)
        header = json.loads((run / "header.json").read_text(encoding="utf-8"))
        header["algorithm_config"]["components"]["advantage"]["kind"] = K.NAME
        (run / "header.json").write_text(json.dumps(header), encoding="utf-8")
        with caplog.at_level("ERROR"), pytest.raises(explain.ExplainError, match="the site build stopped"):
            explain.build([run], tmp_path / "site")
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == [NO_DATA]
    assert not (tmp_path / "site").exists()


def _with(**change):
    """The test kind's explainer data with one item changed (or added)."""
    items = [dict(i) for i in registry.explain(
        registry.row("advantage Â", "{response.reward}", "calc.advantage", key="advantage"))["items"]]
    items[0].update(change)
    return {"items": items}


@pytest.mark.parametrize("data, missing", [
    ({"items": []}, "its explainer data has no items (rows or sentences) to show"),
    ({"items": [{"row": "advantage Â", "key": "advantage"}]}, "explainer row 1 ('advantage Â') has neither a value nor a text"),
    ({"items": [{"note": "x"}]}, "explainer item 1 is neither a row() nor a say()"),
    (_with(colour="red"), "explainer item 1 has unknown fields colour"),
    (_with(value="token.advantage * reward"), "explainer item 1 value: unknown name 'reward' in 'token.advantage * reward'"),
    (_with(value="median(group.rewards)"), "explainer item 1 value: unknown function 'median' in 'median(group.rewards)'"),
    (_with(how="({response.reward)"), "explainer item 1 how: a '{' without its '}'"),
    (_with(how=registry.cases(("group.size # 2", "x"))), "explainer item 1 how: cannot read '# 2'"),
    (_with(when="has(token.value) &&"), "explainer item 1 when: the expression ends too soon"),
    (_with(value="(calc.advantage"), "explainer item 1 value: expected ')', found 'the end'"),
    (_with(check="token.advantage token.weight"), "explainer item 1 check: unexpected 'token.weight'"),
    (_with(key="adv"), "its explainer data has no row with key 'advantage' (every advantage kind shows one)"),
])
def test_incomplete_explainer_data_names_the_kind_and_what_is_missing(data, missing):
    with registry.scoped():
        kind = K.register_standardised()
        kind = registry.register("advantage", kind.name, kind.params, kind.summary, kind.latex, kind.terms,
                                 fn=kind.fn, apply=kind.apply, group_baseline=True, explain=data)
        problem = registry.explainer_problem(kind)
    assert problem is not None and "\n" not in problem
    assert problem.startswith(f"advantage kind '{K.NAME}': ") and missing in problem, problem
