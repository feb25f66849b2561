"""The command line as a practitioner meets it (issue 30 item 5): `unipo summary` readable at 80 columns, an
import that prints a few lines and where its notes are, a run id that follows --out (two TRL runs saved as
`output` do not collide; a collision is refused with the way out), and an import outside the project that
names the algorithm from the specs shipped with the package, saying so (issue 44 item 6)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cli_helpers import unipo
from unipo_build.trainers.notes import Notes, split_notes

ROOT = Path(__file__).resolve().parents[1]
TRL = ROOT / "tests" / "fixtures" / "trl"


def test_summary_text_fits_80_columns_and_holds_the_figures():
    result = unipo("summary", ROOT / "data" / "runs" / "grpo")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80]
    summary = json.loads(unipo("summary", ROOT / "data" / "runs" / "grpo", "--json").stdout)
    # the per-problem correctness strings stay in --json
    assert len(summary["eval_start"]["correct_greedy"]) == summary["eval_start"]["n"]
    assert summary["eval_start"]["correct_greedy"] not in result.stdout
    text = result.stdout
    assert lines[0] == f"run grpo: algorithm grpo (preset {summary['preset']}, seed {summary['seed']})"
    assert f"{summary['steps']} updates over {summary['rollouts']} rollouts" in text
    start, end = summary["eval_start"]["accuracy_greedy"], summary["eval_end"]["accuracy_greedy"]
    assert f"greedy: {100 * start:.1f}% -> {100 * end:.1f}%" in text
    change = summary["heldout_change"]["greedy"]
    assert f"({100 * change['change']:+.1f} points, 95% CI {100 * change['ci95'][0]:+.1f} to " in text
    moment = summary["moments"]["clipped_high"]
    assert f"clipped_high         step {moment['step']}, group {moment['group']}" in text


def import_trl(src: Path, tap: Path, out: Path, *extra, cwd=ROOT, env=None):
    return unipo("import", "trl", src, "--tap", tap, "--out", out, *extra, cwd=cwd, env_extra=env)


def test_an_import_prints_a_few_lines_and_where_the_notes_are(tmp_path):
    out = tmp_path / "runs" / "my-run"
    result = import_trl(TRL / "gaps", TRL / "gaps-tap", out)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) <= 12 and len(result.stdout) < 1200, result.stdout
    assert lines[0] == f"{out}: run 'my-run', algorithm 'trl-grpo' (with its spec's components)"
    assert lines[1] == "  3 steps, 3 with token detail"
    # scale_rewards='batch' and mask_truncated_completions map to their kinds: the nearest spec is named, the note
    # whole, wrapped at 80 columns (issue 44 item 4: it was cut at its own '; ' and at 200 characters)
    assert all(len(line) <= 80 for line in lines[2:] if str(out) not in line), result.stdout  # a path is not cut
    assert "  ! no spec has all of TRL's kinds, nearest spec: grpo_batch_std (1 of 8 slots\n    differ: another kind in " \
        "filter)\n" in result.stdout
    header = json.loads((out / "header.json").read_text())
    n = len(split_notes(header["notes"]))
    assert " ".join(line.strip() for line in lines).endswith(
        f"all {n} in {out / 'header.json'} (notes) and on the run card of `unipo explain {out}`")


def test_notes_come_back_whole_from_the_header():
    """Hand-worked: three notes, one with '; ' inside brackets (kept), one with '; ' of its own (joined with ', ' when
    noted, since '; ' separates the notes): the header's text splits back into the three, each whole."""
    notes = Notes()
    notes.add("nearest spec: grpo (2 of 8 slots of another kind (aggregation); other parameters in advantage)")
    notes.once("metric 'x' also maps to 'y'; kept under its own name")
    notes.add("rows skipped", 2)
    text = notes.text("Imported.")
    assert text == ("Imported. Derived or changed on import: nearest spec: grpo (2 of 8 slots of another kind "
                    "(aggregation); other parameters in advantage); metric 'x' also maps to 'y', kept under its own "
                    "name; rows skipped [2 times].")
    assert split_notes(text) == ["nearest spec: grpo (2 of 8 slots of another kind (aggregation); other parameters in "
                                 "advantage)", "metric 'x' also maps to 'y', kept under its own name",
                                 "rows skipped [2 times]"]
    assert split_notes("Trained here.") == [] and split_notes(None) == []


def test_the_run_id_follows_out_and_a_collision_is_refused(tmp_path):
    """Two TRL runs whose output_dir is `output` (TRL's examples' name): each run is named by its --out."""
    for name in ("run1", "seed1"):
        shutil.copytree(TRL / name, tmp_path / name / "output")
    runs = tmp_path / "runs"
    for name in ("run1", "seed1"):
        result = import_trl(tmp_path / name / "output", TRL / f"{name}-tap", runs / f"trl-{name}")
        assert result.returncode == 0, result.stderr
        assert json.loads((runs / f"trl-{name}" / "header.json").read_text())["run_id"] == f"trl-{name}"
    result = import_trl(tmp_path / "run1" / "output", TRL / "run1-tap", runs / "again", "--run-id", "trl-seed1")
    assert result.returncode == 1 and not (runs / "again").exists()
    assert result.stderr.strip() == (f"{runs / 'again'}: the run id 'trl-seed1' is already the id of "
                                     f"{runs / 'trl-seed1'} beside it (a site built from {runs} would show only one "
                                     "of them): pass --run-id NAME, or choose another --out; nothing was written")
    assert not [p for p in runs.iterdir() if p.name.startswith(".")]


def test_an_import_outside_the_project_says_which_specs_it_used(tmp_path):
    inside = import_trl(TRL / "run1", TRL / "run1-tap", tmp_path / "inside")
    assert inside.returncode == 0, inside.stderr
    notes = json.loads((tmp_path / "inside" / "header.json").read_text())["notes"]
    assert f"matched against the specs of {ROOT / 'data' / 'algorithms'}" in notes
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    outside = import_trl(TRL / "gaps", TRL / "gaps-tap", tmp_path / "outside", cwd=elsewhere,
                         env={"UNIPO_ROOT": ""})
    assert outside.returncode == 0, outside.stderr
    # outside any project: the specs the package carries, named as such; the nearest spec is named as inside
    shipped = ROOT / "unipo_build" / "specs"
    header = json.loads((tmp_path / "outside" / "header.json").read_text())
    assert (f"matched against the specs shipped with unipo ({shipped}): no data/algorithms at or above "
            f"{elsewhere.resolve()}") in header["notes"]
    assert "no spec directory found" not in header["notes"]
    assert "  ! no spec has all of TRL's kinds, nearest spec: grpo_batch_std (1 of 8 slots\n    differ: another kind in " \
        "filter)\n" in outside.stdout
    # --algorithm names a spec from there too, and one that names none stops with the spec ids
    named = import_trl(TRL / "gaps", TRL / "gaps-tap", tmp_path / "named", "--algorithm", "grpo", cwd=elsewhere,
                       env={"UNIPO_ROOT": ""})
    assert named.returncode == 0, named.stderr
    assert json.loads((tmp_path / "named" / "header.json").read_text())["algorithm"] == "grpo"
    wrong = import_trl(TRL / "gaps", TRL / "gaps-tap", tmp_path / "wrong", "--algorithm", "grpo2", cwd=elsewhere,
                       env={"UNIPO_ROOT": ""})
    assert wrong.returncode == 1 and wrong.stderr.count("\n") == 1
    assert wrong.stderr.startswith(f"{TRL / 'gaps'}: --algorithm 'grpo2' names no spec; the spec ids are cispo, dapo")
    # from a subdirectory of the project the project's specs are found
    sub = import_trl(TRL / "gaps", TRL / "gaps-tap", tmp_path / "sub", cwd=ROOT / "docs")
    assert sub.returncode == 0, sub.stderr
    assert (f"matched against the specs of {ROOT / 'data' / 'algorithms'}"
            in json.loads((tmp_path / "sub" / "header.json").read_text())["notes"])


def test_the_training_extras_install_without_running_the_tests():
    """README's Quickstart: `bash .ci/test.sh --install-only` installs (here: finds installed) torch and the
    train, dev and trl extras and runs no test."""
    import subprocess

    if not (ROOT / ".venv" / "bin" / "python").exists():
        import pytest

        pytest.skip("no .venv: this checkout was not set up by .ci/setup-site.sh")
    result = subprocess.run(["bash", str(ROOT / ".ci" / "test.sh"), "--install-only"], cwd=ROOT, capture_output=True,
                            text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "==> pytest" not in result.stdout
    assert result.stdout.strip().splitlines()[-1].endswith(
        "installed torch 2.13.0 and the train, dev, trl and model extras into .venv (no test run): source .venv/bin/activate"
        "\x1b[0m")
    assert "bash .ci/test.sh --install-only" in (ROOT / "README.md").read_text()


def test_summary_answers_the_practitioners_questions():
    result = unipo("summary", ROOT / "data" / "runs" / "grpo", "--no-moments")
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    start = lines.index("diagnoses (what practitioners ask of a run):")
    assert lines[start + 1] == "  [fine] The loss is (about) 0: is it training?"
    assert sum(line.startswith("  [") for line in lines[start:]) == 8
    assert "taught in docs/course/algorithms/ppo.md (trl#3120)" in result.stdout
    data = json.loads(unipo("summary", ROOT / "data" / "runs" / "grpo", "--json", "--no-moments").stdout)
    # one process samples and trains in float32 and keeps no sampler log-prob: the sampler question has no answer
    assert [d["verdict"] for d in data["diagnoses"]] == ["fine"] * 5 + ["not measurable"] + ["fine"] * 2


def test_an_import_shows_its_progress_on_a_terminal(tmp_path, monkeypatch):
    """An import's step loop shows a bar on a terminal (tqdm), and nothing where the output is not one."""
    import io

    import pytest

    pytest.importorskip("tqdm")
    from unipo_build.trainers import import_log

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    import_log("trl", TRL / "run1", tmp_path / "run", tap=TRL / "run1-tap")
    assert "importing TRL steps" in screen.getvalue() and "/3 [" in screen.getvalue()  # of the 3 logged steps
    monkeypatch.setattr("sys.stderr", io.StringIO())
    result = import_trl(TRL / "run1", TRL / "run1-tap", tmp_path / "piped")
    assert result.returncode == 0 and "importing" not in result.stderr
