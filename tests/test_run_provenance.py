"""How the run sets were made (docs/reference/run_sets.md, unipo_build/site/pages/scale/provenance.py): runs
grouped into sittings by machine, software and time, worked by hand; the page's figures on the shipped sets."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
import html
from pathlib import Path
from types import SimpleNamespace

from site_build import MacroEnv
from unipo_build.site.context import Site
from unipo_build.site.pages.scale import provenance as P

ROOT = Path(__file__).resolve().parents[1]

T0 = datetime(2026, 11, 26, 23, 0, tzinfo=timezone.utc)


def run(run_id: str, start_min: float, minutes: float, cores: int = 2, python: str = "3.11.7", naive: bool = False):
    start = T0 + timedelta(minutes=start_min)
    if naive:
        start = start.replace(tzinfo=None)
    header = SimpleNamespace(
        hardware=SimpleNamespace(device="cpu", device_name=None, cpu="x86_64", cores=cores),
        software={"python": python, "torch": "2.13.0+cpu"}, created_at=start,
        finished_at=start + timedelta(minutes=minutes), wall_time_s=60 * minutes)
    return SimpleNamespace(id=run_id, header=header)


def test_runs_group_into_sittings_by_machine_software_and_gap():
    # a, b overlap; c starts 10 min after b ends (same sitting, gap under 30 min); d starts 60 min after c
    # ends (a new sitting); e runs beside a on another machine; f (naive time) beside d on d's machine.
    runs = [run("a", 0, 10), run("b", 5, 10), run("c", 25, 10), run("d", 95, 10),
            run("e", 0, 5, cores=16, python="3.12.3"), run("f", 96, 4, naive=True)]
    found = P.sittings(runs)
    assert [[r.id for r in s.runs] for s in found] == [["a", "b", "c"], ["e"], ["d", "f"]]
    first = found[0]
    assert first.machine == "CPU, x86_64, 2 cores" and first.software == "Python 3.11.7, torch 2.13.0+cpu"
    assert (first.finish - first.start) == timedelta(minutes=35) and sum(first.wall_times) == 30 * 60
    assert found[1].machine == "CPU, x86_64, 16 cores"


def test_durations_and_dates_read_as_a_reader_writes_them():
    assert P.duration_text(38) == "38 s"
    assert P.duration_text(7.2 * 60) == "7.2 min"
    assert P.duration_text(5 * 3600 + 14 * 60) == "5 h 14 min"
    assert P.when_text(T0, T0 + timedelta(hours=3, minutes=14)) == "2026-11-26 23:00 to 2026-11-27 02:14 UTC"
    assert P.when_text(T0, T0 + timedelta(minutes=9)) == "2026-11-26 23:00 to 23:09 UTC"
    assert P.above_zero_text(3, 3) == "3 of 3 intervals above zero" and P.above_zero_text(0, 1) == "its interval not above zero"
    assert P.within_text(1, 1) == "within 5 points" and P.within_text(2, 3) == "2 of 3 within 5 points"


def test_the_page_reads_the_shipped_tiny_set():
    """Every shipped tiny run began from the shipped warm start, problem by problem; the sittings, gains and
    memorisation gaps are read from the headers (so no figure of them is asserted here)."""
    site = Site(MacroEnv(conf={"extra": {"unipo_runs": "data/runs"}}), root=ROOT)
    sittings, warm, gains = P.run_sittings(site), P.warm_starts(site), P.run_gains(site)
    assert "sitting" in sittings and " UTC" in sittings and "in all" in sittings
    loaded = len([p for p in (ROOT / "data" / "runs").iterdir() if (p / "header.json").is_file()])
    assert "data/warm-start/tiny" in warm
    assert f"{loaded} of {loaded}: their first held-out evaluation is this warm start" in html.unescape(warm)
    assert "intervals above zero" in gains and "within 5 points" in gains
