"""A log full of markup and template syntax is shown as text: no script runs, no template is evaluated.

The test builds its own small site (a MkDocs config in tmp_path that reuses the repository's
theme, hooks and macros) from a run written with tests/helpers_runlog.py whose prompts, answers,
token strings, response texts, reward component names and run title hold hostile strings, and
opens it in Chromium: the Step Inspector (server HTML, then the interactive view built from the
fetched token file), a token selection (the readout and the Algorithm Explainer's cards).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import browser_harness as H
from helpers_runlog import make_detail, make_header, make_step
from unipo_build.core.runlog import RunWriter

pytestmark = pytest.mark.browser

FLAG_IMG = "<img src=x onerror=window.__unipoXss=1>"
FLAG_SVG = "<svg onload=window.__unipoXss=2>"
HOSTILE = [
    "<img src=x onerror=alert(1)>",
    "</script><script>alert(1)</script>",
    "{{ 7*7 }}",
    "{% raw %}",
    FLAG_IMG,
    FLAG_SVG,
    "</template><img src=x onerror=alert(1)>",
    '"><b>bold</b>',
]
PROMPT = " | ".join(HOSTILE)


def write_hostile_run(run_dir: Path) -> None:
    header = make_header("grpo", run_id="evil", title="Run " + HOSTILE[0] + HOSTILE[2])
    writer = RunWriter(run_dir, header)
    for step in range(2):
        detail = make_detail(step, lengths=((8, 8), (4, 5)))
        for group in detail.prompts:
            group.prompt = PROMPT
            group.answer = HOSTILE[1]
            for response in group.responses:
                response.tokens.text = [HOSTILE[t % len(HOSTILE)] for t in range(len(response.tokens.ids))]
                response.text = "".join(response.tokens.text)
                response.reward_components = {HOSTILE[0]: response.reward}
        writer.step_detail(detail)
        writer.step(make_step(step, has_tokens=True))
    writer.finish()


PAGE = """# A hostile log

{{ step_inspector("evil") }}

{{ objective_card("grpo", run="evil") }}
"""


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    write_hostile_run(root / "runs" / "evil")
    site = H.build_test_site(root, {"index.md": PAGE}, root / "runs")
    with H.serving(site, prefix="/") as url:
        yield site, url


def _no_alert(driver) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018


def test_built_html_holds_the_hostile_strings_only_as_text(hostile_site):
    site, _ = hostile_site
    html = (site / "index.html").read_text(encoding="utf-8")
    for raw in ("<img src=x", "<svg onload", "<script>alert", "</template><img", "<b>bold</b>"):
        assert raw not in html, raw
    # The template syntax reached the page unevaluated (as text, not 49): the run's title is in the
    # built HTML. The prompt (holding "{% raw %}" too) is drawn by the inspector from the step file,
    # which serves it as logged; the next test sees the browser show it literally.
    assert "{{ 7*7 }}" in html
    token_file = (site / "assets" / "runs" / "evil" / "steps" / "step_000000.json").read_text(encoding="utf-8")
    assert "<img src=x onerror=alert(1)>" in token_file  # the data itself is served as it was logged (JSON)
    assert "{% raw %}" in token_file and "{{ 7*7 }}" in token_file


def test_hostile_log_runs_no_script_and_shows_text_literally(hostile_site, driver):
    from selenium.webdriver.common.by import By

    _, url = hostile_site
    driver.get(url)
    ready = H.wait_js(driver, "const i = document.querySelector('.unipo-inspector');"
                              "return i && i.getAttribute('data-ready');", timeout=30, what="the inspector")
    assert ready == "1", "the inspector did not load the hostile step"
    _no_alert(driver)
    assert driver.execute_script("return window.__unipoXss") is None
    # no element came out of the log text: no image, no bold, no element with an inline handler
    assert driver.execute_script("return document.querySelectorAll('img[src=\"x\"], .md-content img, .md-content b,"
                                 " [onerror], [onload]').length") == 0
    texts = driver.execute_script("""return {
        prompt: document.querySelector('.unipo-inspector .unipo-prompt').textContent,
        answer: document.querySelector('.unipo-inspector .unipo-answer').textContent,
        tokens: [...document.querySelectorAll('.unipo-inspector .unipo-tok')].slice(0, 8).map(t => t.textContent),
        aria: document.querySelector('.unipo-inspector .unipo-tok').getAttribute('aria-label'),
        caption: document.querySelector('.unipo-inspector-caption').textContent,
        meta: document.querySelector('.unipo-inspector .unipo-response-meta').textContent};""")
    assert texts["prompt"] == "Prompt " + PROMPT
    assert texts["answer"] == "Answer " + HOSTILE[1]
    assert texts["tokens"] == HOSTILE
    assert HOSTILE[0] in texts["aria"]
    assert HOSTILE[0] + HOSTILE[2] in texts["caption"]
    assert f"({HOSTILE[0]} " in texts["meta"]  # the reward component's name
    # Select hostile tokens: the readout and the explainer's cards print them as text.
    for index in (0, 1, 2):
        token = driver.find_elements(By.CSS_SELECTOR, ".unipo-inspector .unipo-tok")[index]
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", token)
        token.click()
        H.wait_js(driver, "return document.querySelector('.unipo-explainer').getAttribute('data-live-ready')",
                  timeout=15, what=f"the explainer for token {index}")
        where = driver.execute_script("return document.querySelector('.unipo-explainer .unipo-live-where').textContent")
        # named as every view names a token (site/browser.py token_label: a space as ·), between
        # the bidi isolates U+2068 and U+2069 (render.isolate / V.isolate)
        from unipo_build.site.browser import token_label
        assert f"token {index} {token_label(HOSTILE[index])}" in where
        readout = driver.execute_script("return document.querySelector('.unipo-readout-token').textContent")
        assert readout == token_label(HOSTILE[index])
    # Raw-token mode rewrites every token's text: still text.
    button = driver.find_element(By.CSS_SELECTOR, ".unipo-inspector .unipo-mode-btn[data-mode=tokens]")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
    button.click()
    shown = driver.execute_script("return document.querySelector('.unipo-inspector .unipo-tok').textContent")
    assert shown == HOSTILE[0].replace(" ", "\u00b7")
    # Nothing the rewrite made can run later: no element with a handler, no image, no bold (an
    # injected <img onerror> would fire only once its request failed); and nothing ran on the frames
    # that drew it.
    H.next_frame(driver, 2)
    assert driver.execute_script("return document.querySelectorAll('img[src=\"x\"], .md-content img, .md-content b,"
                                 " [onerror], [onload]').length") == 0
    _no_alert(driver)
    assert driver.execute_script("return window.__unipoXss") is None
    assert H.console_errors(driver) == []
