"""The course chapters: their macros, one strict build, their links, moments and quoted numbers.

Three layers:

- pure functions of the course's view modules (``unipo_build.site.views``) with hand-worked numbers (fast);
- the macros on smoke runs made by the real trainer (a random tiny policy, a hash-based scorer so
  that groups are mixed), and one ``mkdocs build --strict`` of the whole site from those runs
  (marked slow: it trains five tiny runs first). When ``data/runs`` already holds a run of each of
  the five algorithms, the build uses them instead and no training is needed;
- source checks of ``docs/course/**/*.md`` and ``docs/index.md``: every macro called exists, no
  number with decimals is typed into the prose, every teaching moment named resolves against the
  shipped runs.
"""

from __future__ import annotations

import html
import re
import zlib
from pathlib import Path
from urllib.parse import unquote, urlsplit

import numpy as np
import pytest

from site_build import bound_macros, build_site, free_port, registered_macros
from unipo_build.core.moments import MOMENT_NAMES, find_moment
from unipo_build.core.registry import REGISTRY
from unipo_build.core.runs import discover, get_run
from unipo_build.core.specs import load_specs
from unipo_build.site.pages.objectives import aggregation as A
from unipo_build.site.pages.objectives import anatomy as AN
from unipo_build.site.pages.objectives import anatomy_pick as AP
from unipo_build.site.pages.dynamics import dynamics as D
from unipo_build.site.pages.objectives import family_tree as T
from unipo_build.core import numbers as F
from unipo_build.site import palette
from unipo_build.site.facts import run_facts as RF
from unipo_build.site.pages.learning import verdicts as V
from unipo_build.site.facts.series import moving_average
from unipo_build.site.context import AuthorError, Site

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
SHIPPED = REPO / "data" / "runs"


def course_sources() -> list[Path]:
    return sorted((DOCS / "course").rglob("*.md")) + [DOCS / "index.md"]


# ---------------------------------------------------------------------------
# Pure functions, hand-worked
# ---------------------------------------------------------------------------

def test_no_formatter_writes_a_share_that_is_not_zero_as_zero():
    """Issue 47: 'mean clip fraction 0.0%' for 86 clipped updates of 200. Hand-worked: 0.0003 is 0.03% (100 × 0.0003;
    '{:.1f}' rounds it to 0.0), 0.00095 is 0.095% to two significant digits, 0.00004 is 0.004%, under the 0.01% floor;
    0.9996 is 99.96%, which one decimal rounds to 100.0."""
    assert F.fmt_pct(0.0003) == "0.03%" and F.fmt_pct(0.0003, 0) == "0.03%" and F.fmt_pct(0.0003, 2) == "0.03%"
    assert F.fmt_pct(0.00095) == "0.1%" and F.fmt_pct(0.00095, 0) == "0.095%"  # 0.095 rounds to 0.1, not to 0
    assert F.fmt_pct(0.00004) == "under 0.01%" and F.fmt_pct(0.00004, 3) == "0.004%"
    assert F.fmt_pct(-0.0003) == "\u22120.03%" and F.fmt_pct(-0.00004) == "above \u22120.01%"
    assert F.fmt_pct(0.0) == "0.0%" and F.fmt_pct(0.0, 0) == "0%" and F.fmt_pct(None) == "\u2013"  # a true 0 stays 0
    assert F.fmt_share(0.0003, 1) == "0.03%" and F.fmt_share(0.05) == "5%" and F.fmt_share(0.2, 1) == "20.0%"
    assert F.fmt_pct(0.0003, None) == "0.03%" and F.fmt_pct(0.00004, None) == "under 0.01%"
    assert F.fmt_pct(0.004, None) == "0.4%" and F.fmt_pct(0.43, None) == "43%" and F.fmt_pct(0.0, None) == "0%"
    assert F.fmt_pct(0.9996, None) == "over 99.9%" and F.fmt_pct(0.996, None) == "99.6%" and F.fmt_pct(1.0, None) == "100%"


def test_numbers_are_formatted_for_prose():
    assert F.fmt_num(1061248) == "1,061,248"
    assert F.fmt_num(0.5) == "0.5"
    assert F.fmt_num(-0.8660254) == "\u22120.866"
    assert F.fmt_num(12.0) == "12"
    assert F.fmt_num(2.487e-5) == "2.49 × 10\u207b\u2075"
    assert F.fmt_pct(0.4326667) == "43.3%"
    # a share that may be tiny never reads as 0%: two significant digits under 1%, a floor under 0.01%
    assert F.fmt_share(0.4326667) == "43%" and F.fmt_share(0.4326667, 1) == "43.3%"
    assert F.fmt_share(0.00095) == "0.095%" and F.fmt_share(0.0042) == "0.42%"
    assert F.fmt_share(0.00004) == "under 0.01%" and F.fmt_share(0.0) == "0%"
    assert F.fmt_signed(0.1) == "+0.1"
    assert F.fraction_text(1 / 144) == "1/144"
    assert F.fraction_text(np.float32(1 / 144)) == "1/144"  # logged weights are float32
    assert F.tex_num(-0.5) == "-0.5" and F.tex_num(1e-6) == "10^{-6}"


def test_one_number_formatter():
    """unipo_build.core.numbers is the only module that formats numbers, checked by what the code does
    (tests/test_numbers.py scans every module for format specs, % formats and round() into text); and
    the views' HTML helpers do not re-export a formatter (a second import path for a number)."""
    from test_numbers import number_formatting
    assert number_formatting() == []
    import unipo_build.site.fmt as html_helpers
    assert not [name for name in vars(F) if not name.startswith("_") and callable(getattr(F, name))
                and getattr(html_helpers, name, None) is getattr(F, name)]


def test_weight_shares_of_a_short_and_a_long_response():
    rows = {r["kind"]: r for r in A.weight_share_rows((10, 1000))}
    assert set(rows) == set(REGISTRY["aggregation"])
    # ALGORITHMS.md, phenomenon 8: token mean ~1% / 99%, seq-mean-token-mean 50% / 50%.
    assert rows["seq_mean_token_mean"]["shares"] == pytest.approx([0.5, 0.5])
    assert rows["token_mean"]["shares"] == pytest.approx([10 / 1010, 1000 / 1010])
    assert rows["constant_normalizer"]["shares"] == pytest.approx([10 / 1010, 1000 / 1010])
    assert rows["seq_mean_token_mean"]["per_token"] == pytest.approx([1 / 20, 1 / 2000])
    assert rows["token_mean"]["per_token"] == pytest.approx([1 / 1010, 1 / 1010])
    assert rows["constant_normalizer"]["per_token"] == pytest.approx([1 / 2000, 1 / 2000])  # 1/(N L), L = 1000
    # with the budget fixed, the constant normaliser's token weight does not follow the batch
    shorter = {r["kind"]: r for r in A.weight_share_rows((10, 100), normalizer=1000)}
    assert shorter["constant_normalizer"]["per_token"] == pytest.approx([1 / 2000, 1 / 2000])
    assert shorter["token_mean"]["per_token"] == pytest.approx([1 / 110, 1 / 110])
    html_ = A.weight_shares_html(Site(), (10, 1000))
    assert "1/2000" in html_ and "99.01%" in html_ and "50.0%" in html_
    with pytest.raises(AuthorError):
        A.weight_share_rows((0, 5))


def test_group_zscore_arithmetic_matches_the_hand_worked_example():
    """ALGORITHMS.md: rewards [1,1,1,0] give (+0.5, -1.5) with the n-1 std (std 0.5)."""
    from unipo_build.core.schema import PromptGroup, Response
    from unipo_build.core.specs import resolve

    config = resolve(load_specs()["grpo"], max_new_tokens=32)
    group = PromptGroup(index=0, prompt="p", responses=[
        Response(index=i, text="x", reward=r, advantage=a, length=1, correct=bool(r))
        for i, (r, a) in enumerate([(1.0, 0.5), (1.0, 0.5), (1.0, 0.5), (0.0, -1.5)])])
    ar = AP.group_arithmetic(config, group)
    assert ar.mean == pytest.approx(0.75)
    assert ar.advantages == pytest.approx([0.5, 0.5, 0.5, -1.5], abs=1e-5)
    assert ar.matches
    assert ar.lines[0].endswith("=0.75") and "std}_{n-1}" in ar.lines[1] and ar.lines[1].endswith("=0.5")
    # the worked example is the registry's: a kind without one has no group arithmetic
    assert ar.lines == REGISTRY["advantage"]["group_zscore"].worked(ar.rewards, ar.advantages,
                                                                     config.components["advantage"].params)


def test_moving_average_keeps_length_and_shrinks_at_the_ends():
    y = np.arange(10, dtype=float)
    out = moving_average(y, 3)
    assert out.shape == y.shape
    assert out[0] == pytest.approx(0.5) and out[5] == pytest.approx(5.0) and out[-1] == pytest.approx(8.5)


@pytest.mark.specs
def test_family_tree_follows_the_predecessor_links():
    specs = load_specs()
    rows = T.tree_rows(specs)
    by_id = {r["id"]: r for r in rows}
    assert [r["id"] for r in rows][:3] == ["reinforce", "ppo", "grpo"]
    for r in rows:
        spec = specs[r["id"]]
        assert r["predecessor"] == spec.predecessor
        assert r["change"] and len(r["change"]) <= 90
        if spec.predecessor:
            parent = by_id[spec.predecessor]
            assert r["column"] > parent["column"]  # time (and generation) runs left to right
            assert r["year"] >= parent["year"]
    # no two nodes on one spot
    assert len({(r["column"], r["lane"]) for r in rows}) == len(rows)
    spec = T.family_tree_spec(rows)
    assert spec["layer"] and "arXiv 2402.03300" in str(spec)
    table = T.family_tree_table(rows)
    assert "https://arxiv.org/abs/2503.20783" in table


def test_one_colour_per_algorithm_everywhere():
    """One palette keyed by algorithm id: every spec has its own colour, the playgrounds use the same."""
    colours = [palette.ALGORITHMS[sid] for sid in load_specs()]
    assert len(set(colours)) == len(colours)
    from unipo_build.site.playgrounds.charts import METHOD_COLOURS

    for algorithm, colour in palette.ALGORITHMS.items():
        assert METHOD_COLOURS[algorithm] == colour
    css = palette.css()
    assert "--unipo-algo-dr-grpo: #999933;" in css and "--unipo-algo-gspo: #EE6677;" in css
    # an unknown algorithm gets an extra colour, the same one every time it is asked
    used: dict = {}
    assert palette.algorithm_colour("mine", used) == palette.algorithm_colour("mine", used) == palette.EXTRA[0]


def test_author_errors_stop_the_build():
    site = Site()
    with pytest.raises(AuthorError, match="nope"):
        RF.run_fact_text(None, "grpo", "nope")
    with pytest.raises(AuthorError, match="not_a_moment"):
        RF.moment_fact_text(None, "grpo", "not_a_moment")
    with pytest.raises(AuthorError, match="beat"):
        AN.anatomy_html(site, None, "grpo", None, "not_a_beat", "mixed")
    with pytest.raises(AuthorError, match="length/nope"):
        D.dynamics_compare_html(site, ["length/nope"], None)


def test_missing_runs_give_notes_not_failures():
    assert RF.run_fact_text(None, "grpo", "steps") == "(no grpo run in this build)"
    assert RF.moment_fact_text(None, "grpo", "all_correct_group") == "(no grpo run in this build)"
    assert "no grpo run" in V.learning_verdict_text(Site(), None, "grpo").lower()
    assert "admonition" in V.run_card_html(Site(), None, "grpo")
    assert "admonition" in AN.anatomy_html(Site(), None, "grpo", None, "advantages", "mixed")


@pytest.mark.parametrize("epochs, minibatches, words", [
    (1, 1, "1 (1 epoch × 1 minibatch)"), (2, 2, "4 (2 epochs × 2 minibatches)"), (1, 4, "4 (1 epoch × 4 minibatches)"),
])
def test_run_card_counts_in_words_and_reports_the_headers_wall_time(tmp_path, epochs, minibatches, words):
    from helpers_runlog import make_header, write_run
    from unipo_build.core.schema import Hyperparameters
    from unipo_build.core.summary import summarize

    header = make_header(hyperparameters=Hyperparameters(lr=0.0001, epochs=epochs, minibatches=minibatches),
                         steps_per_rollout=epochs * minibatches)
    written = write_run(tmp_path / "run", header=header)
    written["writer"].finish(wall_time_s=123.4)  # the whole run, its final evaluation included
    (run,) = discover(tmp_path)
    card = html.unescape(V.run_card_html(Site(runs_where=tmp_path), run, "grpo"))
    assert f"<dt>Updates per rollout</dt><dd>{words}</dd>" in card
    # the card, `unipo summary` and the header give one wall time
    assert summarize(tmp_path / "run")["wall_time_s"] == 123.4
    assert "<dt>Wall time</dt><dd>2.06 min</dd>" in card


# ---------------------------------------------------------------------------
# Smoke runs made by the real trainer
# ---------------------------------------------------------------------------

SMOKE = {"prompts_per_step": 6, "group_size": 4, "max_new_tokens": 12, "detail_groups": 6}


def two_in_three_score(text: str, label) -> dict:
    """'correct' by a hash of the text, two times in three: mixed groups and, with G = 4,
    all-correct groups too (a random policy never writes a right answer)."""
    return {"correct": float(zlib.crc32(text.encode()) % 3 != 0), "format": 0.0, "parsed_answer": None}


def _shipped_complete() -> bool:
    runs = [r for r in discover(SHIPPED) if r.ok] if SHIPPED.is_dir() else []
    return set(RF.COURSE_ALGORITHMS) <= {r.header.algorithm for r in runs}


@pytest.fixture(scope="session")
def course_runs_dir(tmp_path_factory) -> Path:
    """data/runs when it has all five algorithms; else smoke runs of the five by the real trainer."""
    if _shipped_complete():
        return SHIPPED
    pytest.importorskip("torch")
    import training.rl as rl
    from training_fixtures import save_tiny_checkpoint

    root = tmp_path_factory.mktemp("course-runs")
    checkpoint = save_tiny_checkpoint(tmp_path_factory.mktemp("course-policy"))
    original = rl.score_response
    rl.score_response = two_in_three_score
    try:
        for algorithm in RF.COURSE_ALGORITHMS:
            rl.train(rl.TrainOptions(algorithm=algorithm, steps=4, model=str(checkpoint), out=str(root / algorithm),
                                     progress=False, eval_n=8, detail_every=1, rl_overrides=dict(SMOKE)))
    finally:
        rl.score_response = original
    return root


@pytest.fixture(scope="session")
def course_macros(course_runs_dir) -> dict:
    return bound_macros(course_runs_dir)


@pytest.mark.slow
def test_run_facts_and_verdicts_on_real_logs(course_macros, course_runs_dir):
    m = course_macros
    for key in RF.RUN_FACT_KEYS:
        text = m["run_fact"]("grpo", key)
        assert text and "no grpo run" not in text, key
    run = get_run("grpo", course_runs_dir)
    from unipo_build.core import runlog  # the shipped run's steps.jsonl is gzipped: read it as every reader does
    assert m["run_fact"]("grpo", "steps") == f"{len(runlog.read_log_text(run.path / runlog.STEPS).splitlines())}"
    verdict = m["learning_verdict"]("grpo")
    assert verdict.startswith("Held-out greedy accuracy of the run") and "95% interval" in verdict
    card = m["run_card"]("grpo")
    for field in ("Learning rate", "Responses per prompt (G)", "Commit", "Held-out evaluation"):
        assert field in card
    for name in MOMENT_NAMES:
        assert m["moment_fact"]("grpo", name)  # a step, or a note that the run lacks it


@pytest.mark.slow
def test_anatomy_walks_through_a_logged_update(course_macros, course_runs_dir):
    run = get_run("grpo", course_runs_dir)
    pick = AP.get_pick(run, None)
    assert pick is not None and pick.step in run.token_steps()
    assert pick.mixed is not None, "the smoke scorer should give mixed groups"
    # the logged advantages are reproduced by the group arithmetic shown on the page
    assert AP.group_arithmetic(run.config, pick.mixed).matches
    # the group contributions add up to the step objective
    total = sum(g.contribution for g in pick.detail.groups)
    assert total == pytest.approx(pick.detail.objective, rel=1e-4, abs=1e-6)
    for beat in AN.ANATOMY_BEATS:
        assert course_macros["anatomy"]("grpo", beat=beat)
    for key in AN.ANATOMY_FACTS:
        assert course_macros["anatomy_fact"]("grpo", key)
    assert course_macros["anatomy_fact"]("grpo", "step") == str(pick.step)


@pytest.mark.slow
def test_figures_on_real_logs(course_macros):
    m = course_macros
    dynamics = m["dynamics_compare"](list(D.DEFAULT_DYNAMICS))
    assert dynamics.count('class="unipo-vega"') == len(D.DEFAULT_DYNAMICS)
    assert "Not logged by: REINFORCE" in dynamics  # REINFORCE has no reference model: no KL
    lengths = m["length_by_correctness"](["grpo", "dr_grpo"])
    assert 'class="unipo-vega"' in lengths
    assert "GRPO" in m["eval_compare"]()
    assert m["length_verdict"]("grpo").startswith("In the first tenth of training wrong GRPO answers were")


@pytest.mark.parametrize("names, hybrids", [
    (("grpo", "dapo"), []),  # a filter (DAPO's) without the constant normaliser
    (("grpo", "dapo_dr"), ["dapo_dr"]),
    (("dr_grpo", "dapo_dr", "ladder_dynamic_sampling"), ["dapo_dr"]),  # normaliser alone, filter alone: neither
])
def test_hybrid_status_names_exactly_the_hybrid_runs(names, hybrids, tmp_path):
    """The chapter's sentence on the DAPO-filter-with-constant-normaliser hybrid: built from shipped
    runs, it names the runs that pair the two and no other, and says there is none when none does."""
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in names:
        (runs / name).symlink_to(SHIPPED / name, target_is_directory=True)
    text = bound_macros(runs)["hybrid_status"]()
    if not hybrids:
        assert text.startswith("No run of this hybrid is part of this build"), text
        return
    assert text.startswith(f"This build has {'a run' if len(hybrids) == 1 else 'runs'} of such a hybrid: "), text
    named = re.findall(r"(\w+) \(", text.split(": ", 1)[1])
    assert named == [get_run(name, runs).id for name in hybrids], text


# ---------------------------------------------------------------------------
# One strict build of the whole site
# ---------------------------------------------------------------------------

@pytest.fixture(scope="session")
def course_site(course_runs_dir, tmp_path_factory):
    url = f"http://127.0.0.1:{free_port()}/unipo/"
    build = build_site(tmp_path_factory.mktemp("course-site"), site_url=url,
                       extra_env={"UNIPO_RUNS": str(course_runs_dir)})
    if build.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{(build.log or '')[-6000:]}")
    return build


COURSE_PAGES = ("index.html", "course/anatomy/index.html", "course/compare/objectives/index.html",
                "course/compare/dynamics/index.html", "course/compare/aggregation/index.html",
                "course/compare/choosing/index.html", "course/compare/ladder/index.html",
                "course/compare/scale/index.html")


@pytest.mark.slow
def test_every_course_page_builds_with_its_figures(course_site):
    site = course_site.site_dir
    for page in COURSE_PAGES:
        text = (site / page).read_text(encoding="utf-8")
        assert "UNIPOHTML" not in text, page  # every protected macro's HTML was put back
        assert "run in this build)" not in text, f"{page} quotes a missing run although all five were built"
    for md in sorted((DOCS / "course" / "algorithms").glob("*.md")):
        assert (site / "course" / "algorithms" / md.stem / "index.html").is_file(), md.name
    anatomy = (site / "course/anatomy/index.html").read_text(encoding="utf-8")
    assert anatomy.count('class="unipo-inspector"') == 1
    assert all(f"{n}. " in anatomy for n in range(1, 7))  # the six beats
    assert anatomy.count('<details class="question"') >= 3  # predict-then-check questions
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "unipo-family-tree" in home and 'href="course/anatomy/"' in home


def _site_links(site: Path, base_path: str):
    """(page, raw href, target path or None for an external link) for every href and src."""
    pattern = re.compile(r'\s(?:href|src)="([^"]*)"')
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8", errors="replace")
        # templates hold JSON data, not links
        text = re.sub(r"<template\b.*?</template>", "", text, flags=re.S)
        for raw in pattern.findall(text):
            href = html.unescape(raw)
            parts = urlsplit(href)
            if parts.scheme in ("mailto", "data", "javascript") or (parts.scheme and parts.netloc not in (
                    "", urlsplit(base_path).netloc)):
                yield page, href, None
                continue
            path = unquote(parts.path)
            if not path:
                continue  # a fragment of the same page
            if parts.netloc or path.startswith("/"):
                prefix = urlsplit(base_path).path
                if not path.startswith(prefix):
                    yield page, href, site / "__outside__"
                    continue
                target = site / path[len(prefix):]
            else:
                target = (page.parent / path).resolve()
            yield page, href, target


@pytest.mark.slow
def test_no_broken_internal_link(course_site):
    site = course_site.site_dir.resolve()
    broken = []
    for page, href, target in _site_links(site, course_site.site_url):
        if target is None:
            continue
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            broken.append(f"{page.relative_to(site)} -> {href}")
    assert not broken, "broken links:\n" + "\n".join(sorted(set(broken))[:50])


# ---------------------------------------------------------------------------
# Source checks of the chapters
# ---------------------------------------------------------------------------

MACRO_CALL = re.compile(r"\{\{-?\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def test_every_macro_called_in_the_course_exists():
    known = registered_macros()
    unknown = []
    for path in course_sources():
        for name in MACRO_CALL.findall(path.read_text(encoding="utf-8")):
            if name not in known:
                unknown.append(f"{path.relative_to(REPO)}: {name}")
    assert not unknown, "macros that no module registers:\n" + "\n".join(unknown)


def prose_of(markdown: str) -> str:
    """The Markdown with macro calls, code and citation identifiers removed."""
    text = re.sub(r"\{\{.*?\}\}", " ", markdown, flags=re.S)  # macro calls
    text = re.sub(r"\{%.*?%\}", " ", text, flags=re.S)
    text = re.sub(r"^(\s*)(```|~~~).*?^\1\2", " ", text, flags=re.S | re.M)  # fenced code
    text = re.sub(r"`[^`\n]*`", " ", text)  # inline code
    text = re.sub(r"\]\([^)]*\)", "]", text)  # link targets (URLs)
    text = re.sub(r"arXiv[\s:]*\d{4}\.\d{4,5}", " ", text)  # citations: arXiv identifiers
    return text


DECIMAL = re.compile(r"\d+\.\d+")


def test_no_number_with_decimals_is_typed_into_the_prose():
    """Numbers from runs and specs come from macros, so the text stays true when they change."""
    offending = []
    for path in course_sources():
        for n, line in enumerate(prose_of(path.read_text(encoding="utf-8")).splitlines(), 1):
            if DECIMAL.search(line):
                offending.append(f"{path.relative_to(REPO)}: {line.strip()[:120]}")
    assert not offending, "typed decimals (quote them with a macro):\n" + "\n".join(offending)


def test_the_decimal_check_sees_typed_numbers():
    assert DECIMAL.search(prose_of("the reward rose from 0.43 to 0.47"))
    assert not DECIMAL.search(prose_of('it rose to {{ run_fact("grpo", "reward_last") }}'))
    assert not DECIMAL.search(prose_of("with `eps = 0.2` and [DAPO](https://arxiv.org/abs/2503.14476)"))
    assert not DECIMAL.search(prose_of("```yaml\neps: 0.2\n```\n"))


MOMENT_USE = [
    re.compile(r"""moment_fact\(\s*["']([^"']+)["']\s*,\s*["']([^"']+)["']"""),
    re.compile(r"""step_inspector\(\s*["']([^"']+)["'][^)]*moment\s*=\s*["']([^"']+)["']"""),
    re.compile(r"""critic_trace\(\s*["']([^"']+)["'][^)]*moment\s*=\s*["']([^"']+)["']"""),
]


def moments_used() -> list[tuple[str, str, str]]:
    out = []
    for path in course_sources():
        text = path.read_text(encoding="utf-8")
        for pattern in MOMENT_USE:
            for run, moment in pattern.findall(text):
                out.append((str(path.relative_to(REPO)), run, moment))
    return out


@pytest.mark.specs
def test_moments_named_in_the_course_exist():
    for where, _, moment in moments_used():
        assert moment in MOMENT_NAMES, f"{where}: unknown moment {moment!r}"


@pytest.mark.specs
def test_moments_used_in_the_course_resolve_against_the_shipped_runs():
    runs = [r for r in discover(SHIPPED) if r.ok] if SHIPPED.is_dir() else []
    finished = {r.header.algorithm: r for r in runs if r.header.finished_at is not None}
    if not finished:
        still = ", ".join(r.id for r in runs)
        pytest.skip("data/runs has no finished run yet" + (f" (still training: {still})" if still else "")
                    + ": the course's moments are checked against the shipped runs once they are there")
    missing = []
    for where, run_name, moment in moments_used():
        run = get_run(run_name, SHIPPED)  # the run the page shows: an algorithm's chosen run, else by id
        if run is None or not run.ok or run.header.finished_at is None:
            missing.append(f"{where}: no finished shipped run {run_name!r}")
        elif find_moment(run.path, moment) is None:
            missing.append(f"{where}: the shipped {run_name} run has no moment {moment!r}")
    assert not missing, "\n".join(missing)
