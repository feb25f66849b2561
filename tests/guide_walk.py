"""Walking a guide as a reader does: a fresh copy of the project, the environment activated, every
command of the guide's ```bash blocks run in order exactly as written, with the reader's own part
(the spec and chapter they write, the log files they bring) done where the guide asks for it.

tests/test_guides.py checks each walk; benchmarks/guide_commands.py times the same walks to give
the guides their measured figures. Neither changes the checkout they run from.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import yaml

from cli_helpers import ROOT, guide_commands

FIXTURES = ROOT / "tests" / "fixtures"
#: What the activated environment is: the virtual environment running this code.
VENV = Path(sys.executable).parent.parent
#: Variables of the test session that a reader's shell does not have.
#: (The PYTEST_XDIST_* ones name the worker of `pytest -n 2` that walks the guide.)
SESSION_ONLY = ("UNIPO_SITE_DIR", "UNIPO_RUNS", "PYTEST_CURRENT_TEST", "PYTEST_ADDOPTS", "PYTHONPATH",
                "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")

Runner = Callable[[str], subprocess.CompletedProcess]


def fresh_copy(dest: Path, root: Path = ROOT) -> Path:
    """The checkout's files (tracked, and new ones git does not ignore) in ``dest``, as a git repository.

    Like a fresh clone with the working tree's changes: no .venv, site/, work/ or runs/, nor anything
    else a reader made by following the guides (.gitignore; tests/test_guides.py checks it). node_modules
    is linked, standing in for `npm ci`. ``root``: the checkout to copy (this one by default).
    """
    dest.mkdir(parents=True, exist_ok=True)
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = root / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    if (root / "node_modules").is_dir() and not (dest / "node_modules").exists():
        (dest / "node_modules").symlink_to((root / "node_modules").resolve())
    git = ["git", "-c", "user.name=reader", "-c", "user.email=reader@example.invalid", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "fresh copy"]):
        subprocess.run(git + args, cwd=dest, check=True, capture_output=True)
    return dest


#: Options whose value is a path a command writes or reads.
PATH_OPTIONS = ("--out", "--tap", "--model", "--task", "--task-dir", "-d")


def named_paths(command: str) -> list[str]:
    """The relative paths a guide's command line names: option values (``--out runs/x``), the
    sources of `unipo import FORMAT SOURCE`, words with a ``/`` or a file suffix, and the values of
    ``VAR=a:b`` assignments. A heuristic for checking .gitignore, not a shell parser."""
    words = shlex.split(command.removesuffix("\\"), comments=True)  # a continued line: its own words
    while words and "=" in words[0] and not words[0].startswith("-"):  # UNIPO_RUNS=runs/a:data/runs mkdocs build
        words = [*words[0].split("=", 1)[1].split(":"), *words[1:]]
    found = []
    for i, word in enumerate(words):
        after_option = i > 0 and words[i - 1] in PATH_OPTIONS
        import_source = i == 3 and words[:2] == ["unipo", "import"]
        looks_like_path = "/" in word or Path(word).suffix in (".jsonl", ".json", ".yaml")
        if (after_option or import_source or looks_like_path) and not word.startswith(("-", "/", ".")) \
                and "://" not in word and "*" not in word and "<" not in word:
            found.append(word)
    return found


def reader_paths() -> list[str]:
    """Every path the guides' and the README's commands name outside the project's own top-level
    folders (those git tracks): what a reader writes or brings into their checkout by following them."""
    tracked = {name.split("/")[0] for name in subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True,
                                                             text=True, check=True).stdout.splitlines()}
    pages = [p.name for p in sorted((ROOT / "docs" / "guides").glob("*.md"))] + ["../../README.md"]
    named = {path for page in pages for command in guide_commands(page) for path in named_paths(command)}
    return sorted(path.rstrip("/") for path in named if path.split("/")[0] not in tracked)


def activated_env(project: Path) -> dict[str, str]:
    """The shell of a reader who ran `source .venv/bin/activate` in ``project``.

    PYTHONPATH points at the copy, so `unipo`, `mkdocs` and `pytest` run the copy's code, as the
    copy's own editable install would make them.
    """
    env = {k: v for k, v in os.environ.items() if k not in SESSION_ONLY}
    env["VIRTUAL_ENV"] = str(VENV)
    env["PATH"] = f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(project)
    return env


def shell_runner(project: Path, timeout: float = 900) -> Runner:
    """Run a guide's command line as written, through bash, in ``project`` with the environment active."""
    env = activated_env(project)

    def run(command: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", command], cwd=project, env=env, capture_output=True, text=True,
                              timeout=timeout)

    return run


#: What the tests change in a guide's training command: its sizes, and nothing else. The guides quote ten
#: rollouts and 200 held-out problems (benchmarks/guide_commands.py runs and times exactly that); the tests
#: train two rollouts on 8 problems, which goes through the same trainer, log, validation, summary and build
#: in a tenth of the time. Two rollouts of the contribute guide's run still show its band both keeping and
#: dropping groups (the first rollout already does, from the shipped warm start with seed 0).
SMOKE_SIZES = {"--steps": "2", "--eval-n": "8"}


def smoke_sized(command: str) -> str:
    """``command`` (a guide's `unipo train ...`) with each option of SMOKE_SIZES set to its smoke value;
    every one of them must be in the command, once, and nothing else changes."""
    assert command.startswith("unipo train "), command
    for option, value in SMOKE_SIZES.items():
        command, found = re.subn(rf"(?<= ){re.escape(option)} \S+(?=\s|$)", f"{option} {value}", command)
        assert found == 1, f"{option} is not in `{command}` once"
    return command


def smoke_runner(run: Runner) -> Runner:
    """``run``, with the guide's training commands at smoke size (smoke_sized); every other command as written."""

    def run_smoke(command: str) -> subprocess.CompletedProcess:
        return run(smoke_sized(command) if command.startswith("unipo train ") else command)

    return run_smoke


# ---------------------------------------------------------------------------
# Contribute an algorithm: a new filter kind, the accuracy band, and GRPO with it
# ---------------------------------------------------------------------------

CONTRIBUTE = [
    'pytest tests/test_components.py tests/test_views_explainer.py -k "accuracy_band or port"',
    "unipo new-algorithm grpo_band --base grpo",
    'grep -n "TODO(author)" data/algorithms/grpo_band.yaml docs/course/algorithms/grpo_band.md',
    "unipo validate data/algorithms/grpo_band.yaml",
    "unipo train grpo_band --steps 10 --eval-n 200 --threads 1 --out data/runs/grpo_band",
    "unipo validate data/runs/grpo_band",
    "unipo summary data/runs/grpo_band",
    "mkdocs build --strict",
    "pytest -m specs -k grpo_band",
]

#: Where the guide's code blocks go, in the order the guide shows them: (language, file, where), where
#: is "end" (appended), ("before", text), ("after line", text) or ("replace line", text) in the file as
#: the checkout has it.
KIND_CODE = [
    ("python", "unipo_build/core/components.py", "end"),
    ("python", "unipo_build/core/kinds_reward.py", ("before", "# --- shaping ---")),
    ("js", "unipo_build/site/views/explainer/unipo-math.js", ("after line", "dynamic_sampling_keep: dynamicSamplingKeep,")),
    ("python", "tests/test_components.py", "end"),
    ("python", "unipo_build/core/kinds_openrlhf.py", "end"),
    ("python", "tests/test_openrlhf_command.py",
     ("replace line", 'assert a.algo.dynamic_filtering_enable == (kinds["filter"] == "dynamic_sampling")')),
]


def guide_code(page: str) -> list[tuple[str, str]]:
    """The (language, text) of each ```python and ```js block of docs/guides/<page>, in order: the code
    the guide shows its reader writing."""
    text = (ROOT / "docs" / "guides" / page).read_text(encoding="utf-8")
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(python|js)\n(.*?)^```", text, flags=re.S | re.M)]


def write_kind(project: Path) -> None:
    """The author's code for the new kind, exactly as the guide shows it, put where the guide says."""
    blocks = guide_code("contribute.md")
    assert [lang for lang, _ in blocks] == [lang for lang, _, _ in KIND_CODE], blocks
    for (_, code), (_, name, where) in zip(blocks, KIND_CODE):
        path = project / name
        text = path.read_text(encoding="utf-8")
        if where == "end":
            text = text.rstrip("\n") + "\n\n\n" + code
        else:
            how, anchor = where
            at = text.index(anchor)
            if how == "after line":
                at = text.index("\n", at) + 1
                text = text[:at] + code + text[at:]
            elif how == "replace line":
                start, end = text.rindex("\n", 0, at) + 1, text.index("\n", at) + 1
                text = text[:start] + code + text[end:]
            else:  # an indented block goes right before the anchor's line, a top-level one two blank lines above it
                text = text[:at] + code + ("" if code.startswith(" ") else "\n\n") + text[at:]
        path.write_text(text, encoding="utf-8")


def write_spec(project: Path, spec_id: str = "grpo_band") -> None:
    """The author's part: every marked text rewritten in place, the filter changed, the chapter, the nav,
    the run listed in data/suite.yaml."""
    spec_path = project / "data" / "algorithms" / f"{spec_id}.yaml"
    text = spec_path.read_text(encoding="utf-8")
    header = text[:text.index("\nid: ") + 1]  # the scaffold's comment block, kept as an author keeps it
    spec = yaml.safe_load(text)
    authored = yaml.safe_load((FIXTURES / "contribute" / f"{spec_id}.yaml").read_text(encoding="utf-8"))
    for key, value in authored.items():
        if key != "components":
            spec[key] = value
    for slot, fields in authored["components"].items():
        spec["components"][slot] = fields if "kind" in fields else {**spec["components"][slot], **fields}
    spec_path.write_text(header + yaml.safe_dump(spec, sort_keys=False, allow_unicode=True, width=100),
                         encoding="utf-8")
    shutil.copyfile(FIXTURES / "contribute" / f"{spec_id}.md", project / "docs" / "course" / "algorithms" / f"{spec_id}.md")
    mkdocs = project / "mkdocs.yml"
    lines = mkdocs.read_text(encoding="utf-8").splitlines(keepends=True)
    for folder, entry in (("course/algorithms/", f"- {authored['name']}: course/algorithms/{spec_id}.md"),
                          ("reference/algorithms/", f"- reference/algorithms/{spec_id}.md")):
        last = max(i for i, line in enumerate(lines) if folder in line and line.strip().startswith("- "))
        indent = lines[last][:len(lines[last]) - len(lines[last].lstrip())]
        lines.insert(last + 1, f"{indent}{entry}\n")
    mkdocs.write_text("".join(lines), encoding="utf-8")
    suite = project / "data" / "suite.yaml"
    text = suite.read_text(encoding="utf-8")
    entry = f"  - {{name: {spec_id}, algorithm: {spec_id}, seed: 0, detail: true}}\n"
    runs_end = text.index("\n\n", text.index("\nruns:\n")) + 1  # the end of the runs: list
    suite.write_text(text[:runs_end] + entry + text[runs_end:], encoding="utf-8")


def walk_contribute(project: Path, run: Runner) -> list[tuple[str, subprocess.CompletedProcess]]:
    """The guide's order: the kind (code, then its tests), the spec scaffolded and written, the run, the build."""
    commands = guide_commands("contribute.md")
    assert commands == CONTRIBUTE, commands
    write_kind(project)
    done = [(c, run(c)) for c in commands[:3]]
    write_spec(project)
    return done + [(c, run(c)) for c in commands[3:]]


# ---------------------------------------------------------------------------
# Rebuild the site with your own logs
# ---------------------------------------------------------------------------

OWN_LOGS = [
    "unipo explain data/runs/grpo --out work/explain",
    "unipo import trl trl-output --tap trl-tap --out runs/my-trl-run",
    "unipo validate runs/my-trl-run",
    "unipo import verl verl-runs/my-verl-run --out runs/my-verl-run",
    "unipo validate runs/my-verl-run",
    "unipo import prime-rl outputs/my-prime-run --out runs/my-prime-run --algorithm dr_grpo",
    "unipo validate runs/my-prime-run",
    "unipo train grpo --steps 10 --eval-n 200 --threads 1 --out runs/grpo-mine",
    "unipo import unipo my-unipo-log.jsonl --out runs/my-unipo-run",
    "unipo validate runs/my-unipo-run",
    "unipo import openrlhf tensorboard/my-openrlhf-run --out runs/my-openrlhf-run --algorithm grpo",
    "unipo validate runs/my-openrlhf-run",
    "unipo validate runs",
    "unipo explain runs/grpo-mine runs/my-unipo-run runs/my-openrlhf-run --out work/explain   # these runs alone",
    "UNIPO_RUNS=runs mkdocs build",
    "UNIPO_RUNS=runs/grpo-mine:data/runs mkdocs build      # your run next to the shipped ones",
    "UNIPO_RUNS=runs/grpo-mine mkdocs build                # a single run directory",
]


def bring_logs(project: Path) -> None:
    """The reader's own files: a log in UNIPO's format, an OpenRLHF TensorBoard directory, a TRL run
    with its tap (a real TRL 1.16 run, recorded by tests/trl_support.py), a verl run directory and a
    prime-rl run directory (tests/trainer_formats.py's fixtures)."""
    shutil.copytree(FIXTURES / "trl" / "run1", project / "trl-output")
    shutil.copytree(FIXTURES / "trl" / "run1-tap", project / "trl-tap")
    shutil.copy(FIXTURES / "unipo" / "dapo_small.jsonl", project / "my-unipo-log.jsonl")
    shutil.copytree(FIXTURES / "openrlhf" / "run1", project / "tensorboard" / "my-openrlhf-run")
    shutil.copytree(FIXTURES / "verl" / "run", project / "verl-runs" / "my-verl-run")
    shutil.copytree(FIXTURES / "prime_rl" / "run", project / "outputs" / "my-prime-run")


def walk_own_logs(project: Path, run: Runner) -> list[tuple[str, subprocess.CompletedProcess]]:
    commands = guide_commands("own-logs.md")
    assert commands == OWN_LOGS, commands
    bring_logs(project)
    return [(c, run(c)) for c in commands]
