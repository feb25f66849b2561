"""``unipo new-algorithm NAME``: the files a contributor starts a new algorithm from.

Writes, under the project root (the current directory, or ``--root``):

- ``data/algorithms/NAME.yaml``: a copy of a base spec (default grpo) that validates as it is,
  with ``predecessor: <base>`` and every text a reader sees (names, summary, what changed, each
  component's explanation, the paper) marked ``TODO(author)`` for the author to rewrite; a
  comment block lists the component kinds registered for each slot;
- ``docs/course/algorithms/NAME.md``: a chapter using the course's macros (objective_card,
  compare with the predecessor, run_choice, training_explorer, step_inspector at teaching
  moments, learning_verdict, run_card);
- ``docs/reference/algorithms/NAME.md``: the spec's reference page (``spec_reference``).

It refuses to overwrite any of them, and writes nothing unless all can be written.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import yaml

from unipo_build.core.specs import REGISTRY, SLOTS, SpecError, load_spec

TEMPLATES = Path(__file__).resolve().parent / "templates"
MARK = "TODO(author)"
SPEC_SUBDIR = Path("data") / "algorithms"
CHAPTER_SUBDIR = Path("docs") / "course" / "algorithms"
REFERENCE_SUBDIR = Path("docs") / "reference" / "algorithms"


class ScaffoldError(Exception):
    pass


def _fill(template: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        template = template.replace(f"@{key}@", value)
    return template


def kinds_comment() -> str:
    return "\n".join(f"#   {slot:<12} {', '.join(sorted(REGISTRY[slot]))}" for slot in SLOTS)


def spec_text(name: str, base: dict, *, today: date | None = None) -> str:
    """The scaffolded spec's YAML: ``base`` (a spec as loaded from YAML) with its prose marked."""
    year = (today or date.today()).year
    base_id, base_name = base["id"], base.get("name", base["id"])
    components = {}
    for slot in SLOTS:
        if slot not in base["components"]:  # an optional slot the base leaves out (registry.OPTIONAL_SLOTS): so does this
            continue
        comp = base["components"][slot]
        new = {"kind": comp["kind"]}
        if comp.get("params"):
            new["params"] = comp["params"]
        new["explanation"] = (f"{MARK}: what this slot does in {name} and why, in plain words. "
                              f"{base_name}'s text: {' '.join(str(comp['explanation']).split())}")
        if comp.get("tooltips"):
            new["tooltips"] = comp["tooltips"]
        components[slot] = new
    spec = {
        "id": name,
        "name": name.replace("_", " ").upper(),
        "full_name": f"{MARK}: the full name of {name}",
        "year": year,
        "paper": {"title": f"{MARK}: the title of the paper that introduced {name}",
                  "authors": f"{MARK}: First Author et al.", "year": year,
                  "note": f"{MARK}: add arxiv: \"NNNN.NNNNN\" and the equation of the objective"},
        "predecessor": base_id,
        "summary": f"{MARK}: one sentence, what {name} is. {base_name}'s: {' '.join(str(base['summary']).split())}",
        "changed": f"{MARK}: a paragraph, what {name} changes relative to {base_name} and why.",
        "components": components,
    }
    if base.get("defaults"):
        spec["defaults"] = base["defaults"]
    body = yaml.safe_dump(spec, sort_keys=False, allow_unicode=True, width=100)
    template = (TEMPLATES / "algorithm.yaml").read_text(encoding="utf-8")
    return _fill(template, {"id": name, "base": base_id, "kinds": kinds_comment(), "body": body.rstrip("\n")}) + "\n"


def chapter_text(name: str, display: str, base_id: str, base_name: str) -> str:
    template = (TEMPLATES / "chapter.md").read_text(encoding="utf-8")
    return _fill(template, {"id": name, "name": display, "base": base_id, "base_name": base_name})


def nav_lines(name: str, display: str) -> tuple[str, str]:
    """The two entries of mkdocs.yml's nav that show the chapter and the reference page."""
    return f"- {display}: {(CHAPTER_SUBDIR / name).as_posix().removeprefix('docs/')}.md", \
        f"- {(REFERENCE_SUBDIR / name).as_posix().removeprefix('docs/')}.md"


def scaffold(name: str, *, base: str = "grpo", root: str | Path = ".") -> tuple[Path, Path, Path]:
    """Write the spec, chapter and reference page of a new algorithm; returns their paths."""
    root = Path(root)
    if not name or not name[0].isalpha() or not name.islower() or not name.replace("_", "").isalnum() \
            or not name.isascii():
        raise ScaffoldError(f"{name!r}: an algorithm id is lower-case letters, digits and '_', starting with a letter")
    spec_dir = root / SPEC_SUBDIR
    if not spec_dir.is_dir():
        raise ScaffoldError(f"{spec_dir}: not found; run from the repository root or pass --root")
    base_path = spec_dir / f"{base}.yaml"
    if not base_path.is_file():
        known = ", ".join(sorted(p.stem for p in spec_dir.glob("*.yaml")))
        raise ScaffoldError(f"--base {base}: no {base_path} (known: {known})")
    spec_path = spec_dir / f"{name}.yaml"
    chapter_path = root / CHAPTER_SUBDIR / f"{name}.md"
    reference_path = root / REFERENCE_SUBDIR / f"{name}.md"
    existing = [str(p) for p in (spec_path, chapter_path, reference_path) if p.exists()]
    if existing:
        raise ScaffoldError(f"{' and '.join(existing)} already exist{'s' if len(existing) == 1 else ''}; "
                            "nothing was written (choose another name, or edit the files)")
    try:
        load_spec(base_path)
    except SpecError as err:
        raise ScaffoldError(f"the base spec does not validate:\n{err}") from None
    base_raw = yaml.safe_load(base_path.read_text(encoding="utf-8"))
    text = spec_text(name, base_raw)
    chapter = chapter_text(name, name.replace("_", " ").upper(), base_raw["id"], base_raw.get("name", base))
    spec_path.write_text(text, encoding="utf-8")
    try:
        load_spec(spec_path)  # the scaffold must validate as written
    except SpecError:
        spec_path.unlink()
        raise
    chapter_path.parent.mkdir(parents=True, exist_ok=True)
    chapter_path.write_text(chapter, encoding="utf-8")
    reference_path.parent.mkdir(parents=True, exist_ok=True)
    reference = (TEMPLATES / "reference.md").read_text(encoding="utf-8")
    reference_path.write_text(_fill(reference, {"id": name, "name": name.replace("_", " ").upper()}), encoding="utf-8")
    return spec_path, chapter_path, reference_path


def todo_markers(path: str | Path) -> list[int]:
    """Line numbers (from 1) that still carry the TODO(author) mark."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [i for i, line in enumerate(lines, start=1) if MARK in line]
