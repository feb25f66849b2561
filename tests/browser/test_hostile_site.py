"""The whole site built from hostile inputs, crawled in Chromium: nothing runs, nothing is injected,
every payload reads as the text it is, and the console stays clean.

tests/hostile.py copies the project and fills every free-text field of every shipped spec and of
every file of every shipped run with tagged payloads (HTML, attribute breaking, </script> and
</template>, Markdown, Jinja, KaTeX commands, javascript: URLs, control and bidi characters,
placeholder look-alikes, strings as long as their field allows), generated from the pydantic
models; every float of those runs sits at the bound its field allows (tests/hostile.py extreme_run);
a run whose identifiers are payloads sits next to them and must be skipped. The site is built once,
with UNIPO_RUNS pointing at those runs, served on 127.0.0.1 and opened page by page, each
once; then Material's instant navigation swaps in one page of every kind (each combination of
view scripts, charts and formulas a page can hold). On each page every view is driven (steps,
tokens, metrics, buttons, sliders, chart hovers) and the page is searched for:

- dialogs and script execution (alert/confirm/prompt are recorded before any page script runs),
- injected markup: an element carrying ``data-unipo-marker``, any inline event handler, any
  ``javascript:`` link,
- payloads that did not come out literally (each payload starts with its tag ``⟦h<n>⟧``),
- token text without bidi isolation, and tokens with nothing to click (empty, zero-width),
- console errors (a Content-Security-Policy violation is one).

Statically, every page and the search index are scanned for markup made from an input, and
every chart's Vega-Lite spec is compiled (with the pinned vega-lite, in Node) to check that no
input string ends up in a Vega expression: inputs are data only.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin

import pytest

import browser_harness as H
from helpers_runlog import checksums
from hostile import MARK, Payloads, floats_at_bounds, hostile_project, identifier_cases, runs_at_bounds
from site_build import invalid_charts, vega_lite_checker

REPO = Path(__file__).resolve().parents[2]
HEAD = re.compile("\u27e6(h\\d+)\u27e7")

#: Recorded before any script of the page runs (Chrome DevTools: addScriptToEvaluateOnNewDocument).
RECORDER = """
window.__unipoHits = [];
['alert', 'confirm', 'prompt', 'print'].forEach(function (name) {
  window[name] = function (message) { window.__unipoHits.push(name + ': ' + message); return null; };
});
"""

#: What a page shows: its text (template contents are not text), titles, and attribute values.
#: Chart text (SVG drawn by Vega from data: wrapped, cut to a width) is checked for injected
#: markup only, not for being the literal payload.
COLLECT = """
const attrs = [];
document.querySelectorAll('[title], [aria-label], [alt], [placeholder], [data-tooltip]').forEach(function (el) {
  if (el.closest('svg')) return;
  ['title', 'aria-label', 'alt', 'placeholder', 'data-tooltip'].forEach(function (a) {
    if (el.hasAttribute(a)) attrs.push(el.getAttribute(a));
  });
});
const body = document.body.cloneNode(true);
body.querySelectorAll('svg').forEach(function (svg) { svg.remove(); });
const handlers = [];
document.querySelectorAll('*').forEach(function (el) {
  for (const a of el.attributes) {
    if (/^on/i.test(a.name)) handlers.push(el.tagName.toLowerCase() + '[' + a.name + ']');
  }
});
const tokens = [...document.querySelectorAll('.unipo-tok, .unipo-tokens--static > span')];
const unisolated = tokens.filter(function (t) { return getComputedStyle(t).unicodeBidi !== 'isolate'; })
  .map(function (t) { return t.textContent.slice(0, 40); });
const unclickable = [...document.querySelectorAll('.unipo-tok')].filter(function (t) {
  if (!t.offsetParent) return false;  // in a closed panel: nothing to click yet
  const box = t.getBoundingClientRect();
  return box.width < 1 || box.height < 1;
}).map(function (t) { return [t.dataset.g, t.dataset.r, t.dataset.t].join(':') + ' ' + JSON.stringify(t.textContent); });
const scripted = [...document.querySelectorAll('[href], [src], [action], [formaction], [xlink\\\\:href]')]
  .filter(function (el) {
    return ['href', 'src', 'action', 'formaction', 'xlink:href'].some(function (a) {
      return /^\\s*javascript:/i.test(el.getAttribute(a) || '');
    });
  }).map(function (el) { return el.outerHTML.slice(0, 120); });
return {
  hits: window.__unipoHits || ['(the recorder is missing: the page was replaced?)'],
  markers: [...document.querySelectorAll('[MARK]')].map(function (el) { return el.getAttribute('MARK'); }),
  handlers: handlers,
  scripted: scripted,
  unisolated: unisolated,
  unclickable: unclickable,
  text: document.title + '\\n' + body.textContent + '\\n' + attrs.join('\\n'),
};
""".replace("MARK", MARK)

#: Drives every view on the page; resolves with the number of actions. Every control is used,
#: but each kind of control of each view only as often as it can show something new: a select
#: goes to its last option and to options that name a payload; a token list has its blank tokens
#: and two others clicked; of each kind of button in a view, those that name a payload and two
#: more are pressed; each slider goes to both ends; every box is ticked, every fold opened.
INTERACT = """
const done = arguments[arguments.length - 1];
const frame = function () { return new Promise(function (r) { requestAnimationFrame(r); }); };
const root = document.querySelector('[data-md-component="content"]') || document.body;
const PAYLOAD = '\\u27e6';
async function settle() {
  // until no inspector loads a step (one far from the viewport starts when the reader nears it),
  // at most 6 s; then two frames, so what the action drew is on the page
  const start = performance.now();
  while (root.querySelector('.unipo-inspector[data-loading="1"]') && performance.now() - start < 6000) await frame();
  await frame();
  await frame();
}
function view(el) {
  const box = el.closest('[id]');
  return box ? box.id : '';
}
function payloadFirst(list) {
  return list.filter(function (x) { return x.textContent.includes(PAYLOAD); })
    .concat(list.filter(function (x) { return !x.textContent.includes(PAYLOAD); }));
}
(async function () {
  let actions = 0;
  for (const select of root.querySelectorAll('select')) {
    const options = [...select.options];
    const named = options.filter(function (o) { return o.textContent.includes(PAYLOAD); }).slice(0, 2);
    for (const option of [...new Set(named.concat(options.slice(-1)))]) {
      if (!select.isConnected) break;
      select.value = option.value;
      select.dispatchEvent(new Event('change', {bubbles: true}));
      actions++;
      await settle();
    }
  }
  const lists = new Map();
  for (const token of root.querySelectorAll('.unipo-tok')) {
    const key = view(token);
    if (!lists.has(key)) lists.set(key, []);
    lists.get(key).push(token);
  }
  for (const tokens of lists.values()) {
    const blank = tokens.filter(function (t) { return t.classList.contains('unipo-tok--blank'); });
    for (const token of [...new Set(blank.slice(0, 3).concat(tokens.slice(0, 2)))]) {
      if (!token.isConnected) continue;
      token.click();
      actions++;
      await settle();
    }
  }
  const groups = new Map();
  for (const button of root.querySelectorAll('button, [role=button]')) {
    if (button.matches('.unipo-tok, .md-clipboard') || button.closest('.md-clipboard, .md-search, .md-header, .md-nav')) continue;
    const key = view(button) + ' ' + (button.classList[0] || button.tagName);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(button);
  }
  for (const buttons of groups.values()) {
    const ordered = payloadFirst(buttons);
    const named = ordered.filter(function (b) { return b.textContent.includes(PAYLOAD); }).length;
    for (const button of ordered.slice(0, Math.min(named, 4) + 2)) {
      if (!button.isConnected) continue;
      button.click();
      actions++;
      await settle();
    }
  }
  for (const range of root.querySelectorAll('input[type=range]')) {
    for (const value of [range.min, range.max]) {
      range.value = value;
      range.dispatchEvent(new Event('input', {bubbles: true}));
      range.dispatchEvent(new Event('change', {bubbles: true}));
      actions++;
    }
  }
  for (const box of root.querySelectorAll('input[type=checkbox], input[type=radio]')) {
    box.click();
    actions++;
  }
  for (const summary of root.querySelectorAll('details:not([open]) > summary')) summary.click();
  await settle();
  done(actions);
})().catch(function (err) { done('error: ' + err); });
"""


@dataclass
class HostileBuild:
    site: Path
    server: H.SiteServer
    log: str
    returncode: int
    payloads: Payloads
    runs: Path
    inputs_before: dict
    inputs_after: dict
    skipped_dir: str


def _inputs(project: Path, runs: Path) -> dict:
    return {"specs": checksums(project / "data" / "algorithms"), "runs": checksums(runs)}


@pytest.fixture(scope="module")
def hostile_build(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile-site")
    payloads = Payloads()
    project, runs = hostile_project(REPO, root, payloads)
    # The numbers at their bounds in the same runs: one build and one walk check both kinds of input.
    runs_at_bounds(runs)
    # A run whose identifiers are payloads, in a directory whose name is one: it must be skipped,
    # and the page that lists skipped runs shows both as text.
    skipped_dir = "evil \"'<img src=x " + MARK + "=dir onerror=alert('dir')>"
    source = sorted(p for p in runs.iterdir() if p.is_dir())[0]
    shutil.copytree(source, runs / skipped_dir)
    header = json.loads((runs / skipped_dir / "header.json").read_text(encoding="utf-8"))
    header.update(identifier_cases(payloads))
    (runs / skipped_dir / "header.json").write_text(json.dumps(header, ensure_ascii=False), encoding="utf-8")
    before = _inputs(project, runs)
    site = root / "site"
    server = H.SiteServer(site)  # its port is held from now until the module's end
    # A numeric overflow anywhere in the build (a float at ±1e15 squared, exp of a log-prob at -300) is an
    # error, not a warning in a log.
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=str(project), UNIPO_RUNS=str(runs),
               UNIPO_NODE_MODULES=str(REPO / "node_modules"), UNIPO_SITE_URL=server.url,
               PYTHONWARNINGS="error::RuntimeWarning")
    env.pop("UNIPO_STRICT_RUNS", None)
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-f", str(project / "mkdocs.yml"),
                           "-d", str(site)], cwd=project, env=env, capture_output=True, text=True, timeout=900)
    yield HostileBuild(site, server, proc.stdout + proc.stderr, proc.returncode, payloads, runs, before,
                       _inputs(project, runs), skipped_dir)
    server.close()


@pytest.fixture(scope="module")
def served(hostile_build):
    H.require_browser()
    if hostile_build.returncode != 0:
        pytest.fail("the hostile site did not build:\n" + hostile_build.log[-4000:])
    with hostile_build.server as url:
        yield url


@pytest.fixture
def browser(served, driver):
    """A fresh tab that records dialogs (RECORDER) and waits long for the big hostile pages."""
    driver.set_page_load_timeout(120)
    driver.set_script_timeout(120)
    H.add_init_script(driver, RECORDER)
    H.watch_sitemap(driver)
    return driver


def _pages(site: Path) -> list[str]:
    return sorted(str(p.relative_to(site).parent).replace(".", "") for p in site.rglob("index.html")
                  if "assets" not in p.parts)


# ------------------------------------------------------------------------------------- checks


def _normal(text: str) -> str:
    """Browsers drop NUL from text and turn it into U+FFFD in attributes."""
    return text.replace("\x00", "").replace("\ufffd", "")


def _token_mode(text: str) -> str:
    """The Step Inspector's raw-token mode marks spaces, newlines and tabs (inspector.js)."""
    return text.replace(" ", "\u00b7").replace("\n", "\u21b5\n").replace("\t", "\u2192")


def _token_label(text: str) -> str:
    """A token named in a sentence, a heading or a table (site/browser.py token_label, views-common.js
    tokenLabel): spaces, line breaks and tabs marked, on one line."""
    return text.replace(" ", "\u00b7").replace("\n", "\u21b5").replace("\t", "\u2192")


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def mangled(text: str, payloads: Payloads, *, one_line: bool = False) -> list[str]:
    """Payloads whose text on the page is not the payload. A prefix cut with '…' is allowed, and
    one cut just before a colon (the family tree's change phrase is a summary's head).
    ``one_line``: whitespace runs count as one space (search results are indexed that way)."""
    text = _one_line(_normal(text)) if one_line else _normal(text)
    bad = []
    for match in HEAD.finditer(text):
        tag = match.group(1)
        expected = payloads.texts.get(tag)
        if expected is None:
            bad.append(f"{tag}: not a tag this build handed out")
            continue
        ok = False
        # as given; in the inspector's raw-token mode; as a token named in a sentence (token_label);
        # or kept on one line (spaces made no-break, as tables do with algorithm names)
        candidates = [_normal(expected), _token_mode(_normal(expected)), _token_label(_normal(expected)),
                      _normal(expected).replace(" ", "\u00a0")]
        for candidate in [_one_line(c) for c in candidates] if one_line else candidates:
            shown = text[match.start():match.start() + len(candidate) + 1]
            common = len(os.path.commonprefix([shown, candidate]))
            cut = common >= len(match.group(0)) and (shown[common:common + 1] == "\u2026"
                                                     or candidate[common:common + 1] == ":")
            if common == len(candidate) or cut:
                ok = True
                break
        if not ok:
            bad.append(f"{tag} ({payloads.kinds[tag]}, {payloads.where[tag]}): shown as {shown[:120]!r}")
    return bad


def check_page(driver, payloads: Payloads, where: str, *, one_line: bool = False) -> list[str]:
    state = driver.execute_script(COLLECT)
    problems = [f"{where}: dialog or script ran: {h}" for h in state["hits"]]
    problems += [f"{where}: injected element with {MARK}={m}" for m in state["markers"]]
    problems += [f"{where}: inline event handler {h}" for h in state["handlers"]]
    problems += [f"{where}: javascript: URL in {s}" for s in state["scripted"]]
    problems += [f"{where}: token without bidi isolation: {t!r}" for t in state["unisolated"][:5]]
    problems += [f"{where}: token with nothing to click: {t}" for t in state["unclickable"][:5]]
    problems += [f"{where}: {m}" for m in mangled(state["text"], payloads, one_line=one_line)[:20]]
    return problems


def errors_in_console(driver, where: str) -> list[str]:
    return [f"{where}: console: {e['message'][:300]}" for e in H.console_errors(driver)]


# ------------------------------------------------------------------------------------- tests


def test_the_hostile_site_builds_and_leaves_its_inputs_alone(hostile_build):
    log = hostile_build.log
    assert hostile_build.returncode == 0, log[-5000:]
    assert "Traceback" not in log and "RuntimeWarning" not in log
    assert hostile_build.inputs_after == hostile_build.inputs_before
    # every hostile run loaded but the one whose identifiers are payloads
    skipped = [line for line in log.splitlines() if "failed to load" in line]
    assert len(skipped) == 1 and hostile_build.skipped_dir in skipped[0], skipped
    for field in ("run_id", "algorithm", "preset"):
        assert f"{field}: String should match pattern" in log
    published = {p.name for p in (hostile_build.site / "assets" / "runs").iterdir()}
    # the runs with token detail: those are the ones whose steps the inspector fetches
    from unipo_build.core import runlog  # a shipped run's token files are gzipped (step_N.json.gz)
    assert published == {p.name for p in (REPO / "data" / "runs").iterdir() if runlog.token_steps(p)}


def test_every_chart_made_from_hostile_runs_is_valid_vega_lite(hostile_build):
    """A build makes its charts without Altair's schema check: charts made from runs full of payloads and
    numbers at their bounds are still valid Vega-Lite."""
    checked, invalid = invalid_charts(hostile_build.site, vega_lite_checker())
    assert invalid == {}
    assert checked >= 50, f"only {checked} Vega-Lite specs found in the hostile site"


def test_the_generator_reached_every_kind_of_payload_and_field(hostile_build):
    payloads = hostile_build.payloads
    assert set(payloads.kinds.values()) >= {"html", "attribute", "script", "template", "markdown", "jinja", "katex",
                                             "url", "bidi", "control", "nul", "placeholder", "huge"}
    fields = {w.split("/", 1)[-1] for w in payloads.where.values()}
    for expected in ("header.title", "header.notes", "header.task.name", "header.model.name",
                     "header.algorithm_config.name", "header.reward.components[].name", "header.hyperparameters.(extra)",
                     "steps.metrics.(key)", "tokens.prompts[].prompt", "tokens.prompts[].answer",
                     "tokens.prompts[].responses[].tokens.text[]", "tokens.prompts[].responses[].reward_components.(key)",
                     "spec.name", "spec.full_name", "spec.summary", "spec.changed", "spec.paper.title",
                     "spec.components.*.explanation", "spec.components.*.tooltips.*"):
        assert expected in fields, expected


def test_no_page_holds_scriptable_markup_made_from_an_input(hostile_build):
    """Static check of every built page and the search index: no marker attribute, event handler
    or javascript: URL, which a payload could only have made by being read as HTML."""
    from html.parser import HTMLParser

    problems = []

    class Scan(HTMLParser):
        def handle_starttag(self, tag, attrs):
            for name, value in attrs:
                if name == MARK or name.startswith("on") or re.match(r"\s*javascript:", value or "", re.I):
                    problems.append(f"{page}: <{tag} {name}={value!r}>")

    for path in sorted(hostile_build.site.rglob("*.html")):
        page = str(path.relative_to(hostile_build.site))
        Scan().feed(path.read_text(encoding="utf-8"))
    index = json.loads((hostile_build.site / "search" / "search_index.json").read_text(encoding="utf-8"))
    for doc in index["docs"]:
        for key in ("title", "text"):
            if MARK in html.unescape(doc.get(key, "")) and "<img" in doc.get(key, ""):
                problems.append(f"search index {doc['location']}: {key} holds raw markup from an input")
    assert problems == []


_WALKS: dict[str, dict[str, dict[str, list[str]]]] = {}


def page_walk(hostile_build, served, browser) -> dict[str, dict[str, list[str]]]:
    """Each page of the hostile site opened once, directly, and checked as loaded, then its views driven
    and checked again (_check_and_drive): {page: {kind of problem: problems}}. Made once per module run by
    the first test that reads it (the every-page test and the numbers-at-their-bounds test read the same
    pages of the same build)."""
    key = str(hostile_build.site)
    if key not in _WALKS:
        walk = {}
        for page in _pages(hostile_build.site):
            browser.get(urljoin(served, page + ("/" if page else "")))
            walk[page] = _check_and_drive(browser, hostile_build.payloads, page or "index")
        _WALKS[key] = walk
    return _WALKS[key]


def test_every_page_shows_inputs_as_text_and_runs_nothing(hostile_build, served, browser):
    """Each page opened once, directly: checked as loaded, then its views driven and checked again."""
    walk = page_walk(hostile_build, served, browser)
    assert sorted(walk) == _pages(hostile_build.site)
    problems = [p for found in walk.values() for kind in PROBLEM_KINDS for p in found[kind]]
    assert problems == [], _report(problems)


def test_instant_navigation_runs_nothing(hostile_build, served, browser):
    """Material's instant navigation swaps a page's content in place and runs its scripts again:
    from the landing page, go (by a click Material intercepts) to one page of every kind, and
    check and drive each as it lands."""
    browser.get(served)
    H.wait_rendered(browser, timeout=60)
    sample = instant_sample(hostile_build.site)
    problems = []
    for page in sample:
        target = urljoin(served, page + ("/" if page else ""))
        H.wait_instant_navigation(browser)
        browser.execute_script("""
            window.__unipoInstant = 1;
            const a = document.createElement('a');
            a.href = arguments[0];
            document.body.appendChild(a);
            a.click();""", target)
        H.wait_until(browser, lambda drv, target=target: drv.current_url == target, timeout=30,
                     what=f"the URL {target}")
        where = f"{page or 'index'} (instant)"
        if browser.execute_script("return window.__unipoInstant") != 1:
            problems.append(f"{where}: the page was loaded anew, not swapped in by instant navigation")
        found = _check_and_drive(browser, hostile_build.payloads, where)
        problems += [p for kind in PROBLEM_KINDS for p in found[kind]]
    assert len(sample) >= 3, sample
    assert problems == [], _report(problems)


def test_search_results_show_inputs_as_text(hostile_build, served, browser):
    browser.get(served)
    H.wait_rendered(browser, timeout=60)
    problems = []
    for query in ("onerror", "alert", "javascript", "script", "bold"):
        # Material empties the result list when it shows the results of a query: a sentinel put in
        # the list before the query is gone once this query's results are drawn
        browser.execute_script("""
            const input = document.querySelector('.md-search__input');
            document.querySelector('label[for=__search]').click();
            const sentinel = document.createElement('li');
            sentinel.hidden = true;
            sentinel.id = 'unipo-search-sentinel';
            document.querySelector('.md-search-result__list').append(sentinel);
            input.value = arguments[0];
            input.dispatchEvent(new Event('input', {bubbles: true}));
            input.dispatchEvent(new KeyboardEvent('keyup', {bubbles: true}));""", query)
        H.wait_js(browser, "return !document.getElementById('unipo-search-sentinel')", timeout=15,
                  what=f"the results of {query!r}")
        H.wait_settled(browser, "return document.querySelectorAll('.md-search-result__item').length",
                       what=f"the results of {query!r}")
        problems += check_page(browser, hostile_build.payloads, f"search {query!r}", one_line=True)
    problems += errors_in_console(browser, "search")
    assert problems == [], _report(problems)


def test_charts_carry_inputs_only_as_data(hostile_build):
    """Every chart of the hostile site compiled to Vega by the pinned vega-lite: no payload in
    any expression (a signal, a formula, a filter, a test, an axis label expression)."""
    specs = []
    for path in sorted(hostile_build.site.rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        for chart in re.findall(r'class="unipo-vega" data-spec-id="([^"]+)"', text):
            found = re.search(r'<template class="unipo-data" id="' + re.escape(chart) + r'"[^>]*>(.*?)</template>',
                              text, re.S)
            assert found, f"{path}: no spec for chart {chart}"
            specs.append((f"{path.relative_to(hostile_build.site)}#{chart}", json.loads(found.group(1))))
    assert any(HEAD.search(json.dumps(spec, ensure_ascii=False)) for _, spec in specs), \
        "no chart shows a payload: the check would prove nothing"
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is needed to compile the charts (npm ci installs the libraries)")
    proc = subprocess.run([node, str(Path(__file__).with_name("vega_expressions.mjs"))],
                          input=json.dumps([spec for _, spec in specs]), capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, NODE_PATH=str(REPO / "node_modules")))
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["compiled"] == len(specs) and result["expressions"] > 0
    leaks = [f"{specs[i][0]}: {where}: {expr[:200]}" for i, where, expr in result["found"] if HEAD.search(expr)]
    assert leaks == [], "\n".join(leaks[:20])


def test_numbers_at_their_bounds_render_without_errors(hostile_build, served, browser):
    """Every float of every shipped run at the bound its field allows (the hostile site's runs hold
    them): each page renders its formulas and charts and drives its views with a clean console."""
    runs = sorted(p for p in hostile_build.runs.iterdir() if p.is_dir() and p.name != hostile_build.skipped_dir)
    assert {p.name for p in runs} == {p.name for p in (REPO / "data" / "runs").iterdir() if p.is_dir()}
    for run in runs:
        floats, off_bounds = floats_at_bounds(run)
        assert floats > 0 and off_bounds == [], (run.name, floats, off_bounds[:5])
    walk = page_walk(hostile_build, served, browser)
    assert sorted(walk) == _pages(hostile_build.site)
    problems = [p for found in walk.values() for kind in ("rendered", "driven", "console") for p in found[kind]]
    assert problems == [], _report(problems)


#: The kinds of problem _check_and_drive finds, in the order it finds them.
PROBLEM_KINDS = ("rendered", "shown", "driven", "shown after driving", "console")


def _check_and_drive(driver, payloads: Payloads, where: str) -> dict[str, list[str]]:
    """Wait for the page to render, check it, drive its views, check it again, read the console:
    {kind of problem (PROBLEM_KINDS): problems}."""
    found = {kind: [] for kind in PROBLEM_KINDS}
    try:
        H.wait_rendered(driver, timeout=60)
    except AssertionError as err:
        found["rendered"].append(f"{where}: {err}")
    found["shown"] = check_page(driver, payloads, where)
    actions = driver.execute_async_script(INTERACT)
    if isinstance(actions, str):
        found["driven"].append(f"{where}: driving the views failed: {actions}")
    _hover_charts(driver)
    found["shown after driving"] = check_page(driver, payloads, f"{where} (after driving its views)")
    found["console"] = errors_in_console(driver, where)
    return found


def instant_sample(site: Path) -> list[str]:
    """One page of every kind, in site order: each combination of view scripts, charts, formulas
    and playgrounds that a page of the built site holds (computed from the pages, not listed)."""
    kinds: dict[tuple, str] = {}
    for page in _pages(site):
        text = (site / page / "index.html").read_text(encoding="utf-8")
        kind = (tuple(sorted(set(re.findall(r"assets/views/([a-z-]+)\.js", text)))), "unipo-vega" in text,
                "arithmatex" in text, "unipo-data" in text)
        kinds.setdefault(kind, page)
    return [page for page in _pages(site) if page in kinds.values() and page]


def _report(problems: list[str]) -> str:
    """The problems, one per line (also written to $UNIPO_HOSTILE_REPORT when it is set)."""
    text = f"{len(problems)} problems:\n" + "\n".join(p[:400] for p in problems)
    if os.environ.get("UNIPO_HOSTILE_REPORT"):
        with open(os.environ["UNIPO_HOSTILE_REPORT"], "a", encoding="utf-8") as fh:
            fh.write(text + "\n")
    return text[:20000]


def _hover_charts(driver) -> None:
    """Move the real pointer over a few points of the first charts, so tooltips are drawn.

    Each move is one trusted pointer move to its point, and the next frame is awaited before the next
    move. Duration 0: with Selenium's default of 250 ms chromedriver waits that long and then sends the
    same single move (no point in between), which was half of the hover's time."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    for chart in driver.find_elements(By.CSS_SELECTOR, ".md-content .unipo-vega svg, .md-content .unipo-explorer svg")[:4]:
        try:
            width = driver.execute_script("arguments[0].scrollIntoView({block: 'center'});"
                                          "return arguments[0].getBoundingClientRect().width", chart)
            for fx in (-0.3, 0.0, 0.3):
                ActionChains(driver, duration=0).move_to_element_with_offset(chart, int(width * fx), 0).perform()
                H.next_frame(driver)  # the tooltip of this point is drawn before the pointer moves on
        except WebDriverException:
            continue
