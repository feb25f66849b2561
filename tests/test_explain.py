"""`unipo explain RUN...`: a site around the given runs alone, built by the course's MkDocs.

Built for a shipped run (data/runs/grpo) beside a run of an ablation rung (explained by the spec
nearest to its components), and for a run imported from the UNIPO fixture the importer tests use;
the pages must exist and hold the runs' own numbers, and only the given runs. Bad input (not a
run, an invalid run, a run no spec matches, an --out holding someone's files) gets one line
naming the file (step, field) and nothing is written.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from cli_helpers import UNIPO, unipo
from helpers_runlog import checksums, trl_fixture_with_a_gap
from unipo_build.site import explain
from unipo_build.core import runlog
from unipo_build.trainers import import_log
from unipo_build.core.numbers import fmt_num

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"


def page_text(path: Path) -> str:
    """A built page as a reader reads it: no scripts, styles or data templates, tags as spaces."""
    body = re.sub(r"<script.*?</script>|<style.*?</style>|<template.*?</template>", "", path.read_text(), flags=re.S)
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)))


def compare_view_data(raw: str) -> dict:
    """The data of a page's one comparison (compare.py compare_run_html: a template, an empty target)."""
    views = re.findall(r'<div class="unipo-compare-view" id="([^"]+)"><template class="unipo-data" id="\1-data"'
                       r'[^>]*>(.*?)</template><div class="unipo-compare-target" aria-live="polite"></div></div>',
                       raw, flags=re.S)
    assert len(views) == 1, len(views)
    return json.loads(views[0][1])


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    """grpo_small.json (tests/fixtures/unipo) imported: 3 updates, token detail on steps 0 and 2."""
    out = tmp_path_factory.mktemp("imported") / "grpo_small"
    import_log("unipo", FIXTURES / "unipo" / "grpo_small.json", out)
    return out


@pytest.fixture(scope="module")
def shipped_site(tmp_path_factory) -> tuple[Path, "subprocess.CompletedProcess"]:
    out = tmp_path_factory.mktemp("explain") / "site"
    result = unipo("explain", ROOT / "data/runs/grpo", ROOT / "data/runs/ladder_no_kl", "--out", out, timeout=300)
    return out, result


def test_shipped_run_site_has_every_view_and_only_its_runs(shipped_site):
    out, result = shipped_site
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"built a site for 2 runs: open {out / 'index.html'}"
    for page in ("index.html", "runs/grpo/index.html", "runs/ladder_no_kl/index.html",
                 "course/algorithms/grpo/index.html"):
        assert (out / page).is_file(), page
    # the course's other pages are not part of it
    assert not (out / "course/algorithms/ppo").exists() and not (out / "guides").exists()
    assert json.loads((out / explain.MARKER).read_text())["specs"] == {"grpo": "grpo", "ladder_no_kl": "grpo"}
    index = page_text(out / "index.html")
    assert "2 runs loaded: grpo (grpo), ladder_no_kl (ladder_no_kl)" in index
    # one chapter, linked by its spec's name, in the index and in the nav
    raw_index = (out / "index.html").read_text()
    assert '<a href="course/algorithms/grpo/">GRPO</a>' in raw_index
    assert [p.name for p in (out / "course/algorithms").iterdir()] == ["grpo"]

    run = page_text(out / "runs/grpo/index.html")
    steps = list(runlog.iter_steps(ROOT / "data/runs/grpo"))
    header = runlog.read_header(ROOT / "data/runs/grpo")
    rollouts = steps[-1].rollout + 1
    token_steps = runlog.token_steps(ROOT / "data/runs/grpo")
    assert (f"This is a GRPO run of {fmt_num(len(steps))} updates ({fmt_num(rollouts)} rollouts), token-level detail "
            f"on {fmt_num(len(token_steps))} of them; explained by GRPO: its header names the GRPO spec (grpo)") in run
    assert f"Updates (steps) {fmt_num(len(steps))} Rollouts {fmt_num(rollouts)}" in run
    assert f"Seed {header.seed}" in run and "The run trained exactly the GRPO spec's components." in run
    raw = (out / "runs/grpo/index.html").read_text()
    assert raw.count('class="unipo-explorer"') == 1 and 'class="unipo-inspector"' in raw
    assert 'class="unipo-explainer" id=' in raw and 'data-run="grpo"' in raw
    # every token file of the run is in the site, byte for byte (plain: the shipped one is gzipped), where the
    # inspector fetches it
    for step in token_steps:
        name = runlog.token_file_name(step)
        assert (out / "assets/runs/grpo/steps" / name).read_bytes() == \
            runlog.read_log_bytes(runlog.token_file(ROOT / "data/runs/grpo", step))


def test_a_variant_is_explained_by_the_nearest_spec(shipped_site):
    out, _ = shipped_site
    text = page_text(out / "runs/ladder_no_kl/index.html")
    assert ("explained by GRPO: its header names 'ladder_no_kl', not one of the course's algorithms; GRPO is the "
            "nearest: the fewest slots of another kind, then of other parameters (1 of 8 slots differ: another kind "
            "in kl)") in text
    assert "no token-level detail" in text and "token-level detail: the Step Inspector" in text
    raw = (out / "runs/ladder_no_kl/index.html").read_text()
    # its comparison with GRPO (drawn by explainer.js as "From GRPO to run ladder_no_kl: − 1 removed
    # = 7 unchanged", tests/browser/test_compare_render.py): one slot removed, the others unchanged
    data = compare_view_data(raw)
    assert [data["specs"][k]["name"] for k in ("a", "b")] == ["GRPO", "run ladder_no_kl"]
    assert {slot: v["status"] for slot, v in data["pairs"]["a|b"].items()} == {
        slot: "removed" if slot == "kl" else "unchanged" for slot in data["slots"]}
    # its Explainer answers the tokens its inspector announces (the run's algorithm id)
    assert 'class="unipo-explainer" id=' in raw and 'data-algorithm="ladder_no_kl" data-run="ladder_no_kl"' in raw


def test_the_chapter_shows_the_run_and_links_off_site_as_text(shipped_site):
    out, _ = shipped_site
    raw = (out / "course/algorithms/grpo/index.html").read_text()
    assert re.search(r'<a href="[^":#]*\.md', raw) is None  # no link to a page the site does not have
    assert '<span class="unipo-offsite">' in raw
    assert 'data-run="grpo"' in raw


def test_imported_run_site_holds_its_numbers(imported, tmp_path):
    before = checksums(imported)
    index = explain.build([imported], tmp_path / "site")
    assert index == tmp_path / "site" / "index.html" and index.is_file()
    assert checksums(imported) == before  # the run is read, never changed
    text = page_text(tmp_path / "site/runs/grpo_small/index.html")
    assert ("This is a GRPO run of 3 updates (2 rollouts), token-level detail on 2 of them; explained by GRPO: its "
            "header names the GRPO spec (grpo)") in text
    assert "Responses per prompt (G) 2" in text and "Model tiny-llama" in text and "Engine unipo-import" in text
    # what the log lacks, found in the log: no entropy array or metric, no clip fractions, no seed
    assert "per-token entropy (the inspector cannot colour tokens by it)" in text
    assert "metrics entropy/mean, clip/frac_high, clip/frac_low" in text
    assert "not recorded in the header: seed, hardware, software versions, finish time" in text
    assert "reference log-probs" not in text  # the fixture logs them
    # what the importer derived, as it noted it
    assert "token objective derived from the spec's math (token_objective not logged) [2 times]" in text
    for step in (0, 2):
        name = runlog.token_file_name(step)
        assert (tmp_path / "site/assets/runs/grpo_small/steps" / name).read_bytes() == \
            (imported / "tokens" / name).read_bytes()
    # built again into its own output: replaced, not refused
    (tmp_path / "site" / "stale.txt").write_text("from the earlier build")
    explain.build([imported], tmp_path / "site")
    assert not (tmp_path / "site" / "stale.txt").exists() and (tmp_path / "site" / explain.MARKER).is_file()


# ---------------------------------------------------------------------------
# Bad input: one line naming the file (step, field), nothing written
# ---------------------------------------------------------------------------

def _refused(tmp_path, *args, out=None):
    out = out or tmp_path / "out"
    result = unipo("explain", *args, "--out", out)
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".unipo-explain-")]  # no staging left
    return lines[0], out


def test_not_a_run(tmp_path, imported):
    line, out = _refused(tmp_path, tmp_path / "nothing")
    assert line == f"unipo explain: {tmp_path / 'nothing'}: no such directory: give a run directory (one holding " \
                   "header.json and steps.jsonl)"
    assert not out.exists()
    line, out = _refused(tmp_path, imported.parent)
    assert line.startswith(f"unipo explain: {imported.parent}: not a run (no header.json or steps.jsonl): it is a "
                           f"directory of runs: name the runs in it (e.g. {imported})")
    assert not out.exists()


def test_invalid_run_names_file_step_and_field(tmp_path, imported):
    """The guide's example, run as it is written there (from a directory holding runs/my-run)."""
    bad = tmp_path / "runs" / "my-run"
    shutil.copytree(imported, bad)
    lines = (bad / "steps.jsonl").read_text().splitlines()
    record = json.loads(lines[1])
    record["metrics"]["reward/mean"] = "high"
    lines[1] = json.dumps(record)
    (bad / "steps.jsonl").write_text("\n".join(lines) + "\n")
    before = checksums(bad)
    result = unipo("explain", "runs/my-run", cwd=tmp_path, env_extra={"UNIPO_ROOT": str(ROOT)})
    assert result.returncode == 1 and result.stdout == ""
    guide = (ROOT / "docs/guides/own-logs.md").read_text()
    quoted = re.search(r"^unipo explain: runs/my-run/steps\.jsonl .*$", guide, flags=re.M).group(0)
    assert result.stderr == quoted + "\n"
    assert quoted.startswith("unipo explain: runs/my-run/steps.jsonl (line 2, step 1): metrics.reward/mean: ")
    assert not (tmp_path / "work").exists() and checksums(bad) == before


def test_run_no_spec_matches(tmp_path):
    run = tmp_path / "custom"
    import_log("unipo", FIXTURES / "unipo" / "custom_algo.jsonl", run)
    line, out = _refused(tmp_path, run)
    assert line.startswith(f"unipo explain: {run / 'header.json'}: algorithm_config is null: the run's algorithm "
                           "'my-new-po' is none of this project's (cispo, dapo, dapo_dr, dr_grpo, dual_clip, gmpo, grpo, grpo_batch_std, "
                           "grpo_mis, grpo_mis_seq, grpo_tis, gspo, "
                           "ppo, reinforce, sapo)")
    assert line.endswith("import it again with --algorithm and the nearest of them, or add a spec for it "
                         "(`unipo new-algorithm`)")
    assert not out.exists()


def test_out_with_someone_elses_files_is_refused(tmp_path, imported):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.md").write_text("my notes")
    line, _ = _refused(tmp_path, imported, out=out)
    assert line == (f"unipo explain: {out}: --out is not empty and is not the output of an earlier `unipo explain` "
                    f"(no {explain.MARKER}): choose a new or empty directory; nothing was written")
    assert [p.name for p in out.iterdir()] == ["notes.md"] and (out / "notes.md").read_text() == "my notes"
    line, _ = _refused(tmp_path, imported, out=imported / "site")
    assert line == (f"unipo explain: {imported / 'site'}: --out is inside the run {imported}: choose an --out apart "
                    "from the runs")
    assert not (imported / "site").exists()


def test_two_runs_with_one_id_are_refused(tmp_path, imported):
    twin = tmp_path / "twin"
    shutil.copytree(imported, twin)
    line, out = _refused(tmp_path, imported, twin)
    assert line == (f"unipo explain: {twin / 'header.json'}: run_id 'grpo_small' is also the id of {imported}: "
                    "explain runs with different ids (import one again with --run-id)")
    assert not out.exists()


def test_serve_prints_the_url_and_serves_the_run(tmp_path, imported):
    out = tmp_path / "served"
    proc = subprocess.Popen([str(UNIPO), "explain", str(imported), "--out", str(out), "--serve", "--port", "0"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        match = re.fullmatch(rf"built a site for 1 run in {re.escape(str(out))}: open (http://127\.0\.0\.1:\d+/) "
                             r"\(Ctrl-C stops the server\)\n", line)
        assert match, (line, proc.stderr.read() if proc.poll() is not None else "")
        url = match.group(1)
        page = urllib.request.urlopen(url + "runs/grpo_small/", timeout=10).read().decode()
        assert 'data-run="grpo_small"' in page
        step = urllib.request.urlopen(url + "assets/runs/grpo_small/steps/step_000002.json", timeout=10).read()
        assert step == (imported / "tokens" / "step_000002.json").read_bytes()
        sitemap = (out / "sitemap.xml").read_text()
        assert f"<loc>{url}runs/grpo_small/</loc>" in sitemap  # built for the address it is served at
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()


def test_help_lists_explain():
    result = unipo("--help")
    assert result.returncode == 0 and "explain" in result.stdout


def test_the_slot_panel_shows_the_gaps_the_import_found(tmp_path):
    """A TRL run with scale_rewards='batch' and mask_truncated_completions (tests/fixtures/trl/gaps): its
    components hold their kinds (group_mean_batch_std, mask_truncated), so the nearest spec is batch-std
    GRPO (the same advantage) and the panel names the one kind added and no gap. A run with TRL's bias-corrected KL
    (run1's fixture with use_bias_correction_kl, helpers_runlog.trl_fixture_with_a_gap) has a gap: its kl row says
    what TRL ran, as the run card's notes do, and the slot counts once among those that differ, in the import's note
    and on the page alike."""
    run = tmp_path / "runs" / "trl-gaps"
    import_log("trl", FIXTURES / "trl" / "gaps", run, tap=FIXTURES / "trl" / "gaps-tap")
    explain.build([run], tmp_path / "site")
    raw = (tmp_path / "site" / "runs" / "trl-gaps" / "index.html").read_text()
    # the comparison's data (explainer.js draws it: tests/browser/test_compare_render.py)
    data = compare_view_data(raw)
    assert data["ids"] == {"a": "grpo_batch_std", "b": "trl-gaps"} and data["specs"]["b"]["name"] == "run trl-gaps"
    pair = data["pairs"]["a|b"]
    assert (pair["filter"]["status"], pair["filter"]["changed"]) == ("added", ["kind"])
    assert pair["advantage"]["status"] == pair["ratio"]["status"] == pair["aggregation"]["status"] == "unchanged"
    assert not data["gaps"]
    text = page_text(tmp_path / "site" / "runs" / "trl-gaps" / "index.html")
    assert "The run trained 1 slot differently from the Batch-std GRPO spec" in text

    src, tap = trl_fixture_with_a_gap(tmp_path / "fixture")
    run = tmp_path / "runs" / "trl-gap"
    import_log("trl", src, run, tap=tap)
    explain.build([run], tmp_path / "site-gap")
    page = tmp_path / "site-gap" / "runs" / "trl-gap" / "index.html"
    data = compare_view_data(page.read_text())
    assert data["pairs"]["a|b"]["kl"]["status"] == "modified"
    assert data["gaps"] == {"kl": ["ran use_bias_correction_kl = True (the KL times the ratio): no kind expresses it; "
                                   "nearest: k3 in the loss"]}
    how = "2 of 8 slots differ: other parameters in advantage, a trainer setting its components do not show in kl"
    assert f"grpo's kinds with TRL's settings, {how}" in runlog.read_header(run).notes
    assert "The run trained 2 slots differently from the GRPO spec" in page_text(page)


def test_two_objectives_of_a_step_are_shown_with_the_reason(tmp_path):
    """The CISPO TRL run (tests/fixtures/trl/cispo): the token file's step objective (the kind's value, w A) and
    minus TRL's loss (the paper's form, -sg(w) A log pi) part on every step; the run page names both, the gap and
    why, the reason read as its own sentence. The bnpo run with gradient accumulation no longer parts (issue 44 item
    5: its micro-batch token mean is a kind), so its page says nothing of it."""
    run = tmp_path / "runs" / "cispo"
    import_log("trl", FIXTURES / "trl" / "cispo", run, tap=FIXTURES / "trl" / "cispo-tap")
    header = json.loads((run / "header.json").read_text())
    step = header["trl"]["objectives"]["at_step"]
    detail = json.loads((run / "tokens" / f"step_{step:06d}.json").read_text())
    explain.build([run], tmp_path / "site")
    text = page_text(tmp_path / "site" / "runs" / "cispo" / "index.html")
    assert "Two objectives per step On 3 of the 3 steps with token detail" in text
    assert f"At step {step}: {detail['objective']:.6g} in the token file, {detail['trl_objective']:.6g} in steps.jsonl" in text
    assert "in steps.jsonl. TRL writes CISPO's per-token loss as the MiniMax-M1 paper does" in text
    run = tmp_path / "runs" / "bnpo"
    import_log("trl", FIXTURES / "trl" / "bnpo", run, tap=FIXTURES / "trl" / "bnpo-tap")
    explain.build([run], tmp_path / "site-bnpo")
    text = page_text(tmp_path / "site-bnpo" / "runs" / "bnpo" / "index.html")
    assert "Two objectives per step" not in text
    assert "mean over each micro-batch's tokens, then over micro-batches" in text
    # the import's note (on the run card) and the page name one spec for the run: the same rule (core/matching.py)
    assert "explained by GRPO: its header names 'trl-bnpo'" in text
    # ... and count the slots that differ by one rule (SpecMatch.differing): the aggregation's kind and the
    # advantage's parameters (TRL's 1e-4): 2 of 8, in both places
    how = "2 of 8 slots differ: another kind in aggregation, other parameters in advantage"
    assert f"no spec has all of TRL's kinds, nearest spec: grpo ({how})" in text
    assert f"GRPO is the nearest: the fewest slots of another kind, then of other parameters ({how})" in text
    assert "The run trained 2 slots differently from the GRPO spec" in text
    # a run whose two objectives agree says nothing of it
    run = tmp_path / "runs" / "run1"
    import_log("trl", FIXTURES / "trl" / "run1", run, tap=FIXTURES / "trl" / "run1-tap")
    explain.build([run], tmp_path / "site1")
    assert "Two objectives per step" not in page_text(tmp_path / "site1" / "runs" / "run1" / "index.html")


def test_an_imported_run_is_explained_in_its_own_terms(tmp_path):
    """Issue 44 item 4 and the reward sentence of item 3, on TRL's CISPO fixture (cap 1.02, a reward of two
    functions, no held-out evaluation): the Explainer is headed by the run's own components with the nearest spec
    named beside them (not 'GRPO ... Shao et al.' over a CISPO formula), its hint names this page's Step Inspector,
    the reward's tooltip is the header's reward (not '1 if its final answer is right, 0 if not'), the run card's
    heading claims no held-out evaluation above, and the two objectives' reason reads as a sentence."""
    run = tmp_path / "runs" / "cispo"
    import_log("trl", FIXTURES / "trl" / "cispo", run, tap=FIXTURES / "trl" / "cispo-tap")
    explain.build([run], tmp_path / "site")
    raw = (tmp_path / "site" / "runs" / "cispo" / "index.html").read_text()
    text = page_text(tmp_path / "site" / "runs" / "cispo" / "index.html")
    assert ("Algorithm Explainer run cispo the run's own components nearest spec: GRPO (Group Relative Policy "
            "Optimization, Shao et al. (2024), arXiv:2402.03300") in text
    assert "The formula and the cards below are what this run trained: " in text
    assert "clipped IS weight (CISPO) (upper \u03b5 0.02)" in text
    assert "Select a token in this page's Step Inspector of run cispo" in text
    assert "Step Inspector of a GRPO run" not in text
    tips = re.findall(r'title="(The reward of response i[^"]*)"', raw)
    assert tips and {html.unescape(t) for t in tips} == {
        "The reward of response i, as this run's log describes it: TRL reward functions: correct_reward x 1, "
        "coin_reward x 0.5."}
    assert "1 if its final answer is right" not in raw
    assert "Not in this log (the held-out evaluations are above)" not in text and "Not in this log" in text
    assert "They are TRL writes" not in text and "TRL writes CISPO's per-token loss as the MiniMax-M1 paper" in text


def test_the_run_page_answers_the_practitioners_questions(tmp_path):
    """The TRL run with masked truncations (tests/fixtures/trl/gaps): most of its updates have a zero gradient, and
    its page says so in a card whose steps open in the page's Step Inspector."""
    from unipo_build.core.diagnose import diagnose

    run = tmp_path / "runs" / "trl-gaps"
    import_log("trl", FIXTURES / "trl" / "gaps", run, tap=FIXTURES / "trl" / "gaps-tap")
    explain.build([run], tmp_path / "site")
    raw = (tmp_path / "site" / "runs" / "trl-gaps" / "index.html").read_text()
    found = diagnose(run)
    cards = re.findall(r'class="admonition (\w+) unipo-diagnosis" data-key="(\w+)" data-verdict="([^"]+)"', raw)
    assert [(k, v) for _, k, v in cards] == [(d.key, d.verdict) for d in found]
    loss = next(d for d in found if d.key == "loss_zero")
    assert loss.verdict == "look here" and loss.steps
    text = page_text(tmp_path / "site" / "runs" / "trl-gaps" / "index.html")
    assert loss.figure in text and "Taught in From the reward to the surrogate" in text
    for step in loss.steps:
        assert f'href="#explorer-run-inspector:step={step}"' in raw
    assert 'id="unipo-explorer-run-inspector"' in raw  # the Step Inspector those links open
    assert raw.count('class="unipo-explorer"') == 1


class Lines:
    """A process's output stream, read line by line on a thread of its own, so that a test waits for a line with a
    deadline and fails at it saying what came, instead of blocking on readline or sleeping a fixed time."""

    def __init__(self, stream, name: str):
        import queue
        import threading

        self.name = name
        self.queue: queue.Queue = queue.Queue()
        self.taken: list[str] = []  # the lines expect() took
        self.waiting: list[str] = []  # lines come that nothing took yet
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream) -> None:
        for line in stream:
            self.queue.put(line)
        self.queue.put(None)  # the stream closed

    def _next(self, timeout: float) -> str | None:
        import queue

        if self.waiting:
            return self.waiting.pop(0)
        try:
            return self.queue.get(timeout=timeout)
        except queue.Empty:
            return ""

    def pending(self) -> list[str]:
        """The lines come so far that nothing took (without waiting)."""
        import queue

        while True:
            try:
                line = self.queue.get_nowait()
            except queue.Empty:
                return list(self.waiting)
            if line is not None:
                self.waiting.append(line)

    def expect(self, pattern: str, seconds: float, waiting_for: str, other: "Lines") -> str:
        """The next line of the stream, which must match ``pattern`` in full, within ``seconds``; at the deadline
        the test fails naming what it waited for, the lines taken so far and what ``other`` (the other stream) said."""
        line = self._next(timeout=seconds)
        if not line:
            why = "closed" if line is None else f"said nothing more within {seconds:.0f} s"
            pytest.fail(f"{self.name} {why} while waiting {waiting_for}; {self.name} so far: {self.taken!r}; "
                        f"{other.name}: {other.pending()!r}")
        self.taken.append(line)
        assert re.fullmatch(pattern, line), (f"waiting {waiting_for}", line, f"{other.name}: {other.pending()!r}")
        return line

    def rest(self) -> str:
        """Every line not taken, once the stream has closed (the process has exited)."""
        self.thread.join(timeout=30)
        return "".join(self.pending())


def test_a_wait_for_a_line_fails_at_its_deadline_saying_what_came():
    """Lines.expect: a process that stops talking fails the wait at its deadline (it does not hang on readline),
    and the failure says what the test waited for and what each stream said."""
    import sys
    import time

    code = "import sys, time; print('one', flush=True); print('oops', file=sys.stderr, flush=True); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = Lines(proc.stdout, "stdout"), Lines(proc.stderr, "stderr")
    try:
        stdout.expect(r"one\n", 30, "for one", stderr)
        stderr.expect(r"oops\n", 30, "for oops", stdout)
        started = time.monotonic()
        with pytest.raises(pytest.fail.Exception) as failed:
            stdout.expect(r"two\n", 1, "for two", stderr)
        assert time.monotonic() - started < 10
        assert str(failed.value) == ("stdout said nothing more within 1 s while waiting for two; stdout so far: "
                                     "['one\\n']; stderr: []")
    finally:
        proc.kill()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()


def test_watch_rebuilds_as_the_run_writes_new_steps(tmp_path, imported):
    """--watch --serve: a run that logs another step (as a training run appends to steps.jsonl) is rebuilt and
    served with it; a step cut mid-write keeps the previous site and says so; Ctrl-C ends it with 0. Each stage
    waits for the line that says it happened, and fails at its deadline saying what came instead."""
    import signal

    run = tmp_path / "runs" / "grpo_small"
    shutil.copytree(imported, run)
    out = tmp_path / "watched"
    proc = subprocess.Popen([str(UNIPO), "explain", str(run), "--out", str(out), "--serve", "--port", "0", "--watch",
                             "--interval", "0.3"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = Lines(proc.stdout, "stdout"), Lines(proc.stderr, "stderr")
    try:
        line = stdout.expect(r"built a site for 1 run: open (http://127\.0\.0\.1:\d+/); watching the run for new "
                             r"steps \(Ctrl-C stops\)\n", 180, "for the first build", stderr)
        url = re.search(r"open (http://\S+/);", line).group(1)
        page = urllib.request.urlopen(url + "runs/grpo_small/", timeout=10).read().decode()
        assert "a grpo run of 3 updates" in html.unescape(page).replace("GRPO", "grpo")
        steps = run / "steps.jsonl"
        last = json.loads(steps.read_text().splitlines()[-1])
        new = {**last, "step": last["step"] + 1, "rollout": last["rollout"] + 1, "first_in_rollout": True,
               "has_tokens": False}
        with steps.open("a") as fh:
            fh.write(json.dumps(new)[:20])  # a line half written: the build must not use it
        # the watcher sees it once it has held still for one interval, and refuses it in one line on stderr
        stderr.expect(r"unipo explain: not rebuilt \(.*steps\.jsonl.*\); the site shows the previous build, still "
                      r"watching\n", 120, "for the watcher to refuse the half-written line", stdout)
        assert not stdout.pending(), "the half-written line was built into the site"
        with steps.open("a") as fh:
            fh.write(json.dumps(new)[20:] + "\n")
        stdout.expect(r"rebuilt at \d\d:\d\d:\d\d: 4 steps logged; reload the page\n", 120,
                      "for the rebuild with the completed line", stderr)
        page = urllib.request.urlopen(url + "runs/grpo_small/", timeout=10).read().decode()
        assert "run of 4 updates" in html.unescape(page)
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=30)
        err = stderr.rest()
        stdout.rest()
        proc.stdout.close()
        proc.stderr.close()
    assert code == 0, err
    # nothing else on stderr: a later poll may refuse the half line again before it was completed
    assert all(line.startswith("unipo explain: not rebuilt (") for line in err.splitlines() if line.strip()), err
