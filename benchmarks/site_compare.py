"""Is the built site the same before and after a change? Two builds compared file by file.

    python benchmarks/site_compare.py REF_BEFORE [REF_AFTER]      # git revisions (AFTER: the working tree)
    python benchmarks/site_compare.py --sites DIR_BEFORE DIR_AFTER  # two sites already built

Each revision is exported with ``git archive`` into a temporary directory (untracked files and
uncommitted edits of a revision never travel) and built there by the project's MkDocs with the
shipped runs. Every file of the two sites is then put in one of four groups:

- same: byte-identical;
- moved: differs only where a source path, a module name or a line number is printed (the files
  git reports as renamed between the two revisions, as paths and as dotted module names, and
  ``#L12`` anchors and "line 12" mentions), or in the sitemap's build date (a gzipped file is
  compared by its content);
- differs: anything else, with the first differing fragment;
- only before / only after.

It prints the groups' counts and each non-identical file, and exits 1 when a file differs or
exists on one side only (the caller decides whether that difference is intended). Used to check
that a reorganisation of the code leaves the course unchanged (issue 31); the figures of a run are
kept in benchmarks/results/.
"""

from __future__ import annotations

import argparse
import difflib
import gzip
import io
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINE_ANCHOR = re.compile(r"#L\d+(?:-L\d+)?")
LINE_MENTION = re.compile(r"\b(lines?) \d+(?:[-–]\d+)?")
#: The day of the build, which the sitemap carries: not content.
BUILD_DATE = re.compile(r"<lastmod>[^<]*</lastmod>")


@dataclass
class Comparison:
    same: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    differs: list[tuple[str, str]] = field(default_factory=list)
    only_before: list[str] = field(default_factory=list)
    only_after: list[str] = field(default_factory=list)

    @property
    def identical_but_for_moves(self) -> bool:
        return not (self.differs or self.only_before or self.only_after)


def _module(path: str) -> str:
    """``a/b/c.py`` -> ``a.b.c`` (a package's ``__init__.py``: the package)."""
    return path[:-3].replace("/", ".").removesuffix(".__init__")


def rename_pairs(renames: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(text after, text before) for every way a renamed file can be printed: its path, its path
    without the package folder, and for a Python module its dotted name. Longest first, so that
    ``unipo_build/site/views/explainer/explainer.py`` is undone before ``explainer.py``."""
    pairs: set[tuple[str, str]] = set()
    for old, new in renames:
        if old == new:
            continue
        pairs.add((new, old))
        old_parts, new_parts = old.split("/"), new.split("/")
        if len(old_parts) > 1 and len(new_parts) > 1 and old_parts[0] == new_parts[0]:
            pairs.add(("/".join(new_parts[1:]), "/".join(old_parts[1:])))
        if old.endswith(".py") and new.endswith(".py"):
            pairs.add((_module(new), _module(old)))
    return sorted(pairs, key=lambda p: -len(p[0]))


def normalise(text: str, pairs: list[tuple[str, str]]) -> str:
    """The text with every renamed path or module printed as before, and line numbers blanked."""
    if pairs:
        # one pass over the text: a replacement is never replaced again
        pattern = re.compile("|".join(re.escape(new) for new, _ in pairs))
        back = dict(pairs)
        text = pattern.sub(lambda m: back[m.group(0)], text)
    return BUILD_DATE.sub("<lastmod/>", LINE_MENTION.sub(r"\1 N", LINE_ANCHOR.sub("#L", text)))


def _first_difference(a: str, b: str) -> str:
    pieces_a, pieces_b = re.split(r"(?<=[>,;\n])", a), re.split(r"(?<=[>,;\n])", b)
    for line in difflib.unified_diff(pieces_a, pieces_b, lineterm="", n=0):
        if line[:1] in "+-" and not line.startswith(("+++", "---")):
            return line[:200]
    return ""


def _read(path: Path) -> bytes:
    """A file's bytes; a gzipped file's content (its header holds a time stamp)."""
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def compare_sites(before: Path, after: Path, renames: list[tuple[str, str]] = ()) -> Comparison:
    pairs = rename_pairs(list(renames))
    out = Comparison()
    files_before = {p.relative_to(before).as_posix() for p in before.rglob("*") if p.is_file()}
    files_after = {p.relative_to(after).as_posix() for p in after.rglob("*") if p.is_file()}
    out.only_before = sorted(files_before - files_after)
    out.only_after = sorted(files_after - files_before)
    for name in sorted(files_before & files_after):
        a, b = _read(before / name), _read(after / name)
        if a == b:
            out.same.append(name)
            continue
        try:
            text_a, text_b = a.decode("utf-8"), b.decode("utf-8")
        except UnicodeDecodeError:
            out.differs.append((name, "binary files differ"))
            continue
        norm_a, norm_b = normalise(text_a, pairs), normalise(text_b, pairs)
        if norm_a == norm_b:
            out.moved.append(name)
        else:
            out.differs.append((name, _first_difference(norm_a, norm_b)))
    return out


def git_renames(before: str, after: str | None) -> list[tuple[str, str]]:
    args = ["git", "diff", "-M", "--name-status", before] + ([after] if after else [])
    lines = subprocess.run(args, cwd=ROOT, check=True, capture_output=True, text=True).stdout.splitlines()
    return [tuple(line.split("\t")[1:3]) for line in lines if line.startswith("R")]


def export(ref: str | None, into: Path) -> Path:
    """The tree of a revision (or, for None, the working tree's tracked files as they are now)."""
    into.mkdir(parents=True)
    if ref is None:
        files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
        for name in filter(None, files.decode().split("\0")):
            src = ROOT / name
            if src.is_file():
                (into / name).parent.mkdir(parents=True, exist_ok=True)
                (into / name).write_bytes(src.read_bytes())
    else:
        archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(into, filter="data")
    (into / "node_modules").symlink_to(ROOT / "node_modules")
    return into


def build(tree: Path, site: Path) -> None:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=str(tree))
    env.pop("UNIPO_RUNS", None)
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-d", str(site)], cwd=tree, env=env,
                          capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"site_compare: the build of {tree} failed:\n{proc.stderr[-3000:]}")


def report(result: Comparison) -> str:
    lines = [f"same: {len(result.same)}   moved (paths, module names, line numbers only): {len(result.moved)}   "
             f"differs: {len(result.differs)}   only before: {len(result.only_before)}   "
             f"only after: {len(result.only_after)}"]
    lines += [f"  moved        {name}" for name in result.moved]
    lines += [f"  differs      {name}: {first}" for name, first in result.differs]
    lines += [f"  only before  {name}" for name in result.only_before]
    lines += [f"  only after   {name}" for name in result.only_after]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("refs", nargs="*", help="REF_BEFORE [REF_AFTER] (git revisions; AFTER defaults to the working tree)")
    parser.add_argument("--sites", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two built sites")
    args = parser.parse_args(argv)
    if args.sites:
        result = compare_sites(Path(args.sites[0]), Path(args.sites[1]))
    else:
        if not 1 <= len(args.refs) <= 2:
            parser.error("give REF_BEFORE [REF_AFTER], or --sites BEFORE AFTER")
        before, after = args.refs[0], (args.refs[1] if len(args.refs) == 2 else None)
        with tempfile.TemporaryDirectory(prefix="site-compare-") as tmp:
            tmp = Path(tmp)
            build(export(before, tmp / "before"), tmp / "site-before")
            build(export(after, tmp / "after"), tmp / "site-after")
            result = compare_sites(tmp / "site-before", tmp / "site-after", git_renames(before, after))
    print(report(result))
    return 0 if result.identical_but_for_moves else 1


if __name__ == "__main__":
    sys.exit(main())
