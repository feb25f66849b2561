"""The Step Inspector's one rendering, in a real browser, on the runs of tests/test_views_inspector.py.

The build sends the inspector's data and an empty body (site/views/inspector/inspector.py);
inspector.js renders the step: the group bars, the open group, its responses and the notes. These
tests hold that rendering to what the build's copy of it used to be checked for (issue 31: one
view, one rendering): which group opens, the bars of every group of the update, the zero-advantage
notes, dropped groups, an imported log without correctness, J near zero, and hostile log text.
"""

from __future__ import annotations

import json
import math

import pytest

import browser_harness as H
from cli_helpers import unipo
from test_views_inspector import HOSTILE, write_test_run

pytestmark = pytest.mark.browser

#: One inspector per case, in this order (the tests pick them by index).
CASES = [
    'step_inspector("test-grpo", step=2)',
    'step_inspector("test-grpo", step=0, moment="all_correct_group")',
    'step_inspector("test-grpo", step=0)',
    'step_inspector("test-dapo", step=0)',
    'step_inspector("test-dapo", moment="filtered_group")',
    'step_inspector("evil")',
    'step_inspector("prime")',
    'step_inspector("test-grpo", step=4)',
]
PAGE_SOURCE = "# Inspector test\n\n" + "".join(f"## Case {i}\n\n{{{{ {c} }}}}\n\n" for i, c in enumerate(CASES))


@pytest.fixture(scope="module")
def inspect_url(tmp_path_factory):
    """The page of CASES built on the runs of tests/test_views_inspector.py, served; its URL."""
    H.require_browser()
    tmp = tmp_path_factory.mktemp("inspect-site")
    runs = tmp / "runs"
    # J at step 0 is float32 rounding noise, at step 4 a small negative number
    write_test_run(runs / "test-grpo", "grpo", objectives={0: 5.274e-10, 4: -0.002958})
    write_test_run(runs / "test-dapo", "dapo")
    write_test_run(runs / "evil", "grpo", hostile=True, run_id="evil")
    fixture = H.REPO / "tests" / "fixtures" / "prime_rl" / "run"
    result = unipo("import", "prime-rl", fixture, "--out", runs / "prime", "--algorithm", "grpo", "--run-id", "prime")
    assert result.returncode == 0, result.stderr
    site = H.build_test_site(tmp, {"index.md": PAGE_SOURCE}, runs)
    with H.serving(site) as url:
        yield url


@pytest.fixture
def inspectors(driver, inspect_url):
    """Load the page and render the inspectors of the given indices (each as a reader scrolling
    to it would); returns the driver. No console errors by the end of the test."""
    def _open(*indices: int):
        driver.get(inspect_url)
        H.wait_rendered(driver)
        assert driver.execute_script("return document.querySelectorAll('.unipo-inspector').length") == len(CASES)
        for i in indices:
            driver.execute_script("document.querySelectorAll('.unipo-inspector')[arguments[0]].scrollIntoView()", i)
            H.wait_js(driver, "return document.querySelectorAll('.unipo-inspector')[arguments[0]]"
                      ".getAttribute('data-ready') === '1'", i, what=f"inspector {i} ({CASES[i]}) rendered")
        return driver

    yield _open
    assert [e["message"] for e in H.console_errors(driver)] == []


_VIEW_JS = """
const c = document.querySelectorAll('.unipo-inspector')[arguments[0]];
const text = s => [...c.querySelectorAll(s)].map(e => e.textContent);
return {
  group: c.getAttribute('data-group'),
  sections: [...c.querySelectorAll('section.unipo-group')].map(g => g.getAttribute('data-key')),
  rows: [...c.querySelectorAll('.unipo-bar-row')].map(r => ({key: r.getAttribute('data-key'),
    detailed: r.getAttribute('data-detailed'), open: r.classList.contains('unipo-bar-row--open')})),
  folded: c.querySelector('.unipo-step-objective').hasAttribute('data-folded'),
  notes: [...c.querySelectorAll('.unipo-bar-note')].map(n => [n.textContent, n.title]),
  zero: text('.unipo-group-note--zero'),
  names: text('.unipo-group-name'),
  facts: text('.unipo-group-head .unipo-fact'),
  sr: text('.unipo-response .unipo-sr'),
  marks: [...c.querySelectorAll('.unipo-response-mark')].map(m => m.className),
  heads: c.querySelectorAll('.unipo-response-head').length,
  tokens: c.querySelectorAll('.unipo-tok').length,
  prompt: text('.unipo-prompt'),
  answer: text('.unipo-answer'),
  j: text('.unipo-step-j strong'),
  why: text('.unipo-step-note summary'),
  text: c.querySelector('.unipo-inspector-body').textContent,
  elements: [...c.querySelectorAll('.unipo-inspector-body *')].map(e => e.tagName.toLowerCase()),
};
"""


def view(driver, i: int) -> dict:
    return driver.execute_script(_VIEW_JS, i)


def unfold(driver, i: int) -> dict:
    driver.execute_script("document.querySelectorAll('.unipo-inspector')[arguments[0]].querySelector('.unipo-bars-toggle').click()", i)
    return view(driver, i)


def test_one_group_token_by_token_and_a_bar_for_every_group_of_the_update(inspectors):
    drv = inspectors(0)
    v = view(drv, 0)
    # one logged group is rendered (the first trained one with a nonzero advantage), token by token
    assert v["sections"] == ["0"] and v["group"] == "0"
    assert v["tokens"] > 0
    # folded, only the open group's bar shows; unfolded, every group of the update, the detailed ones marked
    assert v["folded"] and [r["key"] for r in v["rows"]] == ["0"] and v["rows"][0]["open"]
    rows = unfold(drv, 0)["rows"]
    assert [r["key"] for r in rows] == ["0", "1", "7"]
    assert [r["detailed"] for r in rows] == ["1", "1", None]
    assert "Dropped by the sampling filter before this update (1 logged)" in v["text"]
    # response facts: reward with components, advantage, length (for screen readers and the row's title)
    sr = " | ".join(v["sr"])
    assert "reward 1 (correct 1)" in sr and "advantage +0.5" in sr and "3 tokens" in sr
    assert any("--correct" in m for m in v["marks"]) and any("--wrong" in m for m in v["marks"])
    assert v["heads"] == 1


def test_all_correct_group_contributes_nothing_but_kl(inspectors):
    drv = inspectors(1, 2, 3)
    moment = view(drv, 1)
    assert moment["sections"] == ["1"]
    assert ["advantage 0", "Every answer got the same reward, so the policy gradient gets nothing from this group; only "
            "the KL term \u2212\u03b2\u00b7KL (\u03b2 = 0.04) acts on its tokens."] in moment["notes"]
    assert len(moment["zero"]) == 1 and moment["zero"][0].startswith(
        "Every advantage in this group is 0 (all 2 answers right), so its tokens push nothing through the policy "
        "gradient; its contribution is only the KL term")
    # only the open group's bar shows until the reader unfolds the list (the moment's group here)
    assert moment["folded"] and [(r["key"], r["open"]) for r in moment["rows"]] == [("1", True)]
    plain = view(drv, 2)
    assert plain["zero"] == [] and plain["sections"] == ["0"]  # opens on group 0
    assert [(r["key"], r["open"]) for r in plain["rows"]] == [("0", True)]
    dapo = unfold(drv, 3)
    titles = [title for text, title in dapo["notes"] if text == "advantage 0"]
    assert titles and all(t.endswith("it contributes 0.") and "\u03b2" not in t for t in titles)


def test_a_dropped_groups_moment_folds_every_bar(inspectors):
    drv = inspectors(4)
    v = view(drv, 4)
    assert v["group"] == "1000f" and v["sections"] == ["1000f"]
    assert v["folded"] and v["rows"] == []  # no bar is open: none shows
    assert "Filtered group 1: 0/4 correct, dropped" in v["text"]
    # a dropped group is named by what it is, not by its logged index (1000 and up)
    assert v["names"] == ["Filtered group 1"] and "Group 1000" not in v["text"]


def test_hostile_log_text_is_text(inspectors):
    drv = inspectors(5)
    v = view(drv, 5)
    assert v["prompt"] == ["Prompt " + " ".join(HOSTILE)] and v["answer"] == ["Answer " + HOSTILE[0]]
    assert "img" not in v["elements"] and "script" not in v["elements"]
    # read as logged, escaped exactly once: the reward component's name
    assert any(f"reward 1 ({HOSTILE[0]} 1)" in s for s in v["sr"]) and "&lt;" not in v["text"]


def test_an_imported_log_without_rewards_or_correctness(inspectors):
    """prime-rl's token export records no reward and no correctness: the inspector says so, it does not
    show '0/2 correct' or call the group's answers wrong."""
    drv = inspectors(6)
    v = view(drv, 6)
    assert "correctness not logged" in v["facts"] and "0/2 correct" not in v["text"]
    assert any("reward \u2013 \u00b7 2 tokens" in s for s in v["sr"])  # the response's reward is shown as absent
    assert not any("--wrong" in m for m in v["marks"])


def test_the_step_objective_in_words(inspectors):
    drv = inspectors(2, 7)
    assert view(drv, 2)["j"] == ["J \u2248 0"] and view(drv, 2)["why"] == ["Why is J \u2248 0?"]
    assert view(drv, 7)["j"] == ["J = \u22120.002958"] and view(drv, 7)["why"] == []


# ------------------------------------------- a token's objective not logged, under the run's own clip kind

#: Token 1 of step 4's first response in each run: its ratio made 4 and every advantage -0.5, and
#: (dual-clip, which has a KL in the loss) its reference log-prob ln 2 below its log-prob.
RATIO, ADV, REF_GAP = 4.0, -0.5, math.log(2.0)


@pytest.fixture(scope="module")
def unlogged_url(tmp_path_factory):
    """A dual-clip and a CISPO inspector whose served step has no per-token objective (the schema
    requires one, so the step file is edited after the build, as a trainer's export that left it out
    would reach the browser); the page's URL."""
    H.require_browser()
    tmp = tmp_path_factory.mktemp("unlogged-site")
    runs = tmp / "runs"
    for algorithm in ("dual_clip", "cispo"):
        write_test_run(runs / f"test-{algorithm}", algorithm)
    page = "# Unlogged objectives\n\n" + "".join(
        f'## {a}\n\n{{{{ step_inspector("test-{a}", step=4) }}}}\n\n' for a in ("dual_clip", "cispo"))
    site = H.build_test_site(tmp, {"index.md": page}, runs)
    for algorithm in ("dual_clip", "cispo"):
        path = site / "assets" / "runs" / f"test-{algorithm}" / "steps" / "step_000004.json"
        step = json.loads(path.read_text(encoding="utf-8"))
        for group in step["prompts"]:
            for response in group["responses"]:
                del response["tokens"]["objective"]
        tokens = step["prompts"][0]["responses"][0]["tokens"]
        tokens["logp"][1] = tokens["old_logp"][1] + math.log(RATIO)
        tokens["advantage"] = [ADV] * len(tokens["advantage"])
        if tokens.get("ref_logp"):
            tokens["ref_logp"][1] = tokens["logp"][1] - REF_GAP
        path.write_text(json.dumps(step), encoding="utf-8")
    with H.serving(site) as url:
        yield url


def _readout_sum(driver, index: int) -> dict:
    driver.execute_script("document.querySelectorAll('.unipo-inspector')[arguments[0]].scrollIntoView()", index)
    H.wait_js(driver, "return document.querySelectorAll('.unipo-inspector')[arguments[0]].getAttribute('data-ready') === '1'",
              index, what=f"inspector {index} rendered")
    driver.execute_script("document.querySelectorAll('.unipo-inspector')[arguments[0]].querySelectorAll('.unipo-tok')[1].click()", index)
    H.wait_js(driver, "return document.querySelectorAll('.unipo-inspector')[arguments[0]].querySelector('.unipo-readout-sum')",
              index, what=f"inspector {index}'s objective line")
    return driver.execute_script("""
        const ro = document.querySelectorAll('.unipo-inspector')[arguments[0]].querySelector('.unipo-token-readout');
        const s = ro.querySelector('.unipo-readout-sum');
        const card = ro.querySelector('.unipo-token-card .unipo-num-value[data-key=objective]');
        return {text: s.textContent, value: +s.dataset.value, card: card ? +card.dataset.value : null,
                warn: [...ro.querySelectorAll('.unipo-live-warn')].map(n => n.textContent)};
    """, index)


def test_an_unlogged_objective_is_summed_by_the_runs_own_clip_kind(driver, unlogged_url):
    """A token whose log has no objective: the readout's line recomputes it with the run's clip kind as
    its registry entry says (dual-clip's floor, CISPO's clipped weight), never PPO's min."""
    driver.get(unlogged_url)
    H.wait_rendered(driver)
    # dual-clip, c = 3: max(min(4 x -0.5, 1.2 x -0.5), 3 x -0.5) = max(-2, -1.5) = -1.5 (PPO's min says -2);
    # k3 KL with log pi_ref - log pi = -ln 2: 1/2 + ln 2 - 1; beta 0.04
    dual = _readout_sum(driver, 0)
    kl = 0.5 + REF_GAP - 1.0
    assert dual["value"] == pytest.approx(-1.5 - 0.04 * kl, abs=1e-12)
    assert dual["text"].startswith("Objective, not logged, recomputed from the token\u2019s inputs: ")
    assert "floor c\u00b7\u00c2: 3 \u00d7 \u22120.5 (a negative advantage only) = \u22121.5" in dual["text"]
    assert "the larger of PPO's term and the floor = \u22121.5" in dual["text"]
    assert "minus \u03b2\u00b7KL = 0.04 \u00d7 0.1931" in dual["text"] and dual["text"].endswith("Token objective \u22121.508.")
    # CISPO, eps_high 0.28, no lower bound: w = min(4, 1.28) = 1.28, the term 1.28 x -0.5 = -0.64 (PPO: -2); no KL
    cispo = _readout_sum(driver, 1)
    assert cispo["value"] == pytest.approx(1.28 * ADV, abs=1e-12)
    assert "clipped, held constant = 1.28; \u2113 = w\u00b7\u00c2: 1.28 \u00d7 \u22120.5" in cispo["text"]
    assert cispo["text"].endswith("= \u22120.64. Token objective \u22120.64.")
    for shown in (dual, cispo):
        assert "min(\u03c1\u00c2, clip(\u03c1)\u00c2)" not in shown["text"]
        # the card beside the token says the same number and has nothing it could not compute
        assert shown["card"] == pytest.approx(shown["value"], abs=1e-15)
        assert not any("could not be computed" in w for w in shown["warn"])
    assert [e["message"] for e in H.console_errors(driver)] == []
