"""The runs a chapter needs, the ones the set it is built on lacks, and where it is shown with them
(issue 47): one mechanism for every page of every set.

A page names the runs it reads in its front matter (run ids as the suite files name them, or
algorithm ids)::

    ---
    needs_runs: [cispo, dual_clip]
    ---

On a set that lacks some of them:

- the hook (``hooks.on_page_content``) puts one note at the top of the page (:func:`note_html`)
  naming the runs the set lacks and linking the same page in every other set that has them all;
- the nav of that set marks the page (its nav subtitle, :data:`NAV_MARK`);
- the build log says once per run, at INFO, which suite entry makes it (:func:`suite_entry_text`);
- the prose, figures and views that read those runs sit in ``{% if has_runs("cispo") %}`` ...
  ``{% endif %}`` (``has_runs()`` with no argument: every run the page declares), so they are
  left out, never replaced by a sentence saying they cannot be measured.

How to train a missing run is the guides' business (docs/guides/own-logs.md), never a reader page's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from unipo_build.core import project, runs, sets, yamlfile
from unipo_build.site.context import AuthorError, Site, macro
from unipo_build.site.render import escape_text

#: The front-matter key a page names its runs under.
KEY = "needs_runs"
#: The nav's mark on a page whose runs the set lacks (Material shows a page's ``subtitle`` under its title).
NAV_MARK = "runs not in this set"


def declared(meta: Mapping[str, Any] | None, where: str = "the page") -> tuple[str, ...]:
    """The runs a page's front matter names (``needs_runs``: a name or a list of names); () if none.
    AuthorError for anything else."""
    raw = (meta or {}).get(KEY)
    if raw is None:
        return ()
    names = [raw] if isinstance(raw, str) else raw
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        raise AuthorError(f"{where}: front matter {KEY}: a run id or a list of run ids, not {raw!r}")
    return tuple(n.strip() for n in names)


def lacking(names: Iterable[str], catalog: runs.RunCatalog) -> list[str]:
    """The names of ``names`` of which ``catalog`` holds no loaded run, in order."""
    return [n for n in names if not catalog.named(n)]


@dataclass(frozen=True)
class OtherSet:
    run_set: sets.RunSet
    catalog: runs.RunCatalog


def other_sets(extra: Mapping[str, Any], root: Path, shown_id: str,
               environ: Mapping[str, str] | None = None) -> list[OtherSet]:
    """Every available set but the one shown, with its runs."""
    out = []
    for s in sets.available_sets(extra, root, environ):
        if s.id != shown_id:
            out.append(OtherSet(s, runs.catalog(runs.set_source(s, root, extra, environ))))
    return out


def sets_having(names: Sequence[str], others: Sequence[OtherSet]) -> list[sets.RunSet]:
    """The sets among ``others`` that hold a run of every name."""
    return [o.run_set for o in others if not lacking(names, o.catalog)]


def run_title(name: str, catalogs: Sequence[runs.RunCatalog], site: Site) -> str:
    """How the note names a run: its algorithm's name from whichever set has it ("CISPO"), else its id."""
    for cat in catalogs:
        found = cat.named(name)
        if found:
            return site.algorithm_name(found[0].variant)
    return name


def suite_path(root: Path, run_set: sets.RunSet) -> Path | None:
    """The suite file that trains a set: data/suite-<id>.yaml, or data/suite.yaml for the default set."""
    for file_name in (f"suite-{run_set.id}.yaml",) + (("suite.yaml",) if run_set.default else ()):
        path = root / project.RUNS.parent / file_name
        if path.is_file():
            return path
    return None


def suite_entry_text(root: Path, run_set: sets.RunSet, name: str) -> str:
    """Which suite entry makes run ``name`` for ``run_set``: "data/suite-gpu.yaml has no entry that
    makes it", "data/suite.yaml's entry name: cispo makes it", or that the set has no suite file."""
    path = suite_path(root, run_set)
    if path is None:
        return f"no suite file makes the {run_set.id} set's runs (data/suite-{run_set.id}.yaml)"
    shown = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
    try:
        data = yamlfile.load(path) or {}
    except (OSError, ValueError) as err:
        return f"{shown} does not read ({err})"
    entries = data.get("runs") if isinstance(data, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and name in (entry.get("name"), entry.get("algorithm")):
            return f"{shown}'s entry name: {entry.get('name')} makes it"
    return f"{shown} has no entry that makes it"


def _and(items: Sequence[str], word: str = "and") -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {word} " + items[-1]


def note_html(set_label: str, missing: Sequence[tuple[str, str]], elsewhere: Sequence[tuple[str, str]]) -> str:
    """The one note at the top of a page on a set without some of its runs. ``missing``: (name, id)
    of each run the set lacks; ``elsewhere``: (set label, link to the same page there) of each set
    that has them all."""
    runs_text = _and([f"{escape_text(title)} (<code>{escape_text(rid)}</code>)" if title != rid
                      else f"<code>{escape_text(rid)}</code>" for title, rid in missing], "or")
    text = (f"<p>The {escape_text(set_label)} has no run of {runs_text}, so the parts of this chapter "
            f"that read {'it' if len(missing) == 1 else 'them'} are left out here.")
    if elsewhere:
        links = _and([f'<a href="{escape_text(href)}">{escape_text(label)}</a>' for label, href in elsewhere])
        text += f" The whole chapter, on runs that have {'it' if len(missing) == 1 else 'them'}: {links}.</p>"
    else:
        text += " No set of this site has them yet.</p>"
    return (f'<div class="admonition info unipo-runs-absent"><p class="admonition-title">'
            f"Not every run of this chapter is in this set</p>{text}</div>")


@macro
def has_runs(site: Site, *names: str) -> bool:
    """True when the build's runs hold a run of every name (none given: every run the page's front
    matter names under ``needs_runs``); for ``{% if has_runs("cispo") %}`` around what reads them."""
    if not names:
        page = getattr(site.env, "page", None)
        names = declared(getattr(page, "meta", None), getattr(getattr(page, "file", None), "src_uri", "the page"))
    return not lacking(names, site.catalog)
