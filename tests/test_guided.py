"""Guided paths (unipo_build/site/pages/objectives/guided.py) and the length figure's direct labels, on the
shipped runs: the step, group and token a path names are found in the logs and hold what its
sentences say; the labels keep apart."""

from __future__ import annotations

import html
import re

import pytest

from site_build import bound_macros
from unipo_build.core.numbers import NOISE
from unipo_build.core.runs import get_run
from unipo_build.site.pages.dynamics import dynamics as D
from unipo_build.site.pages.objectives import guided as G

SHIPPED = __import__("pathlib").Path(__file__).resolve().parents[1] / "data" / "runs"


def _run(name: str):
    try:
        run = get_run(name, SHIPPED)
    except Exception as err:  # noqa: BLE001 - no such run in a checkout without data
        pytest.skip(f"no shipped {name} run: {err}")
    if run is None or not run.ok or not run.token_steps():
        pytest.skip(f"no shipped {name} run with token detail")
    return run


def test_direct_labels_keep_their_gap_and_stay_in_range():
    rows = [{"line": "a", "algorithm": "A", "answers": "wrong answers", "x": x, "y": y} for x, y in ((0, 0), (1, 10))]
    rows += [{"line": "b", "algorithm": "B", "answers": "wrong answers", "x": x, "y": y} for x, y in ((0, 20), (1, 10.5))]
    rows += [{"line": "c", "algorithm": "C", "answers": "wrong answers", "x": x, "y": y} for x, y in ((0, 5), (1, 19.9))]
    labels = {r["line"]: r for r in D.direct_labels(rows, gap=0.09)}  # the range is 20: gaps of 1.8
    assert labels["a"]["label_y"] == 10 and labels["b"]["label_y"] == pytest.approx(11.8)
    assert labels["c"]["label_y"] == pytest.approx(19.9)
    assert labels["b"]["y"] == 10.5 and labels["a"]["label"] == "A wrong"  # the dot stays at the value
    # three lines ending together at the top: pushed down to fit, still 1.8 apart
    top = [{"line": n, "algorithm": n, "answers": "right answers", "x": 1, "y": 20} for n in "xyz"]
    top += [{"line": "x", "algorithm": "x", "answers": "right answers", "x": 0, "y": 0}]
    placed = sorted(r["label_y"] for r in D.direct_labels(top, gap=0.09))
    assert placed == pytest.approx([16.4, 18.2, 20.0])


def test_the_all_correct_path_finds_a_token_whose_only_push_is_the_kl_term():
    run = _run("grpo")
    found = G.kl_only_token(run)
    assert found is not None
    detail = run.reader.detail(found.step)
    group = next(g for g in detail.prompts if g.index == found.group and not g.filtered)
    assert all(r.correct for r in group.responses) and len(group.responses) == found.size
    response = next(r for r in group.responses if r.index == found.response)
    tk = response.tokens
    assert tk.advantage[found.t] == 0 and tk.kl[found.t] == found.kl and abs(found.kl) >= NOISE
    # objective = clipped term (0) - beta * KL, as the path's sentence says
    assert found.objective == pytest.approx(-found.beta * found.kl, rel=1e-4)
    # no earlier logged step has such a group
    for step in run.token_steps():
        if step >= found.step:
            break
        for g in run.reader.detail(step).prompts:
            if g.filtered or not all(r.correct for r in g.responses) or any(r.tokens is None for r in g.responses):
                continue
            assert not any(m and a == 0 and abs(k) >= NOISE for r in g.responses
                           for m, a, k in zip(r.tokens.mask, r.tokens.advantage, r.tokens.kl))
    page = bound_macros(SHIPPED)["guided_all_correct"]("grpo")
    params = re.findall(r'data-path-params="([^"]+)"', page)
    assert params == [f"step={found.step}", f"step={found.step},group={found.group}",
                      f"step={found.step},group={found.group},token={found.response}.{found.t}",
                      f"step={found.step},group={found.group},token={found.response}.{found.t},colour=kl"]
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert f"all {found.size} answers right" in text and "the KL term is the only push" in text


def test_the_aggregation_path_weighs_a_long_and_a_short_answer_of_each_run():
    for name, same_across in (("dapo", False), ("dr_grpo", True)):
        run = _run(name)
        steps = run.token_steps()
        first = G.long_short(run, steps[0])
        assert first is not None and first.long.length > first.short.length
        detail = run.reader.detail(steps[0])
        group = next(g for g in detail.prompts if g.index == first.group and not g.filtered)
        long_tokens = next(r for r in group.responses if r.index == first.long.response).tokens
        assert first.long.total == pytest.approx(sum(w for w, m in zip(long_tokens.weight, long_tokens.mask) if m))
        # both aggregations give every token of an update the same weight
        assert first.long.token_weight == pytest.approx(first.short.token_weight)
        assert first.long.total / first.short.total == pytest.approx(first.long.length / first.short.length)
        last = G.long_short(run, steps[-1])
        assert (last.long.token_weight == pytest.approx(first.long.token_weight)) == same_across
    page = bound_macros(SHIPPED)["guided_aggregation"]("dapo", "dr_grpo")
    assert page.count('class="unipo-agg-card"') == 2
    assert 'data-path-params="a=dapo,b=dr_grpo,open=aggregation"' in page
