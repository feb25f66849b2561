"""Formula and convention facts the site states, each pinned by a test that would have caught its slip.

GSPO's clip is written on its sequence ratio; the clip is never described as bounding the ratio;
a KL in the reward is written at the sampling policy; a spec without a paper is not credited to
another paper's authors. The prose facts (k3, overlong cache, counts) are checked on the built site
in test_claims.py.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from unipo_build.core import components as C
from unipo_build.core import objective as O
from unipo_build.core.formula import RATIO_TEX, objective_latex, with_ratio
from unipo_build.core.project import spec_dir
from unipo_build.core.registry import REGISTRY, OLD_POLICY_TEX
from unipo_build.core.specs import load_specs, resolve
from unipo_build.site.views.compare import compare as CMP
from unipo_build.site.pages.objectives import family_tree as FT
from unipo_build.site.pages.guides import reference as R
from unipo_build.site.views.explainer.explainer import components_of, objective_card

SPECS = load_specs(spec_dir())


def sequence_ratio_specs() -> list[str]:
    """Every spec whose ratio is not a token's (GSPO's s_i)."""
    return [sid for sid, spec in SPECS.items() if spec.component("ratio").name != "token"
            and spec.component("ratio").name != "none"]


def test_gspo_is_a_sequence_ratio_spec():
    assert sequence_ratio_specs() == ["gspo"]


@pytest.mark.parametrize("sid", sequence_ratio_specs())
def test_a_sequence_ratio_is_clipped_as_itself_everywhere(sid):
    spec = SPECS[sid]
    clip = components_of(spec)["clip"].latex()
    assert RATIO_TEX not in clip and r"\operatorname{clip}(s_i," in clip
    # the card, the comparison cell (and the selector's data) and the reference page's row
    card = objective_card(spec)
    assert r"\operatorname{clip}(\rho_{i,t}" not in card and r"\operatorname{clip}(s_i" in card
    cell = CMP.compare_data(SPECS["grpo"], spec)["specs"]["b"]
    assert r"\operatorname{clip}(s_i" in cell["slots"]["clip"]["tex"]
    grpo_side = components_of(SPECS["grpo"])["clip"].latex()
    assert r"\operatorname{clip}(\rho_{i,t}" in grpo_side  # GRPO's own clip keeps the token ratio
    assert r"\operatorname{clip}(s_i" in CMP.selector_data(SPECS)["specs"][sid]["slots"]["clip"]["tex"]
    assert r"\operatorname{clip}(s_i" in R.slots_table(spec) and r"\operatorname{clip}(\rho_{i,t}" not in R.slots_table(spec)
    assert r"\operatorname{clip}(\htmlClass{unipo-slot unipo-slot-ratio}{s_i}" in objective_latex(spec)
    # the browser's live card names the ratio it clips
    assert O.browser_config(resolve(spec, max_new_tokens=32))["components"]["ratio"]["symbol"] == "s\u1d62"


def test_with_ratio_rewrites_only_the_token_ratio():
    token, sequence = REGISTRY["ratio"]["token"], REGISTRY["ratio"]["sequence"]
    tex = r"\min(\rho_{i,t}A,\operatorname{clip}(\rho_{i,t},0.8,1.2)A)"
    assert with_ratio(tex, token) == tex
    assert with_ratio(tex, sequence) == r"\min(s_iA,\operatorname{clip}(s_i,0.8,1.2)A)"


def test_the_clip_is_never_said_to_bound_the_ratio_or_to_favour_rare_tokens():
    """The registry's words on every clip kind: what the clip does (removes a gradient), never a
    bound on the ratio; clip-higher's rare-token story belongs to DAPO's spec, not to the kind GSPO
    shares."""
    for kind in REGISTRY["clip"].values():
        words = " ".join([kind.summary] + [t.tooltip for t in kind.terms]).lower()
        for wrong in ("keeps the ratio", "inside the trust region", "trust region", "unlikely tokens",
                      "rare token"):
            assert wrong not in words, (kind.name, wrong)
        if kind.terms:
            assert "does not bound the ratio" in words
    gspo_card = objective_card(SPECS["gspo"]).lower()
    assert "unlikely tokens" not in gspo_card and "rare token" not in gspo_card


def test_the_kl_in_the_reward_is_written_at_the_sampling_policy():
    """PPO's k1 sits in the reward, computed once at sampling (objective.rollout_kl uses the old
    log-probs), so its card writes pi_old, not pi_theta; GRPO's k3 in the loss writes pi_theta."""
    ppo_kl = components_of(SPECS["ppo"])["kl"].latex()
    assert r"\mathbb{D}_{i,t}=\log\frac{" + OLD_POLICY_TEX in ppo_kl
    assert r"\pi_\theta(o_{i,t}" not in ppo_kl
    grpo_kl = components_of(SPECS["grpo"])["kl"].latex()
    assert r"\pi_\theta(o_{i,t}" in grpo_kl and OLD_POLICY_TEX not in grpo_kl
    # the trainer's arithmetic agrees: the reward's KL depends on the old log-probs only
    cfg = resolve(SPECS["ppo"], max_new_tokens=8)
    old, ref, mask = np.array([[-1.0, -2.0]]), np.array([[-1.5, -1.0]]), np.ones((1, 2))
    kl = O.rollout_kl(cfg, old, ref, mask)
    assert np.allclose(kl, C.kl_estimate(old, ref, "k1")) and np.allclose(kl, old - ref)


def test_a_spec_without_a_paper_is_not_credited_to_another_paper():
    hybrid = SPECS["dapo_dr"]
    assert hybrid.paper is None and hybrid.references
    rows = {r["id"]: r for r in FT.tree_rows(SPECS)}
    assert rows["dapo_dr"]["authors"] is None
    table = FT.family_tree_table(FT.tree_rows(SPECS))
    row = table[table.index("Dr. GRPO + DS"):]
    row = row[:row.index("</tr>")]
    assert "no paper of its own" in row and "Liu" not in row
    assert "no paper of its own" in objective_card(hybrid)
    spec = json.dumps(FT.family_tree_spec(FT.tree_rows(SPECS)))
    assert '"meta": "2025 \\u00b7 no paper of its own"' in spec and "2025 \\u00b7 arXiv 2503.20783" in spec


def test_the_change_phrase_joins_a_summarys_lines_and_keeps_its_other_characters():
    """A YAML summary's line breaks and indents become one space; a vertical tab or form feed in it is
    the author's text (Python's str.split would drop it), as the page shows it elsewhere."""
    spec = SPECS["reinforce"].model_copy(update={"summary": "No baseline\n  at all \x0bvt \x0cff. Then more."})
    assert FT.change_phrase(spec) == "No baseline at all \x0bvt \x0cff"


# ---------------------------------------------------------------------------
# Facts the prose states, computed where the prose gets them
# ---------------------------------------------------------------------------

def test_overlong_numbers_follow_the_spec():
    from unipo_build.site.facts import spec_facts as F

    dapo = SPECS["dapo"]
    assert dapo.params("shaping")["cache_fraction"] == pytest.approx(0.2)  # DAPO: 4,096 of 20,480
    v = F.overlong_values(dapo)
    penalty = dapo.params("shaping")["penalty"]
    assert v["cache_share"] == pytest.approx(0.2) and v["zone_start"] == pytest.approx(0.8)
    assert v["floor"] == pytest.approx(-penalty) and v["midpoint_term"] == pytest.approx(-penalty / 2)
    # the paper's own setting, worked by hand: cache a quarter, floor -1 -> 7/8 of the budget gives -1/2
    paper = dapo.model_copy(deep=True)
    paper.components["shaping"].params.update(cache_fraction=0.25, penalty=1.0)
    v = F.overlong_values(paper)
    assert v["midpoint"] == pytest.approx(0.875) and v["midpoint_term"] == pytest.approx(-0.5)
    assert v["floor"] == pytest.approx(-1.0)
    assert F.overlong_fact_text(paper, "cache_share") == "25%" and F.overlong_fact_text(paper, "midpoint") == "87.5%"


def test_the_three_to_one_of_one_and_three_right_answers_comes_from_the_mean():
    """(1,0,0,0) and (1,1,1,0) have the same sample std, so GRPO's 3:1 is the mean's, as Dr. GRPO's is."""
    zscore, mean = REGISTRY["advantage"]["group_zscore"], REGISTRY["advantage"]["group_mean"]
    groups = np.array([[1.0, 0, 0, 0], [1.0, 1, 1, 0]])
    assert np.std(groups[0], ddof=1) == pytest.approx(np.std(groups[1], ddof=1))
    z = np.asarray(zscore.apply(groups, {"std_ddof": 1, "eps": 0.0}))
    m = np.asarray(mean.apply(groups, {}))
    assert z[0, 0] / z[1, 0] == pytest.approx(3.0) and m[0, 0] / m[1, 0] == pytest.approx(3.0)
    assert (z[0, 0], z[1, 0]) == pytest.approx((1.5, 0.5))
    page = (spec_dir().parents[1] / "docs" / "course" / "algorithms" / "grpo.md").read_text(encoding="utf-8")
    question = page[page.index("on one, 1 of 4 answers is right"):]
    question = question[:question.index("??? question", 10)]
    assert "from the mean alone" in question and "*same* sample standard deviation" in question
    assert "Dividing by the group's spread makes a rare success" not in question


def test_spec_facts_name_what_the_specs_hold():
    from unipo_build.site.facts import spec_facts as F

    assert F.count_word(12) == "twelve" and F.count_word(len(SPECS)) == F.count_word(15) == "15"  # 15 specs ship
    with_filter = [s.name for s in SPECS.values() if not s.component("filter").is_none]
    assert len(with_filter) >= 2  # DAPO and the hybrid: "only DAPO has a filter" would be wrong
    text = F.algorithms_with_text(SPECS, "filter")
    assert all(name in text for name in with_filter)
    assert "GRPO" in F.same_kind_text(SPECS, "reinforce", "aggregation")
    assert "Dr. GRPO" not in F.same_kind_text(SPECS, "reinforce", "aggregation")  # it removed 1/|o_i|


# ---------------------------------------------------------------------------
# The built site: the slips are gone from every page, and each fix is there
# ---------------------------------------------------------------------------

#: Phrases that stated a slip; none may come back on any page.
SLIPS = {
    "inside the trust region": "the clip does not keep the ratio inside a trust region",
    "Asymmetric trust region": "the clip does not bound the ratio",
    "by the clip's factor": "an update does not move a probability by at most the clip's factor",
    "would stop it at": "the clip stops the push, not the ratio",
    "caps the ratio": "the clip stops the push, not the ratio",
    "lets unlikely tokens with positive advantage grow": "clip-higher's rare-token story is DAPO's, not every asymmetric clip's",
    "which is never negative and has low variance": "k3 has low variance only near the reference",
    "k3 is never negative and has low variance": "k3 has low variance only near the reference",
    "with \\(L_{\\text{cache}}\\) a quarter": "DAPO's cache is a fifth of the budget",
    "Dividing by the group's spread makes a rare success": "the 3:1 comes from the mean",
    "fig. 3b for the share of zero-advantage groups": "DAPO fig. 3b counts all-correct groups only",
    "(the share of zero-advantage groups)": "DAPO fig. 3b counts all-correct groups only",
    "five objectives": "the course ships more than five",
    "five runs of this build": "the build has more than five runs (a variant's five seeds are five runs, rightly)",
    "Six metrics, five runs": "the build has more than five runs",
    "Only DAPO has one": "the hybrid has a filter too",
}


def _page_text(path) -> str:
    import html
    import re

    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8"))))


def test_no_page_of_the_built_site_states_a_slip(built_site):
    found = []
    for page in sorted(built_site.rglob("*.html")):
        text = _page_text(page)
        for phrase, why in SLIPS.items():
            if phrase in text:
                found.append(f"{page.relative_to(built_site)}: {phrase!r} ({why})")
    assert not found, "\n".join(found)


def test_the_fixes_are_on_their_pages(built_site):
    page = lambda p: _page_text(built_site / p / "index.html")  # noqa: E731
    gspo = page("reference/algorithms/gspo")
    assert r"\operatorname{clip}(s_i,1-0.0003,1+0.0004)" in gspo and r"\operatorname{clip}(\rho_{i,t},1-0.0003" not in gspo
    ppo = page("reference/algorithms/ppo")
    assert r"\mathbb{D}_{i,t}=\log\frac{\pi_{\theta_{\text{old}}}" in ppo
    assert r"\mathbb{D}_{i,t}=\log\frac{\pi_\theta" not in ppo
    dapo = page("course/algorithms/dapo")
    assert "overlong filtering" in dapo and "This project does not implement overlong filtering" in dapo
    assert "20% of it" in dapo and "the course's spec scales the penalty to 0.5" in dapo  # from the spec
    for p in ("course/algorithms/grpo", "course/compare/objectives", "reference/rendering"):
        assert "2506.09477" in page(p), p  # k3's gradient as a loss (Tang and Munos)
    reinforce = page("course/algorithms/reinforce")
    assert "(N-1)/N" in reinforce and ("the same length normalisation as PPO, GRPO, Dual-clip GRPO, GMPO, Batch-std GRPO, "
                                       "GRPO-TIS, GRPO-MIS, GRPO-MIS (sequence), GSPO and SAPO") in reinforce
    assert ("the same length normalisation as REINFORCE, GRPO, Dual-clip GRPO, GMPO, Batch-std GRPO, GRPO-TIS, GRPO-MIS, "
            "GRPO-MIS (sequence), GSPO and SAPO") in page("course/algorithms/ppo")
    objectives = page("course/compare/objectives")
    assert "In this course, DAPO, CISPO and Dr. GRPO + DS." in objectives and "The 15 objectives" in objectives
    for p in ("course/algorithms/grpo", "course/algorithms/dr_grpo", "course/algorithms/dapo_dr",
              "course/compare/choosing", "reference/views"):
        text = page(p)
        assert "UNIPO paper" in text and "2605.11549" in text, p
    index = page("")
    row = index[index.index("Dr. GRPO + DS Dr. GRPO with DAPO's dynamic sampling"):][:300]
    assert "no paper of its own" in row and "Liu" not in row


def test_slot_counts_in_prose_come_from_the_diff():
    from site_build import bound_macros

    m = bound_macros()
    # REINFORCE -> PPO: GAE replaces the batch baseline; a ratio, a clip and a KL term are added
    assert m["slot_diff_count"]("reinforce", "ppo", "modified") == "one"
    assert m["slot_diff_count"]("reinforce", "ppo", "added") == "three"
    assert m["slot_diff_count"]("dr_grpo", "dapo_dr") == "one"  # the filter alone
    assert m["slot_diff_count"]("grpo", "grpo") == "no"


def test_truncated_importance_sampling_is_described_with_its_cap_and_its_logged_side():
    """The anatomy chapter's TIS paragraph: the weight is capped at a constant above one (not at
    one), masking is the other variant, the logs show only the lower side min(1, .), and this
    trainer logs the weight without applying it."""
    from unipo_build.core.project import find_root

    text = (find_root() / "docs" / "course" / "anatomy.md").read_text(encoding="utf-8")
    start = text.index("Truncated importance sampling (TIS")
    paragraph = " ".join(text[start:text.index("\n\n", start)].split())
    assert r"capped at a constant \(C\) above one (2 in their write-up)" in paragraph
    assert r"w=\min(\pi_{\text{train}}/\pi_{\text{sample}},\,C)" in paragraph
    assert "Masked importance sampling (MIS) drops a token, or a whole answer" in paragraph
    assert r"the weight's lower side only, \(\min(1, \pi_{\text{train}}/\pi_{\text{sample}})\)" in paragraph
    assert "logs the weight without applying it" in paragraph
