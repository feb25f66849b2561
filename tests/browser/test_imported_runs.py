"""A prime-rl run (token export: advantages but no rewards, no correctness) in Chromium: the Step Inspector
renders it, says correctness was not logged, and the Algorithm Explainer shows the token's advantage as
logged instead of recomputing it from rewards the log does not have, without console errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import browser_harness as H  # noqa: E402
from cli_helpers import unipo  # noqa: E402

PAGES = {"index.md": '# Imported\n\n{{ step_inspector("prime") }}\n\n{{ objective_card("grpo", run="prime") }}\n'}


@pytest.fixture(scope="module")
def imported_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("imported-site")
    runs = root / "runs"
    result = unipo("import", "prime-rl", H.REPO / "tests" / "fixtures" / "prime_rl" / "run", "--out", runs / "prime",
                   "--run-id", "prime", "--algorithm", "grpo")
    assert result.returncode == 0, result.stderr
    site = H.build_test_site(root, PAGES, runs)
    with H.serving(site, prefix="/") as url:
        yield url


def test_a_token_of_a_run_without_rewards(imported_site, driver, console_errors):
    from selenium.webdriver.common.by import By

    driver.get(imported_site)
    H.wait_rendered(driver)
    driver.execute_script("document.querySelector('.unipo-inspector').scrollIntoView()")
    H.wait_js(driver, "return document.querySelector('.unipo-inspector').getAttribute('data-ready')")
    head = driver.execute_script("return document.querySelector('.unipo-group-head').textContent")
    assert "correctness not logged" in head and "0/2 correct" not in head
    token = driver.find_elements(By.CSS_SELECTOR, ".unipo-inspector .unipo-tok[role=button]")[0]
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", token)
    token.click()
    H.wait_js(driver, "return document.querySelector('.unipo-explainer').getAttribute('data-live-ready')")
    text = driver.execute_script("return document.querySelector('.unipo-explainer').textContent")
    assert "The log does not record this group's rewards" in text
    assert "NaN" not in text
    assert console_errors(driver) == []
