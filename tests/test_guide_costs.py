"""unipo_build.site.pages.guides.guide_costs: a guide command's measured cost, worded from the benchmark's file."""

from __future__ import annotations

from unipo_build.site.pages.guides.guide_costs import NOT_MEASURED, duration_text, measured_text, size_text

RESULTS = {
    "measured_at": "2026-11-23", "machine": "a 2-core x86_64 machine", "cores": 2,
    "commands": {
        "unipo train grpo": {"wall_s": 275.9, "bytes": 690_000, "writes": ["runs/grpo-mine"], "load_average_5min": 1.2},
        "pytest -m specs -k grpo_band": {"wall_s": 21.7, "bytes": 0, "writes": [], "load_average_5min": 6.2,
                                         "measured_at": "2026-11-28"},
    },
}


def test_durations_and_sizes_as_the_guides_write_them():
    assert [duration_text(s) for s in (44.6, 125, 600, 869, 3424.3)] == ["45 s", "2 min 5 s", "10 min", "14 min",
                                                                         "57 min"]
    assert duration_text(3900) == "1 h 5 min"
    assert size_text(690_000) == "0.69 MB" and size_text(27_400_000) == "27 MB"


def test_a_command_is_quoted_with_the_date_it_was_measured():
    assert measured_text(RESULTS, "unipo train grpo") == (
        "Measured on 2026-11-23 on a 2-core x86_64 machine: 4 min 36 s, writing 0.69 MB to `runs/grpo-mine`.")
    # measured again on its own, on a busy machine (load 6.2 on 2 cores): its own date, and the load said
    assert measured_text(RESULTS, "pytest -m specs -k grpo_band") == (
        "Measured on 2026-11-28 on a 2-core x86_64 machine while other work kept its cores busy: 22 s.")
    assert measured_text(RESULTS, "unipo train grpo", "short") == "4 min 36 s and 0.69 MB"
    assert measured_text(RESULTS, "unipo sft") == f"({NOT_MEASURED})"
