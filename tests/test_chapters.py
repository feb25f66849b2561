"""The algorithm chapters (docs/course/algorithms/*.md) and their figures (unipo_build/site/pages/dynamics/critic_trace.py,
advantage_noise.py, run_facts.py).

The macros run on smoke runs made by the real trainer (a tiny random policy, a coin-flip scorer
so that groups are mixed), and their numbers are checked against the logged numbers, read back
by hand from the token files. The chapters are parsed for the macro calls each must make, and
one chapter is built by MkDocs with a run that lacks one of its teaching moments. Tests that
train are marked slow; the page checks need no torch.
"""

from __future__ import annotations

import ast
import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from site_build import registered_macros, without_search, write_mkdocs_config
from training_fixtures import coin_flip_score
from unipo_build.core import runlog
from unipo_build.site.pages.dynamics import advantage_noise as AN
from unipo_build.site.pages.dynamics import critic_trace as CT
from unipo_build.site.facts import run_facts as RF
from unipo_build.core.numbers import fmt_pct
from unipo_build.site.context import AuthorError, Site
from unipo_build.core.moments import find_moment
from unipo_build.core.runs import get_run

REPO = Path(__file__).resolve().parents[1]
CHAPTER_DIR = REPO / "docs" / "course" / "algorithms"
ALGORITHMS = ("reinforce", "ppo", "grpo", "dapo", "dr_grpo")
SMOKE = {"prompts_per_step": 4, "group_size": 4, "max_new_tokens": 12}


def _train(algorithm: str, checkpoint: Path, out: Path, steps: int = 2, **overrides) -> Path:
    import training.rl as rl

    opts = rl.TrainOptions(algorithm=algorithm, steps=steps, model=str(checkpoint), out=str(out), progress=False,
                           eval_n=8, detail_every=1, rl_overrides={**SMOKE, **overrides})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rl, "score_response", coin_flip_score)
        return rl.train(opts)


@pytest.fixture(scope="module")
def checkpoint(tiny_policy) -> Path:
    return tiny_policy


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory, checkpoint) -> Path:
    """Two-rollout smoke runs of PPO, REINFORCE and GRPO, each under its algorithm's id."""
    root = tmp_path_factory.mktemp("runs")
    for algorithm in ("ppo", "reinforce", "grpo"):
        _train(algorithm, checkpoint, root / algorithm)
    return root


@pytest.fixture(scope="module")
def on_policy_runs_dir(tmp_path_factory, checkpoint) -> Path:
    """A PPO run with one update per rollout: every ratio is 1, so no token is ever clipped."""
    root = tmp_path_factory.mktemp("on-policy-runs")
    _train("ppo", checkpoint, root / "ppo", epochs=1, minibatches=1)
    return root


def _response(run_dir: Path, step: int, group: int, index: int):
    detail = runlog.read_step_detail(run_dir, step)
    g = next(g for g in detail.prompts if g.index == group and not g.filtered)
    return g, next(r for r in g.responses if r.index == index)


# ---------------------------------------------------------------------------
# critic_trace
# ---------------------------------------------------------------------------

@pytest.mark.slow
def test_critic_trace_shows_the_logged_values_of_the_chosen_response(runs_dir):
    run = get_run("ppo", runs_dir)
    trace = CT.critic_trace_data(run)
    assert trace is not None
    group, response = _response(run.path, trace.step, trace.group, trace.response)
    tokens = response.tokens
    kept = [t for t, m in enumerate(tokens.mask) if m]
    assert [row["t"] for row in trace.rows] == kept
    beta = run.header.algorithm_config.components["kl"].params["beta"]
    assert trace.beta == beta
    for row in trace.rows:
        t = row["t"]
        assert row["token"] == tokens.text[t]
        assert row["value"] == tokens.value[t]
        assert row["return"] == tokens.return_[t]
        assert row["advantage"] == tokens.advantage[t]
        assert row["kl"] == tokens.kl[t]
        assert row["kl_penalty"] == pytest.approx(-beta * tokens.kl[t], abs=1e-15)
    # GAE bookkeeping as logged: return = advantage + value at every token.
    for row in trace.rows:
        assert row["return"] == pytest.approx(row["advantage"] + row["value"], abs=1e-5)

    # The rule: the last logged step that has a candidate; there, the longest correct answer of a
    # mixed group (or, without one, the longest response).
    detail = runlog.read_step_detail(run.path, trace.step)
    mixed = [r for g in detail.prompts if len({x.reward for x in g.responses}) > 1 for r in g.responses]
    correct = [r for r in mixed if r.correct]
    pool = correct or [r for g in detail.prompts for r in g.responses]
    assert response.length == max(r.length for r in pool)
    if correct:
        assert response.correct and len({x.reward for x in group.responses}) > 1
    assert trace.step == max(runlog.token_steps(run.path))

    # The chart data are the same numbers.
    top, bottom = CT.critic_trace_charts(trace)
    curves = [layer for layer in top["layer"] if layer["data"]["values"] and "series" in layer["data"]["values"][0]]
    values = curves[0]["data"]["values"]
    by_series = {}
    for v in values:
        by_series.setdefault(v["series"], []).append(v["y"])
    assert by_series["value V(s_t)"] == [row["value"] for row in trace.rows]
    assert by_series["advantage A_t (GAE)"] == [row["advantage"] for row in trace.rows]
    bars = [layer for layer in bottom["layer"] if layer["data"]["values"] and "penalty" in layer["data"]["values"][0]]
    assert [v["penalty"] for v in bars[0]["data"]["values"]] == [row["kl_penalty"] for row in trace.rows]
    assert top["usermeta"]["renderer"] == bottom["usermeta"]["renderer"] == "canvas"  # a mark per token


@pytest.mark.slow
def test_critic_trace_at_a_moment_follows_the_moment(runs_dir):
    run = get_run("ppo", runs_dir)
    for name in ("clipped_low", "clipped_high", "longest_wrong"):
        moment = find_moment(run.path, name)
        trace = CT.critic_trace_data(run, name)
        if moment is None:
            assert trace is None
            continue
        assert (trace.step, trace.group, trace.response) == (moment.step, moment.group, moment.response)
    # A step-level moment: a response of that step (every step of this run has token detail).
    moment = find_moment(run.path, "max_kl_step")
    trace = CT.critic_trace_data(run, "max_kl_step")
    assert moment is not None and trace is not None and trace.step == moment.step


@pytest.mark.slow
def test_critic_trace_without_a_critic_or_a_run_is_a_note(runs_dir):
    ids = ["unipo-trace-1", "unipo-trace-2"]
    no_critic = CT.critic_trace_html(Site(runs_where=runs_dir), "grpo", None, ids)
    assert "admonition" in no_critic and "critic values" in no_critic and "unipo-vega" not in no_critic
    missing = CT.critic_trace_html(Site(runs_where=runs_dir), "nonexistent", None, ids)
    assert "admonition" in missing and "nonexistent" in missing
    figure = CT.critic_trace_html(Site(runs_where=runs_dir), "ppo", None, ids)
    assert figure.count('class="unipo-vega"') == 2 and "<figcaption>" in figure
    with pytest.raises(ValueError, match="unknown moment"):
        CT.critic_trace_data(get_run("ppo", runs_dir), "no_such_moment")


# ---------------------------------------------------------------------------
# advantage_noise
# ---------------------------------------------------------------------------

def _by_hand(run_dir: Path) -> dict:
    """Every distinct trained response of the token files, read as plain JSON."""
    rows = {}
    for path in sorted((run_dir / "tokens").glob("step_*.json")):
        detail = json.loads(path.read_text(encoding="utf-8"))
        for group in detail["prompts"]:
            if group.get("filtered"):
                continue
            same = len({r["reward"] for r in group["responses"]}) == 1
            for r in group["responses"]:
                key = (detail["rollout"], group["index"], r["index"])
                if key in rows or r.get("tokens") is None:
                    continue
                adv = [a for a, m in zip(r["tokens"]["advantage"], r["tokens"]["mask"]) if m]
                rows[key] = (sum(adv) / len(adv), same, bool(r.get("correct")))
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["reinforce", "grpo"])
def test_advantage_noise_fractions_match_the_logged_tokens(runs_dir, algorithm):
    run = get_run(algorithm, runs_dir)
    summary = AN.advantage_noise_data(Site(), run)
    rows = _by_hand(run.path)
    assert summary.responses == len(rows) > 0
    assert summary.steps == len(runlog.token_steps(run.path))
    same = [k for k, (_, s, _) in rows.items() if s]
    assert summary.same_reward_share == pytest.approx(len(same) / len(rows))
    total = sum(a * a for a, _, _ in rows.values())
    signal = sum(rows[k][0] ** 2 for k in same)
    if total == 0:
        assert summary.same_reward_signal is None
    else:
        assert summary.same_reward_signal == pytest.approx(signal / total)
    correct_same = [rows[k] for k in same if rows[k][2]]
    if correct_same:
        pushed = sum(1 for a, _, _ in correct_same if abs(a) > 1e-6) / len(correct_same)
        assert summary.correct_in_same_reward_pushed == pytest.approx(pushed)
    # Every token of a response carries the response's advantage (REINFORCE: reward minus the batch mean).
    for path in sorted((run.path / "tokens").glob("step_*.json")):
        for group in json.loads(path.read_text(encoding="utf-8"))["prompts"]:
            for r in group["responses"]:
                if r.get("tokens"):
                    adv = [a for a, m in zip(r["tokens"]["advantage"], r["tokens"]["mask"]) if m]
                    assert max(adv) - min(adv) < 1e-6
    if algorithm == "grpo":
        # The group baseline cancels one-reward groups exactly.
        assert all(abs(rows[k][0]) < 1e-6 for k in same)
    # The histogram accounts for every response once.
    start, width = AN._bins([summary])
    bins = AN.noise_histogram(summary, start, width)
    assert sum(b["count"] for b in bins) == summary.responses
    assert sum(b["share"] for b in bins) == pytest.approx(1.0)


@pytest.mark.slow
def test_advantage_noise_figure_and_words(runs_dir):
    summaries = [AN.advantage_noise_data(Site(), get_run(a, runs_dir)) for a in ("reinforce", "grpo")]
    page = AN.advantage_noise_html(summaries, ["unipo-noise-1", "unipo-noise-2"], ["a note about a run"])
    assert page.count('class="unipo-vega"') == 2
    text = html.unescape(page)
    for s in summaries:
        if s.same_reward_share is not None:
            assert fmt_pct(s.same_reward_share, None) in text
        assert AN.noise_sentence(s) in text
    assert "a note about a run" in text
    grpo = summaries[1]
    if grpo.same_reward_share:
        assert "none of its advantage signal" in AN.noise_sentence(grpo)


def test_small_numbers():
    assert fmt_pct(RF.uniform_group_chance_value(0.9, 8), None) == "43%"
    assert RF.uniform_group_chance_value(0.5, 1) == 1.0
    assert RF.spec_param_value(Site(), "dapo", "clip", "eps_high") == pytest.approx(0.28)
    with pytest.raises(AuthorError, match="no parameter"):
        RF.spec_param_value(Site(), "grpo", "clip", "eps_high")
    assert fmt_pct(0.0, None) == "0%" and fmt_pct(0.004, None) == "0.4%" and fmt_pct(0.5, None) == "50%"


# ---------------------------------------------------------------------------
# The chapter pages
# ---------------------------------------------------------------------------

MACRO_RE = re.compile(r"\{\{\s*(.+?)\s*\}\}", re.S)


def block_macros() -> set[str]:
    """The macros that return HTML: each must be a paragraph of its own (see macros.protect_html)."""
    from unipo_build.site.context import MACROS

    registered_macros()  # imports every view module, so every macro is registered
    return {name for name, definition in MACROS.items() if definition.html}


def _value(node: ast.expr):
    """A macro argument's value on a set that has the chapter's runs: a literal, or the first branch of
    `(x if has_runs() else none)`, the form a chapter uses for an argument that names its runs (issue 47)."""
    if isinstance(node, ast.IfExp):
        test = node.test
        assert isinstance(test, ast.Call) and getattr(test.func, "id", None) == "has_runs", ast.unparse(node)
        return ast.literal_eval(node.body)
    return ast.literal_eval(node)


def _calls(text: str) -> list[tuple[str, list, dict]]:
    calls = []
    for match in MACRO_RE.finditer(text):
        node = ast.parse(match.group(1), mode="eval").body
        assert isinstance(node, ast.Call), match.group(0)
        args = [_value(a) for a in node.args]
        kwargs = {k.arg: _value(k.value) for k in node.keywords}
        calls.append((node.func.id, args, kwargs))
    return calls


PREDECESSOR = {"ppo": "reinforce", "grpo": "ppo", "dapo": "grpo", "dr_grpo": "grpo", "gspo": "grpo", "dapo_dr": "dr_grpo"}


@pytest.mark.parametrize("algorithm", ALGORITHMS + ("gspo", "dapo_dr"))
def test_chapter_makes_the_required_calls(algorithm):
    text = (CHAPTER_DIR / f"{algorithm}.md").read_text(encoding="utf-8")
    calls = _calls(text)
    names = {name for name, _, _ in calls}
    assert names <= registered_macros(), names - registered_macros()

    def called(name, *args, **kwargs):
        return [c for c in calls if c[0] == name and tuple(c[1][:len(args)]) == args
                and all(c[2].get(k) == v for k, v in kwargs.items())]

    assert called("objective_card", algorithm)
    # the comparison opens at the predecessor and lets the reader pick any two (issue 21)
    if algorithm == "reinforce":
        assert called("compare_selector", "reinforce", "ppo")  # the root: compared forward
    else:
        assert called("compare_selector", PREDECESSOR[algorithm], algorithm)
    if algorithm == "grpo":
        assert called("guided_all_correct", "grpo")  # the UNIPO paper's classroom scenario
    assert called("training_explorer", algorithm)
    assert called("learning_verdict", algorithm)
    assert called("run_card", algorithm)
    assert called("run_choice", algorithm)  # which of the algorithm's runs the chapter shows
    moments = [c[2]["moment"] for c in called("step_inspector", algorithm) if "moment" in c[2]]
    assert len(moments) >= 2, moments
    required = {
        "grpo": ({"all_correct_group"}, {"all_wrong_group", "clipped_high", "clipped_low"}),
        "dapo": ({"clipped_high", "filtered_group"}, set()),
        "dr_grpo": ({"longest_wrong"}, set()),
    }
    must, one_of = required.get(algorithm, (set(), set()))
    assert must <= set(moments)
    assert not one_of or one_of & set(moments)
    if algorithm == "dr_grpo":
        assert any(set(c[1][0]) == {"dr_grpo", "grpo"} for c in called("length_by_correctness"))
    if algorithm == "ppo":
        assert called("critic_trace", "ppo")
    if algorithm == "reinforce":
        assert any(set(c[1][0]) >= {"reinforce", "grpo"} for c in called("advantage_noise"))
    # Predict-then-check questions with collapsible answers, the anatomy page, arXiv references.
    assert len(re.findall(r'^\?\?\? question "', text, re.M)) >= 3
    assert "../anatomy.md" in text
    assert re.search(r"\(https://arxiv\.org/abs/\d{4}\.\d{4,5}\)", text)
    # Macros that return HTML stand on a line of their own.
    for line in text.splitlines():
        for match in MACRO_RE.finditer(line):
            name = match.group(1).split("(", 1)[0].strip()
            if name in block_macros():
                assert line.strip() == match.group(0), line
    # Numbers come from macros: no decimals in the prose (macro calls and code removed).
    prose = MACRO_RE.sub("", text)
    prose = re.sub(r"`[^`]*`", "", prose)
    prose = re.sub(r"\(https?://[^)]*\)", "", prose)  # link targets
    prose = re.sub(r"arXiv \d{4}\.\d{4,5}", "", prose)  # arXiv ids are names, not figures
    assert not re.findall(r"\d+\.\d+", prose), re.findall(r".{30}\d+\.\d+.{10}", prose)


# ---------------------------------------------------------------------------
# A chapter built by MkDocs with a run that lacks a teaching moment
# ---------------------------------------------------------------------------

HOOK = """from unipo_build.site import macros


def on_page_content(html, page, config, files):
    return macros.restore_protected(page.file.src_uri, html)
"""


@pytest.mark.slow
def test_ppo_chapter_builds_with_a_run_that_lacks_a_moment(on_policy_runs_dir, tmp_path):
    run = get_run("ppo", on_policy_runs_dir)
    moment = re.search(r'step_inspector\("ppo", moment="(\w+)"\)', (CHAPTER_DIR / "ppo.md").read_text()).group(1)
    assert moment.startswith("clipped_")  # the chapter's teaching moment: a token the clip stopped
    assert find_moment(run.path, moment) is None  # one update per rollout: nothing is clipped
    project = tmp_path / "project"
    (project / "docs" / "course" / "algorithms").mkdir(parents=True)
    (project / "docs" / "course" / "algorithms" / "ppo.md").write_text(
        (CHAPTER_DIR / "ppo.md").read_text(encoding="utf-8"), encoding="utf-8")
    # the project's macros and Markdown extensions; a plain Material theme and the one hook below
    write_mkdocs_config(project, site_name="chapter test", site_url=None, repo_url=None, nav=None, extra_css=None,
                        theme={"name": "material", "font": False}, plugins=without_search, hooks=["hooks.py"],
                        extra={"unipo_runs": str(on_policy_runs_dir)})
    shutil.copytree(REPO / "data" / "algorithms", project / "data" / "algorithms")  # the project's specs
    (project / "hooks.py").write_text(HOOK, encoding="utf-8")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=str(REPO))
    env.pop("UNIPO_RUNS", None)
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-d", str(tmp_path / "site")],
                          cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    page = (tmp_path / "site" / "course" / "algorithms" / "ppo" / "index.html").read_text(encoding="utf-8")
    text = html.unescape(page)
    assert f"has no teaching moment '{moment}'" in text
    assert "unipo-critic-trace" in page and "unipo-inspector" in page
    assert "UNIPOHTML" not in page  # every protected macro's HTML was put back
