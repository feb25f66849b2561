"""Training Explorer at build time: one streaming pass, payload, spec, HTML, errors, hook."""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

import numpy as np
import pytest

from helpers_runlog import CREATED, make_detail, make_eval, make_header
from unipo_build.core import runlog, runs
from unipo_build.core.runlog import RunWriter, dumps
from unipo_build.core.schema import StepRecord
from unipo_build.site.palette import metric_colour
from unipo_build.site.views.explorer import explorer
from unipo_build.site.browser import step_path
from unipo_build.site.site_data import publish_runs

SPIKE_AT = 700


def explorer_metrics(step: int, n_steps: int) -> dict[str, float | None]:
    """Plausible training curves with one outlier in clip/frac_high (a robust-scale case)."""
    t = step / max(1, n_steps - 1)
    wobble = math.sin(step * 0.37) * 0.5 + math.sin(step * 0.051) * 0.5
    clip = 0.004 + 0.002 * wobble * wobble
    if step == SPIKE_AT:
        clip = 0.25
    return {
        "reward/mean": round(0.30 + 0.25 * t + 0.05 * wobble, 5),
        "length/mean": round(19.0 - 4.0 * t + 1.5 * wobble, 4),
        "clip/frac_high": round(clip, 6),
        "kl/mean": round(0.002 + 0.03 * t * t, 6),
        "entropy/mean": round(1.2 - 0.5 * t + 0.02 * wobble, 5),
        "loss/policy": round(-0.01 * wobble, 6),
        "length/correct": None if step < 100 else round(17.0 - 3.0 * t, 4),
        "custom/score": round(2 * t, 4),
    }


def write_explorer_run(run_dir: Path, *, n_steps: int = 1200, steps_per_rollout: int = 2, token_every: int = 50,
                       run_id: str = "test-grpo", algorithm: str = "grpo", title: str | None = None) -> Path:
    """A run with n_steps steps, token files every ``token_every`` steps and five evaluations.

    Steps are written in one go (RunWriter fsyncs every line, which is slow for a thousand).
    """
    header = make_header(algorithm, run_id=run_id, title=title, steps_per_rollout=steps_per_rollout)
    writer = RunWriter(run_dir, header)
    token_steps = set(range(0, n_steps, token_every))
    lines = []
    for s in range(n_steps):
        record = StepRecord(step=s, rollout=s // steps_per_rollout, first_in_rollout=s % steps_per_rollout == 0,
                            metrics=explorer_metrics(s, n_steps), has_tokens=s in token_steps)
        lines.append(dumps(record) + "\n")
    (run_dir / runlog.STEPS).write_text("".join(lines), encoding="utf-8")
    for s in sorted(token_steps):
        writer.step_detail(make_detail(s, rollout=s // steps_per_rollout))
    eval_steps = [0, n_steps // 4, n_steps // 2, 3 * n_steps // 4, n_steps]
    for i, s in enumerate(eval_steps):
        record = make_eval(s, "start" if i == 0 else "end" if i == len(eval_steps) - 1 else "periodic")
        record = record.model_copy(update={"accuracy_greedy": round(0.4 + 0.03 * i, 4)})
        writer.eval(record)
    writer.finish(finished_at=CREATED)
    return run_dir


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    write_explorer_run(root / "grpo-run")
    broken = root / "broken-run"
    write_explorer_run(broken, n_steps=20, run_id="broken", token_every=10)
    with (broken / runlog.STEPS).open("a", encoding="utf-8") as fh:
        fh.write('{"step": 20, "rollout": 10, "first_in_rollout": true, "metrics": {"reward/mean": "high"}}\n')
    return root


@pytest.fixture(scope="module")
def loaded(runs_root) -> dict[str, runs.Run]:
    return {r.path.name: r for r in runs.discover(runs_root)}


def _payload(html: str) -> dict:
    match = re.search(r'<template class="unipo-data" id="[^"]*-data" data-search-exclude>(.*?)</template>', html, re.S)
    assert match, "no explorer data in the HTML"
    return json.loads(match.group(1))


def _undelta(values):
    return list(np.cumsum(values))


# ---------------------------------------------------------------- streaming pass


def test_collect_series_matches_a_plain_read(loaded):
    run = loaded["grpo-run"]
    series = explorer.collect_series(run.path)
    assert (series.first_step, series.last_step, series.n_steps) == (0, 1199, 1200)
    # The same values as the run's table (steps.jsonl parsed once), downsampled.
    table = run.reader.table
    names = table.names()
    assert list(series.metrics) == names
    for name in names:
        steps, values = table.series(name)
        m = series.metrics[name]
        assert m.logged == len(steps)
        assert m.low == pytest.approx(values.min()) and m.high == pytest.approx(values.max())
        assert m.last == pytest.approx(values[-1])
        assert len(m.steps) <= explorer.POINTS_PER_RING
        assert m.steps[0] == steps[0] and m.steps[-1] == steps[-1]
        assert set(m.steps) <= set(steps.tolist())
    # Null steps are skipped: length/correct starts at step 100.
    assert series.metrics["length/correct"].steps[0] == 100
    # The spike survives downsampling.
    clip = series.metrics["clip/frac_high"]
    assert SPIKE_AT in clip.steps.tolist() and clip.high == pytest.approx(0.25)
    # Robust range: the 99th percentile is far below the spike.
    assert clip.q_high < 0.01 < 0.25
    assert series.boundaries == table.rollout_starts().tolist()
    assert series.boundaries_total == 600 and series.boundary_stride == 1


def test_collect_series_bounded_on_a_long_log(tmp_path):
    """100,000 steps: the pass streams, keeps <= 1000 points per ring and takes seconds."""
    run_dir = tmp_path / "long"
    run_dir.mkdir()
    rng = np.random.default_rng(3)
    noise = rng.normal(0, 0.05, 100_000)
    with (run_dir / runlog.STEPS).open("w", encoding="utf-8") as fh:
        for s in range(100_000):
            value = 9.0 if s == 61_234 else round(math.sin(s / 5000) + noise[s], 5)
            fh.write(json.dumps({"step": s, "rollout": s // 4, "first_in_rollout": s % 4 == 0,
                                 "metrics": {"reward/mean": value, "lr": 1e-4}}) + "\n")
    start = time.perf_counter()
    series = explorer.collect_series(run_dir)
    elapsed = time.perf_counter() - start
    reward = series.metrics["reward/mean"]
    assert series.n_steps == 100_000
    assert len(reward.steps) <= explorer.POINTS_PER_RING
    assert reward.steps[0] == 0 and reward.steps[-1] == 99_999
    assert 61_234 in reward.steps.tolist() and reward.high == 9.0
    assert series.boundaries_total == 25_000 and len(series.boundaries) <= explorer.MAX_BOUNDARIES
    assert series.boundaries[0] == 0 and series.boundary_stride > 1
    assert elapsed < 15, f"100,000 steps took {elapsed:.1f} s"


def test_collect_series_reports_a_broken_log_like_runlog(tmp_path):
    run_dir = tmp_path / "gap"
    write_explorer_run(run_dir, n_steps=10, token_every=5)
    lines = (run_dir / runlog.STEPS).read_text().splitlines(keepends=True)
    (run_dir / runlog.STEPS).write_text("".join(lines[:4] + lines[5:]))
    with pytest.raises(runlog.LogError, match="expected step 4 next, found 5"):
        explorer.collect_series(run_dir)


# ---------------------------------------------------------------- pure helpers


def test_default_metrics_prefers_kl_then_clipping():
    assert explorer.default_metrics(["reward/mean", "kl/mean", "clip/frac_high", "length/mean", "entropy/mean"]) == [
        "reward/mean", "length/mean", "kl/mean", "entropy/mean"]
    assert explorer.default_metrics(["reward/mean", "clip/frac_high", "entropy/mean"]) == [
        "reward/mean", "clip/frac_high", "entropy/mean"]
    # An imported run with other names: the first ones it has.
    assert explorer.default_metrics(["a", "b", "c", "d", "e"]) == ["a", "b", "c", "d"]


def test_step_ticks_levels():
    ticks = explorer.step_ticks(0, 1199)
    major = [s for s, level, _ in ticks if level == 0]
    assert major == [0, 200, 400, 600, 800, 1000]
    assert all(level in (0, 1, 2) for _, level, _ in ticks)
    assert len({s for s, _, _ in ticks}) == len(ticks)
    assert explorer.step_ticks(5, 7) == [(5, 0, 1), (6, 0, 1), (7, 0, 1)]
    assert explorer.nice_step(1200, 8) == 200 and explorer.nice_step(100_000, 200) == 500


def drawn_fisheye(u: float, focus: float, mag: float) -> float:
    """The fisheye the chart draws: explorer_series.fisheye_expr (a Vega expression, the only
    definition the build writes) evaluated as Python, its one ternary split by hand. The test
    oracle for the pointer's side of the fisheye in explorer.js (tests/browser)."""
    expr = explorer.fisheye_expr("datum.u").replace("datum.u", "u")
    assert expr.startswith("(") and expr.endswith(")") and expr.count(" ? ") == 1
    condition, branches = expr[1:-1].split(" ? ")
    right, left = branches.split(" : ")
    scope = {"u": u, "focus": focus, "mag": mag, "max": max}
    return eval(right if eval(condition, scope) else left, scope)  # noqa: S307 - our own expression


def test_fisheye_expr_hand_worked():
    """The expression the chart draws with, on hand-worked numbers."""
    # No distortion: identity.
    assert drawn_fisheye(0.3, 0.5, 0) == pytest.approx(0.3)
    # d = 3, focus 0.5: u = 0.75 is halfway to the end, G(0.5) = 4*0.5/(1.5+1) = 0.8.
    assert drawn_fisheye(0.75, 0.5, 3) == pytest.approx(0.5 + 0.5 * 0.8)
    assert drawn_fisheye(0.25, 0.5, 3) == pytest.approx(0.5 - 0.5 * 0.8)
    # d = 15, focus 0.2: u = 0.1 is halfway to the start, G(0.5) = 16*0.5/(7.5+1) = 16/17.
    assert drawn_fisheye(0.1, 0.2, 15) == pytest.approx(0.2 - 0.2 * 16 / 17)
    # Ends and focus stay put; the focus is magnified d + 1 times.
    assert [drawn_fisheye(u, 0.5, 7) for u in (0.0, 0.5, 1.0)] == pytest.approx([0.0, 0.5, 1.0])
    eps = 1e-6
    assert (drawn_fisheye(0.2 + eps, 0.2, 7) - 0.2) / eps == pytest.approx(8, rel=1e-3)
    # A focus at either end: one side only, still ends fixed and increasing.
    for focus in (0.0, 0.13, 0.5, 1.0):
        phi = [drawn_fisheye(k / 100, focus, 15) for k in range(101)]
        assert all(b >= a for a, b in zip(phi, phi[1:]))
        assert phi[0] == pytest.approx(0.0) and phi[-1] == pytest.approx(1.0)


def test_the_build_computes_no_fisheye_of_its_own():
    """The fisheye is drawn by Vega from fisheye_expr and inverted by explorer.js: the Python
    side has no second copy of the function (issue 31: one view, one rendering)."""
    from unipo_build.site.views.explorer import explorer_series
    assert not hasattr(explorer_series, "fisheye") and not hasattr(explorer_series, "fisheye_inverse")
    assert not hasattr(explorer, "fisheye")
    js = (Path(explorer.__file__).with_name("explorer.js")).read_text(encoding="utf-8")
    assert "function fisheye(" in js and "function fisheyeInverse(" in js


def test_fmt_metric():
    assert explorer.fmt_metric(0.53125) == "0.531"
    assert explorer.fmt_metric(1234.4) == "1,234" and explorer.fmt_metric(-98.76) == "\u221298.8"
    assert explorer.fmt_metric(0.0001234) == "1.23 \u00d7 10\u207b\u2074"
    assert explorer.fmt_metric(0.5625, "% of groups") == "56.2%" and explorer.fmt_metric(0.001, "% of tokens") == "0.1%"
    assert explorer.fmt_metric(0) == "0"
    assert explorer.fmt_metric(None) == "–"


# ---------------------------------------------------------------- HTML and payload


def test_explorer_html_embeds_every_metric_downsampled(loaded):
    run = loaded["grpo-run"]
    html = explorer.explorer_html(run, inspector=False, element_id="x1")
    payload = _payload(html)
    data, spec = payload["data"], payload["spec"]
    assert data["run"] == "test-grpo" and data["first"] == 0 and data["last"] == 1199
    assert data["selected"] == ["reward/mean", "length/mean", "kl/mean", "entropy/mean"]
    names = [m["name"] for m in data["metrics"]]
    assert names == run.reader.table.names()
    assert "custom/score" in names  # an unknown metric is kept, shown by name
    for m in data["metrics"]:
        assert len(m["s"]) == len(m["v"]) <= explorer.POINTS_PER_RING
        assert all(isinstance(k, int) for k in m["v"])
    reward = next(m for m in data["metrics"] if m["name"] == "reward/mean")
    assert _undelta(reward["s"])[-1] == 1199
    assert _undelta(data["tokens"]) == list(range(0, 1200, 50)) and data["tokens_total"] == 24
    assert len(data["boundaries"]) == 600
    # The spec: named datasets the browser fills, six params, four ring layers.
    assert set(spec["datasets"]) >= {"series", "boundaries", "ticks"}
    assert {p["name"] for p in spec["params"]} == {"metrics", "robust", "focus", "mag", "hover", "picked"}
    assert [layer["name"] for layer in spec["layer"] if layer.get("name", "").startswith("ring")] == [
        "ring0", "ring1", "ring2", "ring3"]
    # Chips: one per metric, the defaults pressed with their ring; label, last value, definition.
    chips = re.findall(r'<button type="button" class="unipo-explorer__chip"[^>]*>', html)
    assert len(chips) == len(names)
    # data-colour: the metric's own colour (site/palette.py), the same on every page
    pressed = re.findall(r'data-metric="([^"]+)" aria-pressed="true" data-ring="(\d)" data-colour="([a-z]+)"', html)
    assert {m: (ring, colour) for m, ring, colour in pressed} == {
        m: (str(k), metric_colour(m)) for k, m in enumerate(("reward/mean", "length/mean", "kl/mean", "entropy/mean"))}
    assert data["metric_colours"]["custom/score"] == "grey" and data["metric_colours"]["kl/mean"] == "crimson"
    assert 'title="Reward (reward/mean): Mean scalar reward' in html
    # Held-out evaluation next to the chart.
    assert "Held-out evaluation" in html and "40.0% → 52.0%" in html
    assert html.count("<tr title=") == 5 and "0 <span class=\"unipo-explorer__hint\">start</span>" in html


def test_rings_list_ranges_units_and_the_automatic_robust_scale(loaded):
    run = loaded["grpo-run"]
    html = explorer.explorer_html(run, ["reward/mean", "clip/frac_high", "length/mean"], inspector=False,
                                  element_id="x1")
    data = _payload(html)["data"]
    flat = {m["name"]: m["flat"] for m in data["metrics"]}
    # the one spike of clip/frac_high (0.25 over values near 0.005) would flatten its ring
    assert flat["clip/frac_high"] is True and flat["reward/mean"] is False and flat["length/mean"] is False
    units = {m["name"]: m["unit"] for m in data["metrics"]}
    assert units["clip/frac_high"] == "% of tokens" and units["length/mean"] == "tokens" and units["custom/score"] == ""
    clip = explorer.collect_series(run.path).metrics["clip/frac_high"]
    rings = re.findall(r'<li class="unipo-explorer__ring" data-metric="([^"]+)" data-colour="([a-z]+)">.*?'
                       r'<span class="unipo-explorer__ring-range">([^<]*)</span>'
                       r'<span class="unipo-explorer__ring-note">([^<]*)</span>', html)
    assert [r[:2] for r in rings] == [(m, metric_colour(m)) for m in ("reward/mean", "clip/frac_high", "length/mean")]
    # the robust ring spans its 1st-99th percentile (with the margin) and names the whole range
    assert rings[1][2] == (f"{explorer.fmt_metric(clip.q_low, '%')} to "
                           f"{explorer.fmt_metric(clip.q_high, '%')} of tokens")
    assert rings[1][3].startswith("robust scale: the whole run spans ")
    assert "25%" in rings[1][3] and rings[0][3] == "" and rings[2][2].endswith(" tokens")
    assert explorer.unit_suffix("% of groups") == "of groups" and explorer.unit_suffix("s") == "s"
    # the caption tells a mouse and a touch reader what to do
    assert "unipo-explorer__for-mouse" in html and "Tap a ring" in html


def test_explorer_html_size_budget(loaded):
    html = explorer.explorer_html(loaded["grpo-run"], inspector=False, element_id="x1")
    assert len(html.encode()) < 300_000


def test_explorer_html_escapes_log_text(tmp_path):
    run_dir = tmp_path / "evil"
    write_explorer_run(run_dir, n_steps=30, token_every=10, run_id="evil", title="<script>alert(1)</script>")
    with (run_dir / runlog.STEPS).open("r+", encoding="utf-8") as fh:
        lines = fh.readlines()
        record = json.loads(lines[-1])
        record["metrics"]["</script><img src=x onerror=alert(1)>"] = 1.0
        lines[-1] = json.dumps(record) + "\n"
        fh.seek(0)
        fh.writelines(lines)
        fh.truncate()
    run = runs.load_run(run_dir, {})
    html = explorer.explorer_html(run, inspector=False, element_id="x2")
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    names = [m["name"] for m in _payload(html)["data"]["metrics"]]
    assert "</script><img src=x onerror=alert(1)>" in names


def test_chosen_metrics_and_missing_ones(loaded):
    run = loaded["grpo-run"]
    html = explorer.explorer_html(run, ["clip/frac_high", "no/such"], inspector=False, element_id="x3")
    assert _payload(html)["data"]["selected"] == ["clip/frac_high"]
    assert "Not in this run&#x27;s log: no/such." in html
    with pytest.raises(ValueError, match="1 to 4"):
        explorer.explorer_html(run, ["a", "b", "c", "d", "e"], inspector=False)


def test_failed_run_renders_an_admonition(loaded):
    run = loaded["broken-run"]
    assert not run.ok
    html = explorer.explorer_html(run, element_id="x4")
    assert 'class="admonition failure' in html
    assert "broken-run" in html and "steps.jsonl" in html and "line 21" in html
    assert "unipo-data" not in html  # no chart data for a run that failed to load


def test_inspector_is_placed_under_the_chart(loaded):
    """The caller hands the explorer its Step Inspector (a view does not import another view), which gets the
    explorer's id + "-inspector" and goes under the chart."""
    calls = []

    def step_inspector(uid):
        calls.append(uid)
        return '<div class="fake-inspector"></div>'

    html = explorer.explorer_html(loaded["grpo-run"], element_id="x5", inspector=step_inspector)
    assert calls == ["x5-inspector"] and 'data-inspector="x5-inspector"' in html
    assert html.index('class="fake-inspector"') > html.index("unipo-explorer__chart")
    html = explorer.explorer_html(loaded["grpo-run"], inspector=None)
    assert '<div class="fake-inspector">' not in html and "data-inspector" not in html


def test_the_explorer_macro_puts_the_run_s_own_inspector_under_it(loaded):
    from types import SimpleNamespace

    from unipo_build.site import view_macros

    site = SimpleNamespace(page_url="reference/explorer/")
    html = view_macros.explorer_inspector(site, loaded["grpo-run"])("x6-inspector")
    assert 'id="x6-inspector"' in html and 'data-run="' in html


# ---------------------------------------------------------------- the build hook


def test_publish_runs_copies_loaded_runs_only(loaded, tmp_path):
    site = tmp_path / "site"
    done = publish_runs(list(loaded.values()), site)
    assert set(done) == {"test-grpo"}
    files, size = done["test-grpo"]
    assert files == 24 and size > 0
    copied = sorted(p.name for p in (site / "assets/runs/test-grpo/steps").iterdir())
    assert copied[0] == "step_000000.json" and len(copied) == 24
    target = site / step_path("test-grpo", 50)
    assert json.loads(target.read_text())["step"] == 50
    assert not (site / "assets/runs/broken").exists()
    # Unchanged files are left alone on a second pass.
    mtime = target.stat().st_mtime_ns
    publish_runs(list(loaded.values()), site)
    assert target.stat().st_mtime_ns == mtime


def test_encode_values_keeps_four_digits_of_the_robust_magnitude():
    values = np.array([0.53125, 0.0, -0.01563, 0.9999, 25.0])
    encoded = explorer.encode_values(values, 0.0, 0.99)
    assert encoded["e"] == -4
    assert encoded["v"] == [5312, 0, -156, 9999, 250000]  # 0.53125 rounds half to even
    decoded = np.array(encoded["v"]) * 10.0 ** encoded["e"]
    assert np.max(np.abs(decoded - values)) <= 0.5e-4 + 1e-12
    assert explorer.encode_values(np.array([17.25, 12.5]), 10.0, 25.0) == {"e": -2, "v": [1725, 1250]}
    assert explorer.encode_values(np.array([0.0, 0.0]), 0.0, 0.0) == {"e": 0, "v": [0, 0]}
    assert explorer.encode_values(np.array([3e-6, 1e-6]), 1e-6, 3e-6)["v"] == [3000, 1000]


def test_spec_is_valid_vega_lite():
    spec = explorer.explorer_spec(0, 1200, ["reward/mean", "kl/mean"], validate=True)
    assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/v6")
    assert {"series", "boundaries", "ticks"} <= set(spec["datasets"])
    assert spec["config"]["aria"] is False


def test_each_run_gets_its_own_first_step_and_span_in_the_shared_spec():
    """The spec is assembled once per size; a run's first step, span and last step fill its
    placeholders, and nothing of another run's (or a placeholder) is left."""
    metrics = ["reward/mean", "kl/mean"]
    first = json.dumps(explorer.explorer_spec(7, 250, metrics))
    second = json.dumps(explorer.explorer_spec(0, 1200, metrics))
    assert "(datum.s - 7) / 250" in first and "min(datum.s + datum.g, 257)" in first
    assert "hover >= 7 ? format(hover, ',') : format(250, ',')" in first
    assert "(datum.s - 0) / 1200" in second and "min(datum.s + datum.g, 1200)" in second
    for text in (first, second):
        assert not any(token in text for token in (explorer._S0, explorer._SPAN, explorer._END))
    assert "(datum.s - 7)" not in second and "250" not in second
    # The metrics the chart opens on are the run's too, whichever run's spec was assembled first.
    def opens_on(spec):
        return next(p["value"] for p in spec["params"] if p["name"] == "metrics")
    assert opens_on(explorer.explorer_spec(7, 250, metrics)) == metrics
    assert opens_on(explorer.explorer_spec(7, 250, ["kl/mean"])) == ["kl/mean"]
    assert opens_on(explorer.explorer_spec(7, 250, metrics)) == metrics
