"""What a page macro gets from the build, and the decorator that registers macros beside their code.

A view module defines its macros where their code is::

    @macro(html=True, scripts=("explainer",))
    def objective_card(site: Site, algorithm: str, run: str | None = None) -> str:
        ...

:func:`unipo_build.site.macros.define_env` imports every module of ``unipo_build.site`` that
registers a macro (found by walking the package: no list to keep) and binds each registered function to a :class:`Site` of the build: the project root (the MkDocs
config's directory), the runs catalogue (the one runs resolver, ``unipo_build.core.runs``), the
specs (read once per build, again when a spec file changes), chart ids and the page being
rendered. ``scripts`` names the view scripts the page then loads (the hook puts them on that
page only: see ``unipo_build.site.hooks``).

What a macro returns reaches the page by one of three paths, so that no string from a run, a
spec, an import or a task file is ever read as Markdown, Jinja or TeX source:

- ``html=True``: HTML in which every input string went through ``render.escape_text`` (or is
  JSON data in a ``<template>``); handed to ``page_state.protect_html``, so Markdown never sees it
  (call such a macro on a paragraph of its own);
- the default, for a macro that returns a string: plain text. It is HTML-escaped here and
  protected the same way, so it may sit inside a sentence, a table cell or a formula and still
  reads as the characters it is;
- ``markdown=True``: Markdown written by the project (headings the table of contents lists),
  whose input strings the macro has itself escaped and protected. Any other return value (a
  dict or a number for ``{% set %}``) is passed through.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from unipo_build.core import project, runs
from unipo_build.core.cache import Cache, file_state, files_state
from unipo_build.site import page_state
from unipo_build.site.render import escape_text
from unipo_build.core.specs import AlgorithmSpec, ablation_spec_paths, load_spec, load_specs
from unipo_build.site.source_links import Repo, repo_from

@dataclass(frozen=True)
class MacroDef:
    fn: Callable[..., Any]
    name: str
    html: bool
    scripts: tuple[str, ...]
    with_site: bool = True
    markdown: bool = False
    run: bool = False


#: Every registered macro, in registration order.
MACROS: dict[str, MacroDef] = {}


def macro(fn: Callable | None = None, *, name: str | None = None, html: bool = False,
          scripts: tuple[str, ...] = (), with_site: bool = True, markdown: bool = False, run: bool = False):
    """Register ``fn(site, ...)`` (``fn(...)`` with ``with_site=False``) as the page macro ``name``
    (default: the function's name), at the function's definition: a ``*_text`` or ``*_html``
    function is the macro itself, under the name the pages call it by. ``html`` / ``markdown``:
    what it returns (see the module docstring); by default a string it returns is text. ``run``:
    the page passes a run's name first, and ``fn`` gets the run (``Site.run``, None when the build
    lacks it) and the name, ``fn(site, run, name, ...)``."""
    def decorate(f: Callable) -> Callable:
        key = name or f.__name__
        if key in MACROS and MACROS[key].fn is not f:
            raise ValueError(f"two macros named {key!r}: {MACROS[key].fn.__module__} and {f.__module__}")
        if html and markdown:
            raise ValueError(f"macro {key!r}: html or markdown, not both")
        MACROS[key] = MacroDef(f, key, html, tuple(scripts), with_site, markdown, run)
        return f
    return decorate(fn) if fn is not None else decorate


class AuthorError(ValueError):
    """An author's error in a page (unknown key, moment, metric, beat): stops the build."""


_SPECS: Cache[dict[str, AlgorithmSpec]] = Cache(4)


def specs_in(directory: Path) -> dict[str, AlgorithmSpec]:
    """The specs of a directory, read once while its files are unchanged (`mkdocs serve` sees edits)."""
    state = files_state(sorted(directory.glob("*.yaml")))
    return _SPECS.get(str(directory), state, lambda: load_specs(directory))


_ABLATION: Cache[AlgorithmSpec] = Cache(64)


def _ablation_spec(path: Path) -> AlgorithmSpec:
    """One ablation spec, read once while its file is unchanged."""
    return _ABLATION.get(str(path), file_state(path), lambda: load_spec(path))


class Site:
    """The build as a macro sees it (an mkdocs-macros env, or a test's stand-in with ``conf``)."""

    def __init__(self, env: Any = None, *, root: str | Path | None = None, runs_where: Any = None):
        self.env = env
        conf = getattr(env, "conf", None) or {}
        self.extra = dict((conf.get("extra") if hasattr(conf, "get") else None) or {})
        config_file = conf.get("config_file_path") if hasattr(conf, "get") else None
        if root is None and config_file:
            root = Path(config_file).resolve().parent
        # The MkDocs config's directory is the project; it needs data/algorithms only when a page
        # asks for a spec (project.spec_dir says so then, naming the directory).
        self.root = Path(root).resolve() if root is not None else project.find_root()
        self._runs_where = runs_where

    # -- data -------------------------------------------------------------

    @property
    def catalog(self) -> runs.RunCatalog:
        """Every run of the build (the one runs resolver; each run read once per build)."""
        if self._runs_where is not None:
            return runs.catalog_of(self._runs_where)
        return runs.catalog(runs.runs_source(self.root, self.extra))

    def with_runs(self, where: Any) -> Site:
        """The same build (page, root, specs, config) reading another runs catalogue: a
        ``runs.catalog_of`` argument (a catalogue, a source, a path or several). Every macro's text
        function, called with it, words its claim from those runs (the scale page puts two sets
        side by side this way)."""
        return Site(self.env, root=self.root, runs_where=where)

    def run(self, name: str | runs.Run) -> runs.Run | None:
        """A loaded run by id, directory name or algorithm id (the chosen run), or None."""
        if isinstance(name, runs.Run):
            return name if name.ok else None
        return self.catalog.loaded_run(str(name))

    def specs(self) -> dict[str, AlgorithmSpec]:
        return specs_in(project.spec_dir(self.root))

    def ablation_specs(self) -> dict[str, AlgorithmSpec]:
        """The ablation ladder's rungs (specs in subdirectories of data/algorithms): they train like
        any spec but are not chapters of the course."""
        directory = project.spec_dir(self.root)
        return {p.stem: _ablation_spec(p) for p in ablation_spec_paths(directory)}

    def ablation_ids(self) -> set[str]:
        """Ids of the ablation rungs (their files' names), without reading the files."""
        try:
            directory = project.spec_dir(self.root)
        except project.ProjectError:
            return set()
        return {p.stem for p in ablation_spec_paths(directory)}

    def any_spec(self, spec_id: str) -> AlgorithmSpec | None:
        """A course spec or an ablation rung by id, or None."""
        return self.specs().get(spec_id) or self.ablation_specs().get(spec_id)

    def spec(self, algorithm: str, macro_name: str) -> AlgorithmSpec:
        specs = self.specs()
        if algorithm not in specs:
            raise AuthorError(f"{macro_name}: no algorithm {algorithm!r} (known: {', '.join(sorted(specs))})")
        return specs[algorithm]

    def algorithm_name(self, algorithm_id: str) -> str:
        """A spec's name (an ablation rung's too); for a variant id (``grpo@lag8``, runs.variant_of)
        the spec's name and the sampler's lag: "GRPO, sampler 8 rollouts stale"."""
        base, lag = runs.split_variant(algorithm_id)
        if lag:
            return f"{self.algorithm_name(base)}, sampler {lag} rollout{'s' if lag != 1 else ''} stale"
        spec = self.specs().get(algorithm_id)
        if spec is None and algorithm_id not in self.specs():
            try:
                spec = self.ablation_specs().get(algorithm_id)
            except ValueError:  # a bad ablation spec (SpecError) is the ladder's to report
                spec = None
        return spec.name if spec else algorithm_id

    def run_label(self, run: runs.Run) -> str:
        """How a run is named in legends: its algorithm's name (and its id when that differs)."""
        name = self.algorithm_name(run.variant)
        return name if run.id in (run.header.algorithm, name) else f"{name} ({run.id})"

    # -- the page ---------------------------------------------------------

    @property
    def page_url(self) -> str | None:
        return getattr(getattr(self.env, "page", None), "url", None)

    def chart_id(self, spec: Any, prefix: str = "unipo-vega") -> str:
        return page_state.chart_id(self.env, spec, prefix=prefix)

    def protect(self, html: str) -> str:
        return page_state.protect_html(self.env, html)

    @property
    def repo(self) -> Repo | None:
        """The repository the site links its formulas' code into (mkdocs.yml repo_url)."""
        return repo_from(getattr(self.env, "conf", None) or {})

    def use_scripts(self, names: tuple[str, ...]) -> None:
        page_state.use_scripts(self.env, names)


#: A view whose macro may write a note instead of it (a run this build lacks: the gpu set has no
#: dapo_dr or gspo run): its script loads only when the page holds its element.
VIEW_MARKERS = {"explorer": 'class="unipo-explorer"', "inspector": 'class="unipo-inspector"'}


def scripts_for(definition: MacroDef, out: Any) -> tuple[str, ...]:
    """The view scripts a macro's output needs: those it declares, less an explorer or inspector
    script when the HTML it wrote holds no such view."""
    if not (definition.html and isinstance(out, str)):
        return definition.scripts
    return tuple(name for name in definition.scripts if name not in VIEW_MARKERS or VIEW_MARKERS[name] in out)


def bind(site: Site, definition: MacroDef) -> Callable:
    """``definition.fn`` with ``site`` as its first argument, named as the macro."""
    fn = definition.fn

    def bound(*args: Any, **kwargs: Any) -> Any:
        if definition.run:  # the run's name -> the run and its name
            args = (site.run(args[0]), str(args[0]), *args[1:])
        out = fn(site, *args, **kwargs) if definition.with_site else fn(*args, **kwargs)
        if definition.scripts:
            site.use_scripts(scripts_for(definition, out))
        if definition.html:
            return site.protect(out)
        if isinstance(out, str) and not definition.markdown:
            return site.protect(escape_text(out))
        return out

    bound.__name__ = definition.name
    bound.__qualname__ = definition.name
    bound.__doc__ = fn.__doc__
    bound.__wrapped__ = fn  # type: ignore[attr-defined]
    return bound
