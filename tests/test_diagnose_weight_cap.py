"""Issue 44 item 2's diagnosis: a trainer that capped every token's importance weight at or below 1 (TRL's CISPO with
epsilon_high unset caps at epsilon's 0.2), which no clip kind expresses, is told so by the which-side card: the share
of the token files' tokens whose ratio passed the cap (each one's weight held below its ratio), counted from the run,
and what the trainer's documentation recommends (the import records both in ``imported_from.weight_cap``). The
import's side and a real TRL run are in tests/test_trl_import.py and tests/test_trl_run.py."""

from __future__ import annotations

import json
from pathlib import Path

from helpers_runlog import make_detail, write_metric_run
from unipo_build.core.diagnose import FINE, LOOK, diagnose

ADVICE = "TRL's GRPOConfig documentation recommends epsilon_high 5.0 for loss_type 'cispo' (the ScaleRL paper's cap)"
GAP = {"setting": "epsilon_high", "value": "0.2 with loss_type 'cispo'", "slot": "clip",
       "nearest": "cispo with eps_high 0.28"}
LEAD = ("above the cap, whatever the advantage's sign: the trainer capped the importance weight at 0.2 (epsilon_high = "
        "0.2, a cap no clip kind expresses), so a token's weight min(ratio, 0.2) is below its ratio wherever the ratio "
        "is above 0.2; ")
TAIL = (": their gradient is 0.2 \u00d7 A \u00d7 \u2207log \u03c0 whatever their ratio, the policy gradient scaled down "
        "rather than guarded against large ratios; " + ADVICE)


def healthy(f: float, rng) -> dict:
    return {"reward/mean": 0.3 + 0.2 * f + 0.01 * rng.standard_normal(), "reward/std": 0.3, "grad_norm": 0.5,
            "entropy/mean": 1.0 - 0.4 * f, "clip/frac_low": None, "clip/frac_high": 0.45, "length/mean": 30.0,
            "length/truncated_frac": 0.01, "groups/zero_variance_frac": 0.2}


def capped_run(path: Path, details=None, cap: object = 0.2) -> dict:
    run = write_metric_run(path, "cispo", metrics=healthy, details=details)
    header = json.loads((run / "header.json").read_text())
    header["imported_from"] = {"format": "trl", "path": "x", "gaps": [GAP],
                               "weight_cap": {"setting": "epsilon_high", "cap": cap, "advice": ADVICE}}
    (run / "header.json").write_text(json.dumps(header))
    return {d.key: d for d in diagnose(run)}


def test_the_share_of_tokens_above_the_cap_is_counted_from_the_token_files(tmp_path):
    """Two token files, make_detail's groups of 3 + 4 and 2 + 5 tokens. Step 0: every ratio 1 (14 tokens above 0.2).
    Step 10: group 0's 7 tokens at ratio 0.1 but one at exactly 0.2 (min(0.2, 0.2) is its ratio: not held below
    it), group 1's at 1.0 but its last token outside the objective (mask 0, ratio 0). Counted: 14 + 6 = 20 of
    14 + 7 + 6 = 27 tokens in the objective, 74.1%; both steps show it."""
    at_10 = make_detail(10)
    group0, group1 = at_10.prompts
    for r in group0.responses:
        r.tokens.ratio = [0.1] * len(r.tokens.ratio)
    group0.responses[0].tokens.ratio[1] = 0.2
    last = group1.responses[1].tokens
    last.mask[-1], last.ratio[-1] = 0, 0.0
    found = capped_run(tmp_path / "run", {0: make_detail(0), 10: at_10})
    side = found["which_side"]
    assert side.verdict == LOOK
    assert side.figure == LEAD + "74.1% of the 27 tokens in the token files (20) had a ratio above it" + TAIL
    assert side.steps == [0, 10]
    # the clip_ratio question keeps the run's components' words and says whose they are (b88ac3d)
    assert found["clip_zero"].figure.endswith("these words are the run's components', cispo with eps_high 0.28)")


def test_every_token_above_the_cap_and_a_run_without_token_files(tmp_path):
    every = capped_run(tmp_path / "every", {0: make_detail(0)})["which_side"]
    assert every.figure == LEAD + "every one of the 14 tokens in the token files had a ratio above it" + TAIL
    blind = capped_run(tmp_path / "blind")["which_side"]
    assert blind.verdict == LOOK and blind.steps == []
    assert blind.figure == (LEAD + "at a rollout's first update every token's ratio is 1, above it (no token file to "
                                   "count the others)" + TAIL)


def test_a_cap_above_one_or_a_malformed_record_is_the_kinds_question(tmp_path):
    """A cap above 1 is the cispo kind's (asked in its terms), and a record without a number in (0, 1] is not read:
    the which-side card is then the ordinary one, CISPO's one fraction, with the clip gap's words."""
    for name, cap in (("above", 5.0), ("text", "0.2"), ("zero", 0.0), ("flag", True)):
        side = capped_run(tmp_path / name, cap=cap)["which_side"]
        assert side.figure.startswith("high side (A > 0, ratio above the cap 1.28)"), side.figure
        assert "a cap no clip kind expresses" not in side.figure


def test_a_run_without_the_record_keeps_its_answer(tmp_path):
    run = write_metric_run(tmp_path / "plain", "cispo", metrics=lambda f, rng: {**healthy(f, rng),
                                                                                 "clip/frac_high": 0.01})
    side = {d.key: d for d in diagnose(run)}["which_side"]
    assert side.verdict == FINE and "the trainer capped" not in side.figure


def test_the_explain_page_shows_the_card(tmp_path):
    """The recorded TRL CISPO run (tests/fixtures/trl/cispo, cap 1.02) with its tap's epsilon_high set to 0.2, what
    the tap records for epsilon_high unset: its run page's diagnosis has the card, counted from its 126 tapped
    tokens, with TRL's recommendation."""
    import shutil

    from test_explain import page_text
    from unipo_build.site import explain
    from unipo_build.trainers import import_log

    fixtures = Path(__file__).resolve().parent / "fixtures" / "trl"
    tap = tmp_path / "cispo-tap"
    shutil.copytree(fixtures / "cispo-tap", tap)
    manifest = json.loads((tap / "manifest.json").read_text())
    manifest["trainer"]["epsilon_high"] = 0.2
    (tap / "manifest.json").write_text(json.dumps(manifest))
    run = tmp_path / "runs" / "cispo"
    import_log("trl", fixtures / "cispo", run, tap=tap)
    explain.build([run], tmp_path / "site")
    text = page_text(tmp_path / "site" / "runs" / "cispo" / "index.html")
    card = text[text.index("Which side clipped?"):]
    assert card.index("the trainer capped the importance weight at 0.2 (epsilon_high = 0.2") < card.index(
        "every one of the 126 tokens in the token files had a ratio above it") < card.index(ADVICE)
