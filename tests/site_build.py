"""Building the site for tests: one strict ``mkdocs build`` in a subprocess, a free local port, and the
names of the macros the build registers.

A module of its own (not conftest.py) so that test modules can import it by a name no other
conftest shares.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
#: A folder whose sitecustomize makes `import torch` fail (a site build must not need torch).
NO_TORCH = Path(__file__).resolve().parent / "no_torch"


@dataclass(frozen=True)
class SiteBuild:
    """Result of ``mkdocs build --strict``; ``log`` is None when UNIPO_SITE_DIR was reused.

    ``site_url`` is the URL the site was built for (its sitemap lists pages under it).
    Material's instant navigation only follows links found in the sitemap, so the browser
    tests serve the site at this URL when they can.
    """

    site_dir: Path
    returncode: int | None
    log: str | None
    site_url: str | None = None


def project_config() -> dict:
    """The project's mkdocs.yml as data (``!ENV`` values read as MkDocs reads them), its paths made
    absolute (theme.custom_dir, hooks), so a config written anywhere else finds them."""
    from mkdocs.utils.yaml import yaml_load

    with open(REPO_ROOT / "mkdocs.yml", encoding="utf-8") as fh:
        config = yaml_load(fh)
    config["theme"]["custom_dir"] = str((REPO_ROOT / config["theme"]["custom_dir"]).resolve())
    config["hooks"] = [str((REPO_ROOT / h).resolve()) for h in config.get("hooks", [])]
    return config


def write_mkdocs_config(root: Path, **overrides) -> Path:
    """Write ``root/mkdocs.yml`` for a test build: the project's config (:func:`project_config`)
    with ``overrides`` by top-level key: a value replaces the project's, a function takes the
    project's value and returns the test's (``plugins=lambda ps: [p for p in ps if p != "search"]``),
    None leaves the key out. What a test does not override follows the project's mkdocs.yml."""
    config = project_config()
    for key, value in overrides.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value(config.get(key)) if callable(value) else value
    path = Path(root) / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def without_search(plugins: list) -> list:
    """The project's plugins but its search index (a test site of a few pages needs none)."""
    return [p for p in plugins if p != "search" and not (isinstance(p, dict) and "search" in p)]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def sitemap_root(site_dir: Path) -> str | None:
    """The first <loc> of the built sitemap: the site_url the site was built for."""
    sitemap = site_dir / "sitemap.xml"
    if not sitemap.is_file():
        return None
    match = re.search(r"<loc>\s*([^<\s]+)\s*</loc>", sitemap.read_text(encoding="utf-8"))
    return match.group(1) if match else None


def build_env(extra_env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a test's site build: this one, with `import torch` made to fail (tests/no_torch)."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", **(extra_env or {}))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(NO_TORCH), env.get("PYTHONPATH")]))
    env["UNIPO_TEST_NO_TORCH"] = "1"
    return env


def build_site(
    site_dir: Path, *, site_url: str | None = None, extra_env: dict[str, str] | None = None,
    tool: str = "mkdocs",
) -> SiteBuild:
    """Run ``mkdocs build --strict`` into ``site_dir`` in a subprocess (``tool="properdocs"``: the
    same build with ProperDocs, the maintained MkDocs 1.x fork, reading mkdocs.yml). ``import torch``
    fails in that subprocess (tests/no_torch), as on the Pages workflow and the README's first command:
    a site build needs numpy only."""
    env = build_env(extra_env)
    if site_url:
        env["UNIPO_SITE_URL"] = site_url
    config = ["--config-file", str(REPO_ROOT / "mkdocs.yml")] if tool != "mkdocs" else []
    proc = subprocess.run(
        [sys.executable, "-m", tool, "build", "--strict", "--site-dir", str(site_dir), *config],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return SiteBuild(site_dir, proc.returncode, proc.stdout + proc.stderr, site_url)


#: The runs of data/runs copied into the stand-in second set; GRPO's under a run id that exists
#: only there, so a page that names it was built from the stand-in.
STANDIN_RUNS = ("grpo", "dapo", "ppo", "reinforce")
STANDIN_GRPO_ID = "grpo-standin"


def make_standin_set(target: Path) -> Path:
    """A second run set for tests only (never in data/): a few of data/runs' runs, GRPO's renamed."""
    target.mkdir(parents=True, exist_ok=True)
    for name in STANDIN_RUNS:
        shutil.copytree(REPO_ROOT / "data" / "runs" / name, target / name)
    header = target / "grpo" / "header.json"
    data = json.loads(header.read_text(encoding="utf-8"))
    data["run_id"] = STANDIN_GRPO_ID
    header.write_text(json.dumps(data), encoding="utf-8")
    (target / "grpo").rename(target / STANDIN_GRPO_ID)
    return target


def registered_macros() -> set[str]:
    """The name of every macro ``unipo_build.site.macros.define_env`` registers, without running MkDocs."""
    from unipo_build.site import macros

    class Env:
        conf: dict = {"extra": {}}
        variables: dict = {}
        page = None

        def __init__(self):
            self.names = set()

        def macro(self, fn):
            self.names.add(fn.__name__)
            return fn

    env = Env()
    macros.define_env(env)
    return env.names


class MacroEnv:
    """Enough of mkdocs-macros' env to bind the site's macros outside a build."""

    def __init__(self, runs_dir: Path | None = None, conf: dict | None = None):
        self.conf = conf or {"extra": {"unipo_runs": str(runs_dir)} if runs_dir else {}}
        self.variables: dict = {}
        self.page = None
        self.macros: dict = {}

    def macro(self, fn, name: str = ""):
        self.macros[name or fn.__name__] = fn
        return fn


def bound_macros(runs_dir: Path | None = None) -> dict:
    """name -> the site's macro bound to a build whose runs are ``runs_dir`` (the project's by default).

    A text macro (``site.context``: neither ``html`` nor ``markdown``) gives its words as a reader
    reads them: the binding HTML-escapes them for the page, which is undone here."""
    import functools
    import html

    from unipo_build.site import macros
    from unipo_build.site.context import MACROS

    env = MacroEnv(runs_dir)
    macros.define_env(env)

    def as_text(fn):
        @functools.wraps(fn)
        def text(*args, **kwargs):
            out = fn(*args, **kwargs)
            return html.unescape(out) if isinstance(out, str) else out
        return text

    return {name: as_text(fn) if name in MACROS and not (MACROS[name].html or MACROS[name].markdown) else fn
            for name, fn in env.macros.items()}


_TEMPLATE_RE = re.compile(r'<template class="unipo-data" id="([^"]+)"[^>]*>(.*?)</template>', re.S)


def vega_lite_specs(data):
    """Every Vega-Lite spec in a page's data, a chart's own or one inside a view's payload."""
    if isinstance(data, dict):
        if str(data.get("$schema", "")).startswith("https://vega.github.io/schema/vega-lite/"):
            yield data
            return
        data = list(data.values())
    if isinstance(data, list):
        for item in data:
            yield from vega_lite_specs(item)


def vega_lite_checker():
    """A function giving the schema errors of one spec against the Vega-Lite schema Altair ships: the check a
    build skips (unipo_build.site.render.chart_spec), made by the tests on what the build wrote."""
    import jsonschema
    from altair.vegalite.v6.schema import core

    schema = core.load_schema()
    validator = jsonschema.validators.validator_for(schema)(schema)
    return lambda spec: [e.message[:300] for e in validator.iter_errors(spec)]


def page_data(html: str) -> list[tuple[str, object]]:
    """(id, parsed JSON) of every data template of a page or a macro's HTML (render.json_data), in order."""
    return [(data_id, json.loads(text)) for data_id, text in _TEMPLATE_RE.findall(html)]


def invalid_charts(site_dir: Path, errors_of) -> tuple[int, dict[str, list[str]]]:
    """(how many Vega-Lite specs the built site embeds, {page#data id: its first schema errors} for the invalid)."""
    checked, invalid = 0, {}
    for page in sorted(Path(site_dir).rglob("*.html")):
        for data_id, data in page_data(page.read_text(encoding="utf-8")):
            for spec in vega_lite_specs(data):
                checked += 1
                if found := errors_of(spec):
                    invalid[f"{page.relative_to(site_dir)}#{data_id}"] = found[:3]
    return checked, invalid
