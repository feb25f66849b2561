"""``unipo explain RUN...``: a site around a practitioner's own runs, built by the course's MkDocs.

Nothing here renders a page. It checks the runs, writes a few Markdown pages that call the
course's macros (``site/pages/guides/explain_pages.py`` and the views every chapter uses) into a temporary
docs directory, copies in the chapter of each run's nearest spec, and builds them with MkDocs'
Python API from the project's own ``mkdocs.yml`` (its theme, hooks, macros and extensions) with
the docs directory, the nav and the runs replaced: ``UNIPO_RUNS`` names exactly the given runs.

Pages: ``index.md`` (the runs and where each is explained), ``runs/<run id>.md`` (the run card
with what the log lacks and what was derived, the diagnoses (``unipo_build.core.diagnose``: one card per
question practitioners ask of a run), the nearest spec against the run's components,
the Training Explorer with its Step Inspector, the Algorithm Explainer with the run's
components) and ``course/algorithms/<spec>.md`` (the chapter, as the course has it). A link of
the chapter to a page this site does not have becomes plain text.

Bad input (a path that is not a run, a run ``unipo validate`` rejects, a run no spec matches, an
``--out`` holding anything but a previous explain output) raises :class:`ExplainError` with one
line before anything is written. The site is built in a hidden directory next to ``--out`` and
moved into place only when the build succeeded; a previous explain output there is replaced.
"""

from __future__ import annotations

import contextlib
import html
import json
import logging
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, Sequence

from unipo_build.core import project, runlog
from unipo_build.core.cache import files_state
from unipo_build.core.reader import check_run
from unipo_build.core.runs import ENV_RUNS, ENV_STRICT, is_run_dir
from unipo_build.core.schema import RunHeader
from unipo_build.core.matching import SpecMatch, nearest_spec
from unipo_build.core.specs import SpecError, load_specs

#: The file that marks a directory as ``unipo explain``'s output (and so safe to replace).
MARKER = ".unipo-explain.json"
CHAPTERS = Path("docs/course/algorithms")


class ExplainError(ValueError):
    """One line: what is wrong, where (file, step, field), and what to do."""


@dataclass(frozen=True)
class Explained:
    """A run that will be explained: where it is, its header, and the spec it is explained by."""

    path: Path
    header: RunHeader
    match: SpecMatch


def _md_text(text: str) -> str:
    """A run id (letters, digits, ``_ . -``) as Markdown text that stays the characters it is."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>])", r"\\\1", text)


def check_runs(paths: Sequence[str | Path], root: Path) -> list[Explained]:
    """Every RUN read by the validator's loader and matched to a spec, or ExplainError (one line)."""
    try:
        specs = load_specs(project.spec_dir(root))
    except (SpecError, project.ProjectError) as err:
        raise ExplainError(str(err).splitlines()[0]) from None
    out: list[Explained] = []
    seen: dict[str, Path] = {}
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise ExplainError(f"{path}: no such directory: give a run directory (one holding header.json and "
                               "steps.jsonl)")
        if not path.is_dir() or not is_run_dir(path):
            inner = [p for p in sorted(path.iterdir()) if p.is_dir() and is_run_dir(p)] if path.is_dir() else []
            hint = (f"it is a directory of runs: name the runs in it (e.g. {inner[0]})" if inner else
                    "give a run directory (one holding header.json and steps.jsonl), e.g. one written by "
                    "`unipo train` or `unipo import`")
            raise ExplainError(f"{path}: not a run (no {runlog.HEADER} or {runlog.STEPS}): {hint}")
        check = check_run(path, known_algorithms=set(specs))
        if check.errors:
            more = len(check.errors) - 1
            first = str(check.errors[0]).replace(str(path.resolve()), str(path), 1)  # the path as the user gave it
            raise ExplainError(f"{first}; fix the log (`unipo validate {path}` lists every problem"
                               + (f", {more} more" if more else "") + ") and run the command again")
        if check.empty:
            raise ExplainError(f"{path / runlog.STEPS}: no steps logged yet: nothing to explain until the run has "
                               "written its first step")
        header = check.header
        match = nearest_spec(header.algorithm, header.algorithm_config, specs)
        if match is None:
            raise ExplainError(
                f"{path / runlog.HEADER}: algorithm_config is null: the run's algorithm {header.algorithm!r} is none "
                f"of this project's ({', '.join(sorted(specs))}), so no spec matches it: import it again with "
                "--algorithm and the nearest of them, or add a spec for it (`unipo new-algorithm`)")
        if header.run_id in seen:
            raise ExplainError(f"{path / runlog.HEADER}: run_id {header.run_id!r} is also the id of {seen[header.run_id]}: "
                               "explain runs with different ids (import one again with --run-id)")
        seen[header.run_id] = path
        out.append(Explained(path.resolve(), header, match))
    if not out:
        raise ExplainError("no run given: name one or more run directories")
    return out


def _inside(a: Path, b: Path) -> bool:
    """``a`` is ``b`` or lies inside it."""
    return a == b or b in a.parents


def check_out(out: Path, runs: Sequence[Explained], root: Path) -> None:
    """``--out`` must be new, empty, or a previous explain output, and hold no run nor the project."""
    target = out.resolve()
    for run in runs:
        if _inside(target, run.path) or _inside(run.path, target):
            raise ExplainError(f"{out}: --out {'is inside' if _inside(target, run.path) else 'holds'} the run "
                               f"{run.path}: choose an --out apart from the runs")
    if _inside(root, target) or target == root:
        raise ExplainError(f"{out}: --out holds the project itself: choose a new directory")
    if out.exists() and not out.is_dir():
        raise ExplainError(f"{out}: --out is a file: choose a new directory (nothing was written)")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise ExplainError(f"{out}: --out is not empty and is not the output of an earlier `unipo explain` (no "
                           f"{MARKER}): choose a new or empty directory; nothing was written")


def _chapter(root: Path, spec_id: str) -> Path | None:
    path = root / CHAPTERS / f"{spec_id}.md"
    return path if path.is_file() else None


def run_page(run: Explained, chapter: bool) -> str:
    rid = run.header.run_id
    spec = run.match.spec
    shown = ("shows this run in its figures" if run.match.by_id else
             "shows no run in its figures (this run trained another algorithm: see below how it differs)")
    chapter_line = (f"The [chapter of the spec it is explained by](../course/algorithms/{spec.id}.md) takes the "
                    f"algorithm apart and {shown}.\n" if chapter else "")
    return f"""# Run {_md_text(rid)}

This is {{{{ explain_summary("{rid}") }}}}.

{chapter_line}
## Run card

{{{{ explain_run_card("{rid}") }}}}

## Diagnosis

What practitioners ask of a run, answered from this one: each card's figure, its verdict, the
steps that show it (they open in the Step Inspector below) and the chapter that teaches it.

{{{{ explain_diagnoses("{rid}") }}}}

## Against the nearest spec

The spec this run is explained by (first) above the components the run trained with (second),
slot by slot: what the run did that the spec's words do not say.

{{{{ explain_match("{rid}") }}}}

## Training Explorer and Step Inspector

Each ring is one metric of the run, the angle the update. Click a step to open it in the Step
Inspector under the chart, then a token there: its numbers show beside it and in the Algorithm
Explainer below.

{{{{ explain_explorer("{rid}") }}}}

## Algorithm Explainer

The objective this run trained, composed from the components in its header; click a part of the
formula for what it does. A token selected in the Step Inspector fills in its numbers.

{{{{ explain_objective_card("{rid}") }}}}
"""


def index_page(runs: Sequence[Explained], chapters: dict[str, bool]) -> str:
    lines = ["# Your runs, explained", "",
             "Built by `unipo explain` from the runs below alone: each has a page with its run card, the spec it "
             "is explained by, the Training Explorer, the Step Inspector and the Algorithm Explainer.", ""]
    for run in runs:
        rid = run.header.run_id
        lines.append(f'- [Run {_md_text(rid)}](runs/{rid}.md): {{{{ explain_summary("{rid}") }}}}.')
    specs = {run.match.spec.id: run.match.spec for run in runs}
    with_chapter = [sid for sid in specs if chapters[sid]]
    if with_chapter:
        lines += ["", "The chapters of the specs they are explained by:", ""]
        lines += [f'- [{{{{ explain_spec_name("{sid}") }}}}](course/algorithms/{sid}.md)' for sid in with_chapter]
    lines += ["", "{{ runs_status() }}", ""]
    return "\n".join(lines)


def write_docs(docs: Path, runs: Sequence[Explained], root: Path) -> list:
    """The pages, and the nav that lists them."""
    (docs / "runs").mkdir(parents=True)
    chapters = {run.match.spec.id: _chapter(root, run.match.spec.id) is not None for run in runs}
    (docs / "index.md").write_text(index_page(runs, chapters), encoding="utf-8")
    nav: list = [{"Your runs": "index.md"}]
    for run in runs:
        rid = run.header.run_id
        (docs / "runs" / f"{rid}.md").write_text(run_page(run, chapters[run.match.spec.id]), encoding="utf-8")
        nav.append({f"Run {rid}": f"runs/{rid}.md"})
    algorithms = []
    for spec_id, has in chapters.items():
        if has:
            target = docs / CHAPTERS.relative_to("docs") / f"{spec_id}.md"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(_chapter(root, spec_id), target)
            # MkDocs' templates print a nav title as HTML: a spec's name goes in escaped
            name = html.escape(next(r.match.spec.name for r in runs if r.match.spec.id == spec_id))
            algorithms.append({name: f"{CHAPTERS.relative_to('docs').as_posix()}/{spec_id}.md"})
    if algorithms:
        nav.append({"The algorithms": algorithms})
    return nav


#: A link Markdown left as written because its page is not in this site (``../anatomy.md#x``).
OFFSITE_LINK = re.compile(r'<a href="(?![a-zA-Z][a-zA-Z0-9+.-]*:|#|/)[^"]*?\.md(?:#[^"]*)?"[^>]*>(.*?)</a>', re.S)


def _plugin():
    from mkdocs.plugins import BasePlugin

    class OffsiteLinks(BasePlugin):
        """The copied chapters link to course pages this site does not have: plain text instead."""

        def on_page_content(self, html, page, config, files):
            return OFFSITE_LINK.sub(lambda m: f'<span class="unipo-offsite">{m.group(1)}</span>', html)

    return OffsiteLinks()


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def build(run_paths: Sequence[str | Path], out: str | Path, *, site_url: str = "http://127.0.0.1:8000/",
          root: str | Path | None = None) -> Path:
    """Check the runs and ``out``, build the site, move it to ``out``; returns its index.html."""
    from mkdocs.exceptions import MkDocsException

    from unipo_build.site import build as site_build

    try:
        root = Path(root).resolve() if root is not None else project.find_root()
    except project.ProjectError as err:
        # From any directory: the checkout the package runs from (an editable install), unless UNIPO_ROOT names
        # another; an installed copy carries the specs but not the course's mkdocs.yml, docs/ and overrides/.
        root = project.package_project() if not os.environ.get(project.ENV_ROOT) else None
        if root is None:
            raise ExplainError(f"{err} (the site is built with the course's mkdocs.yml, docs/ and overrides/, which "
                               "an installed package does not carry)") from None
    runs = check_runs(run_paths, root)
    out = Path(out)
    check_out(out, runs, root)
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".unipo-explain-", dir=out.parent))
    try:
        nav = write_docs(stage / "docs", runs, root)
        paths = [str(run.path) for run in runs]
        with _environment({ENV_RUNS: os.pathsep.join(paths), ENV_STRICT: "1"}):
            try:
                # these runs alone: no further run set, no set switch
                site_build.build(root / "mkdocs.yml", extra={"unipo_runs": paths, "unipo_run_choice": {}, "unipo_sets": []},
                                 plugins={"unipo-explain": _plugin()}, docs_dir=str(stage / "docs"),
                                 site_dir=str(stage / "site"), nav=nav, site_url=site_url,
                                 validation={"links": {"not_found": "info", "anchors": "info"}})
            except MkDocsException as err:
                raise ExplainError(f"the site build stopped: {str(err).strip().splitlines()[0]}") from None
        site = stage / "site"
        (site / MARKER).write_text(json.dumps({
            "built_by": "unipo explain", "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "runs": paths, "specs": {run.header.run_id: run.match.spec.id for run in runs}}, indent=1), encoding="utf-8")
        old = stage / "previous"
        if out.exists():
            out.rename(old)  # an empty directory or a previous explain output (check_out)
        try:
            site.rename(out)
        except OSError:
            if old.exists():
                old.rename(out)  # put the previous output back before the staging directory goes
            raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return out / "index.html"


def signature(run_paths: Sequence[str | Path]) -> tuple:
    """What the runs' files are now (``cache.file_state`` of each: path, size, modification time): a training
    run that writes a step, an evaluation or a token file changes it."""
    found: list[Path] = []
    for raw in run_paths:
        run = Path(raw)
        found += [run / runlog.HEADER, *runlog.log_candidates(run / runlog.STEPS),
                  *runlog.log_candidates(run / runlog.EVALS), *runlog.token_paths(run)]
    return files_state(found)


def watch(run_paths: Sequence[str | Path], out: str | Path, *, site_url: str, interval: float = 2.0,
          say=print, stop=lambda: False, wait=None) -> None:
    """Rebuild the site whenever the runs' files change (``--watch``): a change is built once it has held still for
    one ``interval`` (a step half written waits); a build that fails (a line cut mid-write) says so in one line and
    keeps the previous site. Runs until ``stop()`` is true or Ctrl-C. ``wait(seconds)``: how it waits between
    polls (default time.sleep; a threading.Event's wait returns as soon as it is set)."""
    import time

    wait = wait or time.sleep
    built = signature(run_paths)
    seen = built
    while not stop():
        wait(interval)
        if stop():
            break
        now = signature(run_paths)
        if now == built:
            seen = now
            continue
        if now != seen:  # still changing: wait until it holds still
            seen = now
            continue
        try:
            build(run_paths, out, site_url=site_url)
        except ExplainError as err:
            say(f"unipo explain: not rebuilt ({err}); the site shows the previous build, still watching", err=True)
        else:
            steps = sum(_count_steps(Path(p)) for p in run_paths)
            say(f"rebuilt at {datetime.now().strftime('%H:%M:%S')}: {steps} step{'' if steps == 1 else 's'} logged; "
                "reload the page")
        built = seen = now


def _count_steps(run: Path) -> int:
    try:
        return sum(1 for _, line in runlog.log_lines(runlog.log_file(run, runlog.STEPS)) if line.strip())
    except runlog.LogError:
        return 0


def quiet_mkdocs() -> None:
    """MkDocs' INFO lines (pages built, files copied) are not the command's output: warnings only."""
    logging.getLogger("mkdocs").setLevel(logging.WARNING)
