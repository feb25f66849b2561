"""The Step Inspector's server side (site/views/inspector/inspector.py) on logs built with tests/helpers_runlog.py.

The build sends the inspector's data and a caption; inspector.js renders the step (its bars, the
open group, the notes): tests/browser/test_inspector_render.py checks that rendering on these runs."""

from __future__ import annotations

import html as htmllib
import json
import re
from pathlib import Path

import pytest

from helpers_runlog import make_detail, make_header, make_step
from unipo_build.core.runlog import RunWriter
from unipo_build.core.schema import GroupSummary, PromptGroup, Response
from unipo_build.core import numbers as N
from unipo_build.site.views.inspector import inspector as I

HOSTILE = ['<img src=x onerror=alert(1)>', '</script><script>alert(1)</script>', '{{ 7*7 }}', '{% raw %}']


def _all_correct(detail, g: int):
    """Make prompt group ``g`` of a built detail all-correct (advantage 0)."""
    group = detail.prompts[g]
    for r in group.responses:
        r.correct, r.reward, r.advantage = True, 1.0, 0.0
        r.tokens.advantage = [0.0] * len(r.tokens.ids)
    detail.groups[g].n_correct = detail.groups[g].size
    return detail


def _filtered_group(index: int = 1000) -> PromptGroup:
    responses = [Response(index=i, text=f"answer {i}", reward=0.0, length=3, correct=False, filtered=True)
                 for i in range(4)]
    return PromptGroup(index=index, prompt="A dropped prompt", answer="7", filtered=True, contribution=0.0,
                       responses=responses)


def write_test_run(run_dir: Path, algorithm: str = "grpo", *, hostile: bool = False,
                   objectives: dict[int, float] | None = None, **header) -> Path:
    """Six steps, token detail at 0, 2 and 4: step 0's group 1 all correct, step 2 with a group the
    sampling filter dropped and a group of the update without detail, step 4 with a clipped token.
    ``objectives``: the step objective J logged at some of those steps; ``header``: fields of the
    run's header (run_id, title)."""
    writer = RunWriter(run_dir, make_header(algorithm, **header))
    for s in range(6):
        if s in (0, 2, 4):
            detail = make_detail(s)
            if objectives and s in objectives:
                detail.objective = objectives[s]
            if s == 0:
                _all_correct(detail, 1)
            if s == 2:
                detail.prompts.append(_filtered_group())
                detail.filtered_groups.append(GroupSummary(index=1000, size=4, n_correct=0, filtered=True,
                                                           contribution=0.0, detailed=True))
                # a group of the update without token detail
                detail.groups.append(GroupSummary(index=7, size=4, n_correct=4, contribution=-0.001, detailed=False))
            if s == 4:
                detail.prompts[0].responses[0].tokens.clip[1] = 1
                detail.prompts[0].responses[0].tokens.ratio[1] = 1.5
            if hostile:
                group = detail.prompts[0]
                group.prompt = " ".join(HOSTILE)
                group.answer = HOSTILE[0]
                response = group.responses[0]
                response.tokens.text = [HOSTILE[i % len(HOSTILE)] for i in range(len(response.tokens.ids))]
                response.text = "".join(response.tokens.text)
                response.reward_components = {HOSTILE[0]: 1.0}
            writer.step_detail(detail)
        writer.step(make_step(s, has_tokens=s in (0, 2, 4)))
    return run_dir


@pytest.fixture
def runs(tmp_path) -> Path:
    root = tmp_path / "runs"
    write_test_run(root / "test-grpo", "grpo")
    write_test_run(root / "test-dapo", "dapo")
    return root


def _data(html: str) -> dict:
    return json.loads(_template(html))


def _template(html: str) -> str:
    """The JSON text of the view's <template class="unipo-data">."""
    return re.search(r'<template class="unipo-data" id="[^"]+-data" data-search-exclude>(.*?)</template>', html, re.S).group(1)


def test_container_carries_run_site_root_steps_and_moments(runs):
    html = I.step_inspector("test-grpo", page_url="reference/views/", catalog=runs, uid="insp-1")
    assert html.startswith('<div class="unipo-inspector" id="insp-1" data-run="test-grpo" data-algorithm="grpo" '
                           'data-site-root="../../" data-step="0"')
    data = _data(html)
    assert data["steps"] == [0, 2, 4] and data["step"] == 0
    assert data["step_path"] == "assets/runs/test-grpo/steps/"
    assert data["config"]["components"]["kl"]["kind"] == "in_loss"
    names = {m["name"] for m in data["moments"]}
    assert {"all_correct_group", "filtered_group", "clipped_high"} <= names
    assert all(m["open_step"] in data["steps"] for m in data["moments"])
    assert [q["key"] for q in data["quantities"]] == ["objective", "advantage", "ratio", "kl", "entropy", "prob"]
    assert {q["kind"] for q in data["quantities"]} == {"signed", "one-signed"}
    assert data["ramps"]["min_tint"] == 0.15 and len(data["ramps"]["diverging_dark"]) == 11
    assert data["responses_all"] == I.RESPONSES_ALL == 8 and data["responses_shown"] == I.RESPONSES_SHOWN == 4
    # the step is the browser's to render: the build writes an empty body and no second copy
    assert html.endswith('<div class="unipo-inspector-body"></div></div>')
    for rendered in ("unipo-bar-row", "unipo-group", "unipo-response", "unipo-step-objective", "data-group="):
        assert rendered not in html.replace(_template(html), "")


def test_the_build_names_the_dropped_groups_for_the_browser(runs):
    """A dropped group's name is made once, by inspector.group_name (which the anatomy figure uses
    too), and handed to inspector.js by step and logged index; the script names none itself."""
    data = _data(I.step_inspector("test-dapo", catalog=runs, uid="insp-f"))
    assert data["filtered_names"] == {"2": {"1000": "Filtered group 1"}}
    # numbered in logged-index order among the step's dropped groups, however they were logged
    detail = make_detail(0)
    detail.prompts.append(_filtered_group(1005))
    detail.filtered_groups += [GroupSummary(index=i, size=4, n_correct=0, filtered=True, contribution=0.0,
                                            detailed=i == 1005) for i in (1005, 1001)]
    assert I.filtered_names(detail) == {"1001": "Filtered group 1", "1005": "Filtered group 2"}
    assert I.group_name(detail, 1005, True) == "Filtered group 2" and I.group_name(detail, 3, False) == "Group 3"
    assert I.filtered_names(make_detail(0)) == {}


def test_run_by_algorithm_id_and_home_page_root(runs):
    html = I.step_inspector("dapo", page_url="", catalog=runs)
    assert 'data-run="test-dapo"' in html and 'data-site-root=""' in html


def test_step_and_moment_choice_with_notes(runs):
    html = I.step_inspector("test-grpo", step=4, catalog=runs)
    assert 'data-step="4"' in html and "unipo-view-note" not in html
    near = I.step_inspector("test-grpo", step=3, catalog=runs)
    assert 'data-step="2"' in near and "Step 3 of run &#x27;test-grpo&#x27; has no token detail" in near
    moment = I.step_inspector("test-grpo", moment="clipped_high", catalog=runs)
    assert 'data-step="4"' in moment and 'data-moment="clipped_high"' in moment
    assert _data(moment)["moment"]["token"] == 1
    missing = I.step_inspector("test-grpo", moment="clipped_low", catalog=runs)
    assert "This run has no teaching moment &#x27;clipped_low&#x27;" in missing and 'data-step="0"' in missing
    with pytest.raises(ValueError, match="unknown moment"):
        I.step_inspector("test-grpo", moment="nope", catalog=runs)


def test_a_moment_on_a_step_without_tokens_is_told_in_words(runs, monkeypatch):
    from unipo_build.core.moments import Moment
    monkeypatch.setattr(I, "run_moments", lambda run: {"max_kl_step": Moment("max_kl_step", step=3)})
    html = I.step_inspector("test-grpo", moment="max_kl_step", catalog=runs)
    assert 'data-step="2"' in html and "unipo-view-note" not in html  # a status line, not an admonition
    line = re.search(r'<p class="unipo-inspector-status unipo-moment-note">(.*?)</p>', html).group(1)
    assert line == (f"{I.MOMENT_LABELS['max_kl_step']} is at step 3, which has no token detail; showing the "
                    "nearest step with tokens, 2.")
    assert "max_kl_step" not in re.sub(r"<[^>]+>", "", html.replace(_template(html), ""))


def test_missing_run_is_a_note_not_an_error(runs, tmp_path):
    html = I.step_inspector("no-such-run", catalog=runs)
    assert "unipo-view-note" in html and "no run &#x27;no-such-run&#x27;" in html
    assert "test-grpo" in html  # the note lists what there is
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "runs found: none" in I.step_inspector("grpo", catalog=empty)


def test_hostile_log_text_is_escaped(tmp_path):
    root = tmp_path / "runs"
    write_test_run(root / "evil", "grpo", hostile=True, title=" ".join(HOSTILE))
    html = I.step_inspector("evil", catalog=root)
    data = _template(html)
    assert "<" not in data and ">" not in data and "&" not in data
    # the log's text reaches the page as data, read back exactly (inspector.js writes it as text)
    assert _data(html)["title"] == " ".join(HOSTILE)
    outside = html.replace(data, "")
    assert "<img" not in outside and "<script" not in outside and "</script>" not in outside
    assert outside.count("<template") == 1 and outside.count("</template>") == 1
    # the caption names the run by its title, escaped exactly once
    caption = re.search(r'<p class="unipo-inspector-caption">(.*?)</p>', outside).group(1)
    text = htmllib.unescape(re.sub(r"<[^>]+>", "", caption))
    assert " ".join(HOSTILE) in text and "&lt;" not in text


def test_numbers_for_people():
    # the inspector prints through the one formatter, unipo_build.core.numbers, at 4 significant digits
    assert N.fmt_num(0, 4) == "0" and N.fmt_num(0.5, 4) == "0.5" and N.fmt_num(-0.7246, 4) == "\u22120.7246"
    assert N.fmt_num(1e-6, 4) == "1 \u00d7 10\u207b\u2076" and N.fmt_num(-1.533e-4, 4) == "\u22121.533 \u00d7 10\u207b\u2074"
    assert N.fmt_num(12345.6, 4) == "12,350" and N.fmt_num(None, 4) == "\u2013"
    assert N.fmt_signed(0.25, 4) == "+0.25" and N.fmt_signed(-0.25, 4) == "\u22120.25"
    # no sign on what prints as 0 (negative zero included), none on a missing value
    assert N.fmt_signed(0.0) == "0" and N.fmt_signed(-0.0) == "0" and N.fmt_signed(None) == "\u2013"
    assert N.fmt_signed(float("nan")) == "nan"
    # an objective or a contribution below float32 noise is zero to the precision shown
    assert N.fmt_objective(5.274e-10, signed=True) == "\u2248 0" and N.fmt_objective(-3e-9, signed=True) == "\u2248 0"
    assert N.fmt_objective(0.01476, signed=True) == "+0.01476" and N.fmt_objective(0.01476) == "0.01476"
    assert N.fmt_objective(-0.01476, signed=True) == "\u22120.01476" and N.fmt_objective(None, signed=True) == "\u2013"
    # the inspector has no formatter of its own any more
    assert not any(hasattr(I, name) for name in ("fmt", "fmt_contribution"))


def test_an_imported_log_without_rewards_or_correctness(tmp_path):
    """prime-rl's token export records no reward and no correctness: the inspector says so, it does not
    show '0/2 correct' or call the group's answers wrong."""
    from cli_helpers import unipo

    root = tmp_path / "runs"
    fixture = Path(__file__).resolve().parent / "fixtures" / "prime_rl" / "run"
    result = unipo("import", "prime-rl", fixture, "--out", root / "prime", "--algorithm", "grpo", "--run-id", "prime")
    assert result.returncode == 0, result.stderr
    html = I.step_inspector("prime", catalog=root)
    data = _data(html)
    assert data["step"] == 0 and data["steps"]
    # what inspector.js shows for it ("correctness not logged", "reward –") is checked in the browser
    # (tests/browser/test_inspector_render.py)
