"""Issue 29's new kinds explained in Chromium from their registry data alone: a run whose configuration
uses the batch-std advantage, GMPO's geometric mean and the filter that masks truncated responses.

The fixture (tests/fixtures/unipo/grpo_small.json through `unipo import unipo`) is GRPO's; its step 0
has every ratio 1, where GMPO's term equals PPO's (log rho 0, geometric mean 1, the term is A), so
switching its configuration's kinds keeps its logged numbers right. A clicked token fills each block
with the kind's own rows, computed in the browser from the token's log; explainer.js names none of them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import browser_harness as H
from unipo_build.site import explain
from unipo_build.trainers import import_log

pytestmark = pytest.mark.browser

TESTS = Path(__file__).resolve().parents[1]
FIXTURE = TESTS / "fixtures" / "unipo" / "grpo_small.json"
EXPLAINER_JS = TESTS.parent / "unipo_build" / "site" / "views" / "explainer" / "explainer.js"
KINDS = {"advantage": ("group_mean_batch_std", {"std_ddof": 1, "eps": 1e-4}),
         "clip": ("geo_mean", {"eps_low": 0.4, "eps_high": 0.4}),
         "filter": ("mask_truncated", {"count_masked": True})}


@pytest.fixture(scope="module")
def new_kinds_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("new-kinds")
    run = root / "runs" / "grpo_small"
    import_log("unipo", FIXTURE, run)
    header = json.loads((run / "header.json").read_text(encoding="utf-8"))
    for slot, (kind, params) in KINDS.items():
        header["algorithm_config"]["components"][slot] = {"kind": kind, "params": params}
    (run / "header.json").write_text(json.dumps(header), encoding="utf-8")
    server = H.SiteServer(root / "site", prefix="/")
    explain.build([run], root / "site", site_url=server.url)
    with server as url:
        yield root / "site", url


def _block(driver, card: str, slot: str) -> str:
    return driver.execute_script(f"return {card}.querySelector('.unipo-live[data-live=\"{slot}\"]').textContent")


def _values(driver, card: str, slot: str) -> dict:
    return driver.execute_script(f"""const out = {{}};
        for (const el of {card}.querySelectorAll('.unipo-live[data-live="{slot}"] .unipo-num-value[data-key]'))
          out[el.dataset.key] = +el.dataset.value;
        return out;""")


def test_a_token_is_explained_by_the_new_kinds_data(new_kinds_site, driver):
    site, url = new_kinds_site
    shipped = (site / "assets" / "views" / "explainer.js").read_text(encoding="utf-8")
    source = EXPLAINER_JS.read_text(encoding="utf-8")
    assert source in shipped and not any(kind in source for kind, _ in KINDS.values())
    card = H.explain_first_token(driver, url + "runs/grpo_small/", "grpo_small")
    # Step 0, group 0: rewards 1 and 0, this response's 1, logged advantage 0.7071068. Batch std: r - mean = 0.5,
    # the divisor read back 0.5 / 0.7071068 = 0.7071067; the group z-score would give 0.5 / (0.7071068 + 1e-4).
    advantage = _block(driver, card, "advantage")
    assert "batch std + ε" in advantage and "sample std of every reward in the batch" in advantage, advantage
    assert "The group z-score would divide by this group's own std, 0.7071" in advantage, advantage
    values = _values(driver, card, "advantage")
    assert values["centred"] == pytest.approx(0.5, abs=1e-12)
    assert values["batch_scale"] == pytest.approx(0.5 / 0.7071068, abs=1e-9)
    assert values["advantage"] == pytest.approx(0.7071068, abs=1e-9)
    # GMPO at ratio 1: log rho 0, c = min(0, 0.4) = 0, geometric mean exp(0) = 1, term = A
    clip = _block(driver, card, "clip")
    assert "clipped log-ratio c" in clip and "min(log ρ, 0.4), for Â > 0" in clip, clip
    values = _values(driver, card, "clip")
    assert values["log_ratio"] == 0 and values["clipped_log_ratio"] == 0
    assert values["geo_ratio"] == pytest.approx(1.0, abs=1e-12)
    assert values["surrogate"] == pytest.approx(0.7071068, abs=1e-9)
    # the filter: this response finished, so it is trained on
    assert "This response finished within the budget: it is trained on." in _block(driver, card, "filter")
    assert H.console_errors(driver) == []
