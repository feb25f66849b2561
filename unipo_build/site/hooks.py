"""MkDocs hooks (``hooks: [unipo_build/site/hooks.py]`` in mkdocs.yml).

- ``on_config``: reads the run sets (``extra.unipo_sets``, ``unipo_build.core.sets``: a malformed
  entry stops the build with one line naming mkdocs.yml, the entry and the field), notes which
  set this build shows (``extra.unipo_set``) and, when more than one set is available, the sets
  the header's set switch offers (``extra.unipo_set_switch``); checks that ``node_modules``
  holds the browser libraries at the versions pinned in ``package.json`` and that Vega-Lite
  matches Altair's schema, and that the runs the build is pointed at exist (``UNIPO_RUNS`` or
  ``extra.unipo_runs``: ``unipo_build.core.runs``); under ``UNIPO_STRICT_RUNS=1`` fails the build,
  with the validator's messages, if a run cannot be read.
- ``on_page_content``: puts back the HTML that macros protected from Markdown
  (see ``unipo_build.site.macros``), and adds the view scripts the page's macros asked
  for (``page_state.use_scripts``): a page without a Step Inspector loads no inspector code; and
  chooses those views' style sheets (``page_state.VIEW_STYLES``), which ``on_post_page`` links in the
  page's head: a page without a Step Inspector loads no inspector styles either.
- ``on_page_context``: gives the template the set switch's links to the same page in each
  other set (``unipo_set_links``: relative, so they work under any subpath; the page's script
  adds the reader's query and hash when they follow one); hands Material's search plugin the
  page as the index should read it (``views/search_text.index_view``: words of neighbouring
  elements apart, hidden text left out) and gives the page its own HTML back once the plugin
  has read it.
- ``on_post_page`` / ``on_post_template``: link the page's view style sheets in its head, and put
  the hashes of the theme's inline scripts into the page's Content-Security-Policy
  (``unipo_build.site.csp``).
- ``on_post_build``: copies the libraries' dist files into ``site/assets/vendor/``, so that
  every page loads them from the site's own origin (vega-interpreter's ES module converted to a
  classic script), writes the palette (``site/palette.py``) as ``assets/palette.css`` and
  ``assets/palette.json``, the view scripts and style sheets under ``assets/views/`` and the
  pages' site-wide sheet as ``assets/pages.css``, and puts the search index's formulas as text
  (``site/search_text.py``);
  then, in the default set's build only, builds the whole course again for every other available
  set under ``<site_dir>/<id>/`` (:func:`build_set`): the same config with ``extra.unipo_set`` set
  to that set, so every macro, chart, computed sentence and view reads that set's runs, and the
  set's pages have their own assets, run data and search index.
- ``on_serve``: ``mkdocs serve`` rebuilds when a run of a further set changes.

MkDocs loads this file by path, so it imports the package absolutely.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import time
from pathlib import Path
from urllib.parse import urljoin

from mkdocs.exceptions import PluginError
from mkdocs.plugins import CombinedEvent, event_priority

from unipo_build.site import csp
from unipo_build.site import page_state
from unipo_build.core import project, registry, runs, sets, specs
from unipo_build.site import palette, run_needs, search_text
from unipo_build.site.browser import browser_data_html, site_root

#: (npm package, path inside the package, path under site/assets/vendor/).
VENDOR_FILES: list[tuple[str, str, str]] = [
    ("vega", "build/vega.min.js", "vega/vega.min.js"),
    ("vega", "LICENSE", "vega/LICENSE"),
    ("vega-lite", "build/vega-lite.min.js", "vega-lite/vega-lite.min.js"),
    ("vega-lite", "LICENSE", "vega-lite/LICENSE"),
    ("vega-embed", "build/vega-embed.min.js", "vega-embed/vega-embed.min.js"),
    ("vega-embed", "LICENSE", "vega-embed/LICENSE"),
    ("katex", "dist/katex.min.js", "katex/katex.min.js"),
    ("katex", "dist/katex.min.css", "katex/katex.min.css"),
    ("katex", "dist/fonts", "katex/fonts"),
    ("katex", "LICENSE", "katex/LICENSE"),
    ("vega-interpreter", "LICENSE", "vega-interpreter/LICENSE"),
]

#: (npm package, ES module inside the package, classic script under site/assets/vendor/): files
#: converted rather than copied (see unipo_build.site.csp.classic_interpreter).
CONVERTED_FILES: list[tuple[str, str, str]] = [
    ("vega-interpreter", "build/vega-interpreter.js", "vega-interpreter/vega-interpreter.js"),
]

FIX = "run `npm ci` in the repository root (or `bash .ci/setup-site.sh`)"

log = logging.getLogger("mkdocs.plugins.unipo.sets")


def _project_dir(config) -> Path:
    return Path(config.config_file_path).resolve().parent


def _node_modules(config) -> Path:
    return Path(os.environ.get("UNIPO_NODE_MODULES") or _project_dir(config) / "node_modules")


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.lstrip("v").split("-")[0].split("."))


def check_vendor(config) -> None:
    """Fail with a clear message if node_modules lacks a pinned library or a dist file."""
    project = _project_dir(config)
    node_modules = _node_modules(config)
    pins = json.loads((project / "package.json").read_text(encoding="utf-8"))["dependencies"]
    if not node_modules.is_dir():
        raise PluginError(
            f"{node_modules} not found: the site serves KaTeX and Vega from it; {FIX}."
        )
    for package in sorted({p for p, _, _ in VENDOR_FILES}):
        manifest = node_modules / package / "package.json"
        if not manifest.is_file():
            raise PluginError(f"Browser library '{package}' is missing ({manifest} not found): {FIX}.")
        found = json.loads(manifest.read_text(encoding="utf-8"))["version"]
        if found != pins.get(package):
            raise PluginError(
                f"{node_modules / package} is version {found} but package.json pins "
                f"{pins.get(package)}: {FIX}."
            )
    for package, src, _ in VENDOR_FILES + CONVERTED_FILES:
        path = node_modules / package / src
        if not path.exists():
            raise PluginError(f"Missing browser library file {path}: {FIX}.")
    # Altair writes specs against one Vega-Lite schema; the runtime must be that major
    # version and not older.
    import altair

    schema = _version_tuple(altair.SCHEMA_VERSION)
    runtime = _version_tuple(pins["vega-lite"])
    if runtime[0] != schema[0] or runtime < schema:
        raise PluginError(
            f"package.json pins vega-lite {pins['vega-lite']} but Altair {altair.__version__} "
            f"writes Vega-Lite {altair.SCHEMA_VERSION} specs: pin vega-lite "
            f"{altair.SCHEMA_VERSION.lstrip('v')} (same major, not older) and run `npm install`."
        )


def check_specs(root: Path) -> None:
    """Every spec the pages can name is read before any page renders: a bad one stops the build
    with the spec loader's message (file and field), which MkDocs prints with or without -q,
    instead of a macro's traceback in the middle of a page."""
    directory = root / project.SPECS
    if not directory.is_dir():
        return  # a project without specs; a page that asks for one says so then
    try:
        specs.load_specs(directory)
        for path in specs.ablation_spec_paths(directory):
            specs.load_spec(path)
    except specs.SpecError as err:
        raise PluginError(str(err)) from None


def check_kinds() -> None:
    """Every registered kind can be explained in the browser: a kind without its explainer data
    (registry.explain) stops the build with one line naming the kind and what is missing."""
    try:
        registry.check_explainable()
    except ValueError as err:
        raise PluginError(str(err)) from None


def read_sets(config) -> tuple[sets.RunSet, list[sets.RunSet]]:
    """(the set this build shows, the sets available), or PluginError with core/sets.py's one line."""
    root = _project_dir(config)
    try:
        shown = sets.shown_set(config.extra, root)
        available = sets.available_sets(config.extra, root)
    except (sets.SetsError, project.ProjectError) as err:
        raise PluginError(str(err)) from None
    if shown not in available:  # a further set's build whose runs went away since it started
        raise PluginError(f"mkdocs.yml extra.unipo_sets: the set {shown.id!r} holds no runs in {shown.runs}")
    return shown, available


def note_sets(config) -> None:
    """``extra.unipo_set`` (the id of the set shown), ``extra.unipo_set_label`` and
    ``extra.unipo_set_switch`` (the sets the header offers: empty when there is only one)."""
    shown, available = read_sets(config)
    config.extra["unipo_set"] = shown.id
    config.extra["unipo_set_label"] = shown.label
    config.extra["unipo_set_default"] = shown.default
    config.extra["unipo_set_switch"] = ([{"id": s.id, "label": s.label, "prefix": s.prefix} for s in available]
                                        if len(available) > 1 else [])
    if config.extra["unipo_set_switch"]:
        # Material's header includes partials/alternate.html (its language selector, which this
        # course does not use) when extra.alternate is set: the override there is the set switch.
        config.extra["alternate"] = True


def set_links(page_url: str, shown_prefix: str, switch: list[dict]) -> list[dict]:
    """For the page at ``page_url`` (relative to its set's root) of the set whose pages live under
    ``shown_prefix``: each set's link to the same page, relative to this page, and to its root."""
    up = site_root(page_url) + "../" * shown_prefix.count("/")
    out = []
    for entry in switch:
        root = up + entry["prefix"]
        out.append({**entry, "current": entry["prefix"] == shown_prefix,
                    "href": (root + page_url) or "./", "root": root or "./"})
    return out


def on_config(config):
    note_sets(config)
    check_vendor(config)
    # The policy without script hashes, for overrides/main.html (the hashes come per page).
    config.extra["unipo_csp"] = csp.policy()
    # the event names and the step-file name, for every page's scripts (overrides/main.html, unipo.js)
    config.extra["unipo_browser"] = browser_data_html()
    try:
        source = runs.runs_source(_project_dir(config), config.extra)
    except (runs.RunsError, project.ProjectError) as err:
        raise PluginError(str(err)) from None
    check_specs(_project_dir(config))
    check_kinds()
    # UNIPO_STRICT_RUNS=1: a run that cannot be read fails the build here, with the validator's
    # messages, before any page is rendered.
    failure = runs.strict_failure(source)
    if failure:
        raise PluginError(failure)
    return config


def on_page_markdown(markdown, page, config, files):
    """A page whose runs (front matter ``needs_runs``, ``site/run_needs.py``) this set lacks: its note
    for ``on_page_content``, its mark in this set's nav, and one INFO line per missing run naming the
    suite entry that makes it."""
    page.unipo_runs_note = ""
    try:
        names = run_needs.declared(page.meta, page.file.src_uri)
    except run_needs.AuthorError as err:
        raise PluginError(str(err)) from None
    if not names:
        return markdown
    root = _project_dir(config)
    shown, _ = read_sets(config)
    missing = run_needs.lacking(names, runs.catalog(runs.runs_source(root, config.extra)))
    if not missing:
        return markdown
    others = run_needs.other_sets(config.extra, root, shown.id)
    having = {s.id for s in run_needs.sets_having(missing, others)}
    switch = config.extra.get("unipo_set_switch") or []
    links = [(e["label"], e["href"]) for e in set_links(page.url, shown.prefix, switch) if e["id"] in having]
    site = run_needs.Site(None, root=root)
    titles = [(run_needs.run_title(n, [o.catalog for o in others], site), n) for n in missing]
    page.unipo_runs_note = run_needs.note_html(shown.label, titles, links)
    page.meta.setdefault("subtitle", run_needs.NAV_MARK)
    logged = _RUNS_LOGGED.setdefault(id(config), set())
    for name in missing:
        if name not in logged:
            logged.add(name)
            log.info("unipo: the %s set has no run %s (%s reads it): %s", shown.id, name, page.file.src_uri,
                     run_needs.suite_entry_text(root, shown, name))
    return markdown


#: The missing runs each build has logged (by the config's id), so each is said once.
_RUNS_LOGGED: dict[int, set[str]] = {}


def on_page_content(html, page, config, files):
    html = page_state.restore_protected(page.file.src_uri, html)
    note = getattr(page, "unipo_runs_note", "")
    if note:  # right under the page's title
        html = re.sub(r"(</h1>)", lambda m: m.group(1) + note, html, count=1) if "</h1>" in html else note + html
    views = page_state.page_scripts(page.file.src_uri)
    root = site_root(page.url)
    scripts = [name for name in views if name in page_state.VIEW_SCRIPTS]
    if scripts:
        # Inside the page's content, so Material's instant navigation loads them when it swaps
        # pages in (each script runs its set-up once: see overrides/assets/unipo.js).
        html += "".join(f'<script defer src="{root}assets/views/{name}.js"></script>' for name in scripts)
    # The views' style sheets go in the page's head (on_post_page): Material's instant navigation
    # adds the head elements a new page has and the old one lacks, and removes the others.
    page.unipo_style_links = "".join(f'<link rel="stylesheet" href="{root}assets/views/{Path(sheet).name}">'
                                     for sheet in page_state.style_sheets(views))
    return html


@event_priority(50)  # before Material's search plugin (priority 0) reads page.content
def _give_search_the_index_view(context, page, config, nav):
    page.unipo_page_html = page.content
    page.content = search_text.index_view(page.content)
    return context


@event_priority(-50)  # after it: the page is rendered from its own HTML
def _give_the_page_its_html(context, page, config, nav):
    saved = getattr(page, "unipo_page_html", None)
    if saved is not None:
        # a view may mark its own controls data-search-exclude: the plugin has read the mark
        page.content = re.sub(r'\sdata-search-exclude(?:="[^"]*")?(?=[\s/>])', "", saved)
        del page.unipo_page_html
    return context


def _set_switch(context, page, config, nav):
    switch = config.extra.get("unipo_set_switch") or []
    if switch and page is not None and page.url is not None:
        shown = next(e for e in switch if e["id"] == config.extra["unipo_set"])
        context["unipo_set_links"] = set_links(page.url, shown["prefix"], switch)
        context["unipo_set_here"] = site_root(page.url) or "./"
    return context


on_page_context = CombinedEvent(_set_switch, _give_search_the_index_view, _give_the_page_its_html)


#: Where the views' and playgrounds' own scripts and styles live: beside their Python.
SITE_SOURCES = Path(__file__).resolve().parent


def write_view_scripts(assets: Path) -> None:
    """``assets/views/<view>.js``: each view's script files (``macros.VIEW_SCRIPTS``) in one file;
    each view style sheet (``macros.STYLE_SHEETS``) as ``assets/views/<file name>``; the pages'
    site-wide sheet (``macros.PAGE_STYLES``) as ``assets/pages.css``."""
    out = assets / "views"
    out.mkdir(parents=True, exist_ok=True)
    for name, files in page_state.VIEW_SCRIPTS.items():
        parts = [f"/* ---- {Path(file).name} ---- */\n" + (SITE_SOURCES / file).read_text(encoding="utf-8")
                 for file in files]
        (out / f"{name}.js").write_text("\n".join(parts), encoding="utf-8")
    names: dict[str, str] = {}
    for sheet in page_state.STYLE_SHEETS:
        name = Path(sheet).name
        if name in names:
            raise PluginError(f"unipo_build/site/page_state.py VIEW_STYLES: {sheet} and {names.get(name, name)} would "
                              f"both be written as assets/views/{name}; give one another file name")
        names[name] = sheet
        shutil.copyfile(SITE_SOURCES / sheet, out / name)
    shutil.copyfile(SITE_SOURCES / page_state.PAGE_STYLES, assets / "pages.css")


def on_post_page(output, page, config):
    """Link the page's view style sheets in its head (``on_page_content`` chose them); add the
    hashes of the theme's inline scripts (not the page content's) to the page's policy."""
    links = getattr(page, "unipo_style_links", "")
    if links:
        head_end = output.find("</head>")
        if head_end < 0:
            raise PluginError(f"{page.file.src_uri}: the page has no </head> to link its views' style sheets in")
        output = output[:head_end] + links + output[head_end:]
    try:
        return csp.apply(output, page.content)
    except csp.MissingPolicy as err:
        raise PluginError(f"{page.file.src_uri}: {err}: the site's theme override (overrides/main.html) writes "
                          "it; keep `theme.custom_dir: overrides`") from None


def on_post_template(output_content, template_name, config):
    """Static pages of the theme (404.html): the same policy, every inline script is the theme's."""
    if template_name.endswith(".html") and csp.META_START in output_content:
        return csp.apply(output_content, None)
    return output_content


def _finish_site(config):
    check_vendor(config)
    assets = Path(config.site_dir) / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    (assets / "palette.css").write_text(palette.css(), encoding="utf-8")
    (assets / "palette.json").write_text(palette.as_json(), encoding="utf-8")
    write_view_scripts(assets)
    index = Path(config.site_dir) / "search" / "search_index.json"
    if index.is_file():
        search_text.rewrite_index(index, search_text.site_formulas(Path(config.site_dir)))
    node_modules = _node_modules(config)
    vendor = Path(config.site_dir) / "assets" / "vendor"
    for package, src, dest in VENDOR_FILES:
        source = node_modules / package / src
        target = vendor / dest
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copyfile(source, target)
    for package, src, dest in CONVERTED_FILES:
        version = json.loads((node_modules / package / "package.json").read_text(encoding="utf-8"))["version"]
        try:
            text = csp.classic_interpreter((node_modules / package / src).read_text(encoding="utf-8"), version)
        except ValueError as err:
            raise PluginError(f"{node_modules / package / src}: {err}; {FIX}.") from None
        (vendor / dest).parent.mkdir(parents=True, exist_ok=True)
        (vendor / dest).write_text(text, encoding="utf-8")


def build_set(config, run_set: sets.RunSet) -> Path:
    """The course built again from ``config``'s file for ``run_set``, under ``<site_dir>/<id>/``:
    the same docs, nav and strictness, ``extra.unipo_set`` naming the set (its runs then come from
    ``unipo_build.core.runs.runs_source``, and its own build builds no further set)."""
    from unipo_build.site.build import build

    site_dir = Path(config.site_dir) / run_set.id
    site_url = urljoin(config.site_url, f"{run_set.id}/") if config.site_url else None
    extra = {k: v for k, v in config.extra.items() if k.startswith("unipo_") and k != "unipo_set"}
    started = time.monotonic()
    build(config.config_file_path, extra={**extra, "unipo_set": run_set.id}, docs_dir=config.docs_dir,
          site_dir=str(site_dir), site_url=site_url, strict=config.strict, nav=config.nav,
          use_directory_urls=config.use_directory_urls)
    log.info("unipo: the set %r (%s) built under %s/ in %.1f s", run_set.id, run_set.label, site_dir,
             time.monotonic() - started)
    return site_dir


def _build_other_sets(config):
    shown, available = read_sets(config)
    if not shown.default:
        return  # a further set's own build: the default set's build builds them all
    for run_set in available:
        if not run_set.default:
            build_set(config, run_set)


def on_post_build(config):
    # Material's search plugin has written this build's index (it runs before the hooks).
    _finish_site(config)
    _build_other_sets(config)


def on_serve(server, config, builder, **kwargs):
    """Under ``mkdocs serve``, rebuild when a run of a further set changes too (site/site_data.py
    watches the default set's)."""
    shown, available = read_sets(config)
    for run_set in available:
        if not run_set.default:
            server.watch(str(run_set.runs))
    return server
