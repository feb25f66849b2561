"""A kind the browser has never seen is explained from its registry entry alone.

tests/kinds_for_tests.py registers ``group_standardised``, an advantage kind that exists only in
the tests, with its explainer data. A run that uses it (tests/fixtures/unipo/grpo_small.json
through `unipo import unipo`, its configuration naming the test kind) is built by `unipo explain`;
in Chromium a clicked token fills the Algorithm Explainer's advantage block with the kind's own
sentence and rows, filled from the token's log, with explainer.js unchanged (it names no kind).
(tests/test_registry.py: the same kind without explainer data stops the build with one line.)
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

import browser_harness as H
from unipo_build.site import explain
from unipo_build.core import registry
from unipo_build.trainers import import_log

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import kinds_for_tests as K  # noqa: E402 (the tests' own module, tests/)

pytestmark = pytest.mark.browser

TESTS = Path(__file__).resolve().parents[1]
FIXTURE = TESTS / "fixtures" / "unipo" / "grpo_small.json"
EXPLAINER_JS = TESTS.parent / "unipo_build" / "site" / "views" / "explainer" / "explainer.js"


def _run_using_the_test_kind(root: Path) -> Path:
    """The fixture imported, its configuration's advantage switched to the test kind."""
    run = root / "runs" / "grpo_small"  # its run id, from the fixture
    import_log("unipo", FIXTURE, run)
    header = json.loads((run / "header.json").read_text(encoding="utf-8"))
    header["algorithm_config"]["components"]["advantage"]["kind"] = K.NAME
    (run / "header.json").write_text(json.dumps(header), encoding="utf-8")
    return run


@pytest.fixture(scope="module")
def standardised_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("kind-from-data")
    server = H.SiteServer(root / "site", prefix="/")
    with registry.scoped():
        K.register_standardised()
        run = _run_using_the_test_kind(root)
        explain.build([run], root / "site", site_url=server.url)
    with server as url:
        yield root / "site", url


def test_a_token_of_a_run_using_a_new_kind_is_explained_from_its_data(standardised_site, driver):
    site, url = standardised_site
    # explainer.js is the project's, unchanged: the new kind's name is nowhere in it
    shipped = (site / "assets" / "views" / "explainer.js").read_text(encoding="utf-8")
    assert EXPLAINER_JS.read_text(encoding="utf-8") in shipped and K.NAME not in shipped
    card = H.explain_first_token(driver, url + "runs/grpo_small/", "grpo_small")
    block = driver.execute_script(f"return {card}.querySelector('.unipo-live[data-live=\"advantage\"]').textContent")
    # Step 0, group 0 of the fixture: rewards 1 and 0; this response's reward is 1. The kind's
    # sentence, filled in the browser: mean 0.5; sample std (n - 1) sqrt(0.5) = 0.7071; eps 1e-6.
    assert ("Test kind: the 2 rewards of this group (1, 0) are standardised, this response's reward 1 "
            "against their mean 0.5.") in block, block
    assert "spread of the group" in block and "std with n \u2212 1 in the divisor" in block
    assert "standardised: (1 \u2212 0.5) / (0.7071 + 1 \u00d7 10\u207b\u2076)" in block, block
    assert "\u2713 equals the log" in block  # 0.5 / (0.7071068 + 1e-6) = 0.7071058, logged 0.7071068
    values = driver.execute_script(f"""const out = {{}};
        for (const el of {card}.querySelectorAll('.unipo-live[data-live="advantage"] .unipo-num-value[data-key]'))
          out[el.dataset.key] = +el.dataset.value;
        return out;""")
    assert values["reward_std"] == pytest.approx(0.5 ** 0.5, abs=1e-12)
    assert values["advantage"] == pytest.approx(0.5 / (0.5 ** 0.5 + 1e-6), abs=1e-12)
    # the other blocks are the shipped kinds' (GRPO's ratio, clip, KL, weight), as before
    weight = driver.execute_script(f"return {card}.querySelector('.unipo-live[data-live=\"aggregation\"]').textContent")
    assert re.search(r"1 / \(N \u00b7 \|o\u1d62\|\) = 1 / \(2 \u00d7 2\)", weight), weight
    assert H.console_errors(driver) == []
