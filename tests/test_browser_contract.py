"""The names the browser needs, defined once in Python and handed to the page as data.

The event names (site/browser.py EVENTS) and the step-file name (runlog.TOKEN_FILE_*) reach the
scripts through the page's browser data (``<template id="unipo-browser">``, written by
overrides/main.html before unipo.js, which reads it into ``UNIPO.events`` / ``UNIPO.stepFile``).
No script writes one of those names itself, and every event key a script reads exists.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from unipo_build.core import runlog
from unipo_build.site import browser as common

ROOT = Path(__file__).resolve().parents[1]
#: the site's own scripts: the theme's (overrides/assets) and each view's, beside its Python
SCRIPT_DIRS = (ROOT / "overrides" / "assets", ROOT / "unipo_build" / "site")
MAIN_HTML = ROOT / "overrides" / "main.html"
BROWSER_DATA = re.compile(r'<template class="unipo-data" id="unipo-browser"[^>]*>(.*?)</template>', re.S)


def _scripts() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for d in SCRIPT_DIRS for p in sorted(d.rglob("*.js"))}


def test_the_browser_data_is_the_python_constants():
    data = common.browser_data()
    assert data["events"] == common.EVENTS
    step_file = data["step_file"]
    assert (step_file["prefix"], step_file["digits"], step_file["suffix"]) == (
        runlog.TOKEN_FILE_PREFIX, runlog.TOKEN_FILE_DIGITS, runlog.TOKEN_FILE_SUFFIX)
    # what the browser builds from them is the name the log and the site use
    for step in (0, 12, 123456, 1234567):
        js_name = step_file["prefix"] + str(step).rjust(step_file["digits"], "0") + step_file["suffix"]
        assert js_name == runlog.token_file_name(step) == common.step_path("r", step).rsplit("/", 1)[1]
        assert runlog.token_step_of(js_name) == step
    # the HTML the page carries holds exactly that data, under the id unipo.js reads
    match = BROWSER_DATA.fullmatch(common.browser_data_html())
    assert match and json.loads(match.group(1)) == data
    assert f'readData("{common.BROWSER_DATA_ID}")' in _scripts()["unipo.js"]


def test_main_html_writes_the_browser_data_before_unipo_js():
    text = MAIN_HTML.read_text(encoding="utf-8")
    data = text.index("{{ config.extra.unipo_browser }}")
    assert data < text.index("'assets/unipo.js' | url")


def test_no_script_writes_an_event_or_the_step_file_name_itself():
    found = []
    for name, text in _scripts().items():
        for event in common.EVENTS.values():
            if re.search(r"""["']""" + re.escape(event) + r"""["']""", text):
                found.append(f"{name}: {event}")
        if re.search(r"""["']""" + re.escape(runlog.TOKEN_FILE_PREFIX) + r"""["']""", text) or "padStart(6" in text:
            found.append(f"{name}: the step-file name")
    assert found == []


def test_every_event_a_script_reads_is_defined():
    read = {}
    for name, text in _scripts().items():
        for key in re.findall(r"\bevents\.([A-Za-z_]\w*)", text):
            read.setdefault(key, set()).add(name)
        for key in re.findall(r"\bEVENTS\.([A-Za-z_]\w*)", text):
            read.setdefault(key, set()).add(name)
    assert read, "no script reads an event name from the browser data"
    unknown = {key: sorted(names) for key, names in read.items() if key not in common.EVENTS}
    assert unknown == {}
    # and no name is sent that no script reads
    assert sorted(set(common.EVENTS) - set(read)) == []


def test_the_inspector_sends_no_event_names():
    """The inspector's data once carried event names no script read; the page's browser data does."""
    from unipo_build.site.views.inspector import inspector
    source = Path(inspector.__file__).read_text(encoding="utf-8")
    assert '"events"' not in source and "EVENT_" not in source


def test_every_built_page_carries_the_browser_data(built_site):
    pages = sorted(built_site.rglob("*.html"))
    assert pages
    for page in pages:
        match = BROWSER_DATA.search(page.read_text(encoding="utf-8"))
        assert match, f"{page.relative_to(built_site)}: no unipo-browser data"
        assert json.loads(match.group(1)) == common.browser_data(), page.relative_to(built_site)
