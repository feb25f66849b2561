"""`unipo explain` in Chromium: the site built around an imported run (tests/fixtures/unipo/grpo_small.json
through `unipo import unipo`) opens its Step Inspector, a clicked token fills the Algorithm Explainer
with that token's logged numbers, and the chapter of its spec shows the run; no console errors.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

import browser_harness as H
from unipo_build.site import explain
from unipo_build.trainers import import_log

pytestmark = pytest.mark.browser

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "unipo" / "grpo_small.json"


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    """The explain site of the imported run, served at the address it was built for."""
    root = tmp_path_factory.mktemp("explain-browser")
    run = root / "runs" / "grpo_small"
    import_log("unipo", FIXTURE, run)
    server = H.SiteServer(root / "site", prefix="/")
    explain.build([run], root / "site", site_url=server.url)
    with server as url:
        yield run, url


def _open(driver, url: str) -> None:
    driver.get(url)
    H.wait_rendered(driver)


def test_run_page_inspector_fills_the_explainer_with_the_logged_token(explained, driver):
    run, url = explained
    _open(driver, url + "runs/grpo_small/")
    driver.execute_script("document.querySelector('.unipo-inspector').scrollIntoView()")
    H.wait_js(driver, "return document.querySelector('.unipo-inspector').getAttribute('data-ready') === '1'",
          what="the Step Inspector")
    pick = driver.execute_script("""
        const insp = document.querySelector('.unipo-inspector');
        const toks = [...insp.querySelectorAll('.unipo-tok')].filter(t => t.getClientRects().length > 0);
        const t = toks[0];
        t.scrollIntoView({block: 'center'});
        return {g: +t.dataset.g, r: +t.dataset.r, t: +t.dataset.t, step: +insp.dataset.step, run: insp.dataset.run,
                n: toks.length};""")
    assert pick["run"] == "grpo_small" and pick["n"] >= 2
    token = driver.find_elements(By.CSS_SELECTOR, ".unipo-inspector .unipo-tok")[0]
    token.click()
    card = "document.querySelector('.unipo-explainer[data-run=\"grpo_small\"]')"
    H.wait_js(driver, f"return {card}.getAttribute('data-live-ready')", what="the Algorithm Explainer")
    shown = driver.execute_script(f"""
        const out = {{}};
        for (const el of {card}.querySelectorAll('.unipo-num-value[data-key]')) out[el.dataset.key] = +el.dataset.value;
        return out;""")
    detail = json.loads((run / "tokens" / f"step_{pick['step']:06d}.json").read_text())
    group = next(p for p in detail["prompts"] if p["index"] == pick["g"] and not p.get("filtered"))
    tokens = next(r for r in group["responses"] if r["index"] == pick["r"])["tokens"]
    for key in ("ratio", "logp", "old_logp", "weight"):
        assert shown[key] == pytest.approx(tokens[key][pick["t"]], rel=1e-6, abs=1e-9), key
    # the advantage is recomputed from the group's rewards (1, 0): 0.5 / (std 0.7071068 + eps 1e-6),
    # which the fixture rounds to 7 digits
    assert shown["advantage"] == pytest.approx(0.5 / (0.5 ** 0.5 + 1e-6), abs=1e-9)
    assert tokens["advantage"][pick["t"]] == pytest.approx(shown["advantage"], abs=2e-6)
    # The fixture logs token_objective 0.69 for this token (step 0, group 0, answer 0, token 0), which
    # is not what GRPO's objective gives: ratio 1 x advantage 0.7071068 - beta 0.04 x k3 0.0288008
    # (log r = -0.25: expm1(-0.25) + 0.25) = 0.7059548. The card shows the recomputation and says
    # that the log differs: the practitioner sees the disagreement instead of their number repeated.
    assert (pick["step"], pick["g"], pick["r"], pick["t"]) == (0, 0, 0, 0) and tokens["objective"][0] == 0.69
    assert shown["objective"] == pytest.approx(0.7071068 - 0.04 * 0.0288008, abs=1e-6)
    notes = driver.execute_script(f"return [...{card}.querySelectorAll('.unipo-num-note')].map(e => e.textContent)")
    assert [n.strip() for n in notes].count("\u2717 differs from the log (0.69)") == 1, notes
    assert sum(n.strip() == "\u2713 equals the log" for n in notes) == len(notes) - 1, notes
    assert H.console_errors(driver) == []


def test_chapter_of_the_nearest_spec_shows_the_run(explained, driver):
    _, url = explained
    _open(driver, url + "course/algorithms/grpo/")
    assert driver.execute_script("return document.querySelector('.unipo-explorer[data-run]').dataset.run") == \
        "grpo_small"
    offsite = driver.execute_script("return document.querySelectorAll('.unipo-offsite').length")
    assert offsite > 0 and driver.execute_script(
        "return [...document.querySelectorAll('article a[href]')].filter(a => /\\.md(#|$)/.test(a.getAttribute('href'))).length") == 0
    assert H.console_errors(driver) == []
