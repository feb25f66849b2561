"""The Step Inspector's one rendering, in a real browser, on the runs of tests/test_views_inspector.py.

The build sends the inspector's data and an empty body (site/views/inspector/inspector.py);
inspector.js renders the step: the group bars, the open group, its responses and the notes. These
tests hold that rendering to what the build's copy of it used to be checked for (issue 31: one
view, one rendering): which group opens, the bars of every group of the update, the zero-advantage
notes, dropped groups, an imported log without correctness, J near zero, and hostile log text.
"""

from __future__ import annotations

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
