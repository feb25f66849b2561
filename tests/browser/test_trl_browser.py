"""A real TRL GRPOTrainer run in the views: trained on CPU with the UNIPO tap (tests/trl_support.py),
imported with `unipo import trl`, built into a page with its Step Inspector and Algorithm Explainer,
opened in Chromium. Clicking its tokens fills the explainer, whose recomputation equals the log, and
the numbers shown are the imported token file's (which tests/test_trl_run.py holds to TRL's own loss
terms).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import browser_harness as H

pytestmark = pytest.mark.browser

if os.environ.get("UNIPO_REQUIRE_TRL") != "1":
    pytest.importorskip("trl", reason="TRL is not installed (pip install -e '.[trl]')")

REPO = Path(__file__).resolve().parents[2]
RUN = "trl-grpo"


@pytest.fixture(scope="module")
def trl_site(tmp_path_factory, trl_grpo_run):
    root = tmp_path_factory.mktemp("trl-site")
    runs = root / "runs"  # the session's TRL run (tests/conftest.py), the one tests/test_trl_run.py checks
    proc = subprocess.run([sys.executable, "-m", "unipo_build.cli.main", "import", "trl",
                           str(trl_grpo_run / "trl-output"), "--tap", str(trl_grpo_run / "tap"),
                           "--out", str(runs / RUN), "--run-id", RUN],
                          cwd=REPO, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 0, proc.stderr
    pages = {"index.md": "# TRL\n",
             f"{RUN}.md": f'# {RUN}\n\n{{{{ step_inspector("{RUN}") }}}}\n\n{{{{ objective_card("grpo", run="{RUN}") }}}}\n'}
    site = H.build_test_site(root / "build", pages, runs)
    with H.serving(site, prefix="/") as url:
        yield url, site


def _wait(driver, js: str, what: str, timeout: float = 30.0):
    return H.wait_js(driver, js, timeout=timeout, what=what)


def test_a_trl_run_opens_in_the_step_inspector_and_explainer(trl_site, driver, console_errors):
    from test_inspector import _click, _explainer_values, _find

    from unipo_build.core.numbers import fmt_num

    url, site = trl_site
    driver.get(f"{url}{RUN}/")
    _wait(driver, "return document.querySelector('.unipo-inspector') && "
                  "(document.querySelector('.unipo-inspector').scrollIntoView() || true) && "
                  "document.querySelector('.unipo-inspector').getAttribute('data-ready')", "inspector ready")
    step = driver.execute_script("return +document.querySelector('.unipo-inspector').dataset.step")
    detail = json.loads((site / "assets" / "runs" / RUN / "steps" / f"step_{step:06d}.json").read_text())
    n = driver.execute_script("return document.querySelectorAll('.unipo-inspector .unipo-tok').length")
    assert n > 10
    for index in sorted({0, n // 2, n - 1}):
        driver.execute_script("document.querySelector('.unipo-explainer').removeAttribute('data-live-ready')")
        _click(driver, ".unipo-inspector .unipo-tok", index)
        _wait(driver, "return document.querySelector('.unipo-explainer').getAttribute('data-live-ready')",
              f"explainer for token {index}")
        pick = driver.execute_script(
            "const t = document.querySelectorAll('.unipo-inspector .unipo-tok')[arguments[0]];"
            "return {g: +t.dataset.g, r: +t.dataset.r, t: +t.dataset.t};", index)
        tokens = _find(detail, pick["g"], pick["r"])["tokens"]
        shown = _explainer_values(driver)
        for key in ("ratio", "objective", "logp", "old_logp", "advantage", "weight"):
            text, full = shown[key]
            assert text == fmt_num(tokens[key][pick["t"]], 4), (key, text)
        notes = driver.execute_script(
            "return [...document.querySelectorAll('.unipo-explainer .unipo-num-note')].map(e => e.textContent)")
        warnings = driver.execute_script(
            "return [...document.querySelectorAll('.unipo-explainer .unipo-live-warn')].map(e => e.textContent)")
        assert notes and all("equals the log" in note for note in notes), notes
        assert warnings == []
    assert console_errors(driver) == []
