"""`unipo import ... --algorithm SPEC` as the explain page shows it (issue 44 item 2): the run holds the spec's
components, every slot the trainer ran otherwise is marked with what it ran, and the page never says the run trained
"exactly" the spec unless there is no such slot and the trainer's settings were there to compare."""

from __future__ import annotations

from pathlib import Path

from test_explain import compare_view_data, page_text
from unipo_build.site import explain
from unipo_build.trainers import import_log

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_algorithm_option_shows_every_setting_the_trainer_ran_otherwise(tmp_path):
    """`unipo import trl ... --algorithm cispo` on a TRL CISPO run (cap 1.02, beta 0.04, no filter or shaping, TRL's
    std + 1e-4): the run holds the spec's components, and the page never says it trained "exactly" the spec: the five
    slots TRL ran otherwise are marked, each row saying what TRL ran (issue 44 item 2). Without the tap TRL's settings
    are not recorded, and the page says so instead."""
    run = tmp_path / "runs" / "as-cispo"
    import_log("trl", FIXTURES / "trl" / "cispo", run, tap=FIXTURES / "trl" / "cispo-tap", algorithm="cispo")
    explain.build([run], tmp_path / "site")
    raw = (tmp_path / "site" / "runs" / "as-cispo" / "index.html").read_text()
    text = page_text(tmp_path / "site" / "runs" / "as-cispo" / "index.html")
    assert "exactly" not in text
    assert "The run trained 5 slots differently from the CISPO spec" in text
    assert "Slots marked where the trainer ran other settings than the spec named with --algorithm" in text
    gaps = compare_view_data(raw)["gaps"]
    assert sorted(gaps) == ["advantage", "clip", "filter", "kl", "shaping"]
    assert gaps["kl"] == ["ran beta = in_loss (beta 0.04, estimator k3); the run's components hold --algorithm's "
                          "cispo's none"]
    assert gaps["clip"] == ["ran loss_type = cispo (eps_high 0.02, eps_low None); the run's components hold "
                            "--algorithm's cispo's cispo (eps_high 0.28, eps_low None)"]

    unchecked = tmp_path / "runs" / "no-tap"
    import_log("trl", FIXTURES / "trl" / "run1", unchecked, algorithm="grpo")
    explain.build([unchecked], tmp_path / "site-no-tap")
    text = page_text(tmp_path / "site-no-tap" / "runs" / "no-tap" / "index.html")
    assert "exactly" not in text
    assert ("The log does not record the trainer's settings: the run is shown with the GRPO spec's components "
            "(imported with --algorithm), which it may not have trained.") in text
