"""The run sets in the build (issue 20 item 5): which sets the hook builds, the set switch's
links, the runs each set's build reads, and a malformed extra.unipo_sets stopping the build with
one line. No site is built here (tests/test_sets_build.py builds one)."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
from mkdocs.exceptions import PluginError

from unipo_build.site import hooks
from unipo_build.core import runs, sets

REPO = Path(__file__).resolve().parents[1]
TWO_SETS = [{"id": "tiny", "label": "CPU set (tiny)", "runs": "data/runs"},
            {"id": "gpu", "label": "GPU set", "runs": "data/runs-gpu"}]


def _config(extra: dict, site_dir: str = "/tmp/unused-site"):
    return SimpleNamespace(extra=dict(extra), config_file_path=str(REPO / "mkdocs.yml"), site_dir=site_dir)


def _gpu_runs(tmp_path: Path) -> Path:
    """A directory holding one run directory (its content is not read by the set logic)."""
    (tmp_path / "gpu" / "some-run").mkdir(parents=True)
    return tmp_path / "gpu"


@pytest.fixture(autouse=True)
def _no_override(monkeypatch):
    monkeypatch.delenv("UNIPO_SET_GPU_RUNS", raising=False)
    monkeypatch.delenv("UNIPO_RUNS", raising=False)


def test_one_set_without_the_gpu_runs_no_switch(tmp_path, monkeypatch):
    monkeypatch.setenv("UNIPO_SET_GPU_RUNS", str(tmp_path / "not-there"))
    config = _config({"unipo_sets": TWO_SETS})
    hooks.note_sets(config)
    assert config.extra["unipo_set"] == "tiny" and config.extra["unipo_set_default"] is True
    assert config.extra["unipo_set_switch"] == [] and "alternate" not in config.extra
    # an existing directory with no run in it is no set either
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("UNIPO_SET_GPU_RUNS", str(tmp_path / "empty"))
    hooks.note_sets(config)
    assert config.extra["unipo_set_switch"] == []


def test_no_unipo_sets_is_one_default_set():
    config = _config({})
    hooks.note_sets(config)
    assert (config.extra["unipo_set"], config.extra["unipo_set_switch"]) == ("default", [])


def test_the_gpu_set_appears_when_its_directory_holds_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("UNIPO_SET_GPU_RUNS", str(_gpu_runs(tmp_path)))
    config = _config({"unipo_sets": TWO_SETS})
    hooks.note_sets(config)
    assert config.extra["unipo_set_switch"] == [
        {"id": "tiny", "label": "CPU set (tiny)", "prefix": ""},
        {"id": "gpu", "label": "GPU set", "prefix": "gpu/"}]
    assert config.extra["alternate"] is True  # Material then includes overrides/partials/alternate.html
    gpu = sets.find_set(config.extra, "gpu", REPO)
    assert gpu.runs == (tmp_path / "gpu").resolve() and not gpu.default
    # the gpu set's own build knows which set it shows
    nested = _config({"unipo_sets": TWO_SETS, "unipo_set": "gpu"})
    hooks.note_sets(nested)
    assert (nested.extra["unipo_set"], nested.extra["unipo_set_label"], nested.extra["unipo_set_default"]) == \
        ("gpu", "GPU set", False)


def test_only_the_default_sets_build_builds_the_others(tmp_path, monkeypatch):
    monkeypatch.setenv("UNIPO_SET_GPU_RUNS", str(_gpu_runs(tmp_path)))
    built = []
    monkeypatch.setattr(hooks, "build_set", lambda config, run_set: built.append(run_set.id))
    hooks._build_other_sets(_config({"unipo_sets": TWO_SETS}))
    assert built == ["gpu"]
    hooks._build_other_sets(_config({"unipo_sets": TWO_SETS, "unipo_set": "gpu"}))  # the gpu build itself
    assert built == ["gpu"]
    monkeypatch.setenv("UNIPO_SET_GPU_RUNS", str(tmp_path / "not-there"))
    hooks._build_other_sets(_config({"unipo_sets": TWO_SETS}))
    assert built == ["gpu"]


def test_set_links_keep_the_page(tmp_path):
    switch = [{"id": "tiny", "label": "T", "prefix": ""}, {"id": "gpu", "label": "G", "prefix": "gpu/"}]
    page = "course/algorithms/grpo/"
    from_tiny = hooks.set_links(page, "", switch)
    assert [(e["id"], e["current"], e["href"], e["root"]) for e in from_tiny] == [
        ("tiny", True, "../../../course/algorithms/grpo/", "../../../"),
        ("gpu", False, "../../../gpu/course/algorithms/grpo/", "../../../gpu/")]
    from_gpu = hooks.set_links(page, "gpu/", switch)
    assert [(e["id"], e["current"], e["href"]) for e in from_gpu] == [
        ("tiny", False, "../../../../course/algorithms/grpo/"),
        ("gpu", True, "../../../../gpu/course/algorithms/grpo/")]
    # the home page of each set
    assert [e["href"] for e in hooks.set_links("", "", switch)] == ["./", "gpu/"]
    assert [e["href"] for e in hooks.set_links("", "gpu/", switch)] == ["../", "../gpu/"]


def test_each_sets_build_reads_its_own_runs(tmp_path, monkeypatch):
    gpu = _gpu_runs(tmp_path)
    monkeypatch.setenv("UNIPO_SET_GPU_RUNS", str(gpu))
    extra = {"unipo_sets": TWO_SETS, "unipo_runs": "data/runs", "unipo_run_choice": {"grpo": "grpo-s1"}}
    tiny = runs.runs_source(REPO, {**extra, "unipo_set": "tiny"})
    assert tiny.paths == ((REPO / "data" / "runs").resolve(),) and tiny.choice == (("grpo", "grpo-s1"),)
    shown = runs.runs_source(REPO, {**extra, "unipo_set": "gpu"})
    # the gpu set's runs, and not UNIPO_RUNS nor the default set's run choice
    monkeypatch.setenv("UNIPO_RUNS", str(REPO / "data" / "runs"))
    assert runs.runs_source(REPO, {**extra, "unipo_set": "gpu"}) == shown
    assert shown.paths == (gpu.resolve(),) and shown.choice == () and "unipo_sets (gpu)" in shown.origin
    # either set's runs from inside the other set's build (what a page comparing the sets reads)
    default, other = sets.declared_sets(extra, REPO)
    assert runs.set_source(default, REPO, {**extra, "unipo_set": "gpu"}).paths == (REPO / "data" / "runs",)
    assert runs.set_source(other, REPO, extra).paths == (gpu.resolve(),)


@pytest.mark.parametrize("entry, field", [
    ({"id": "gpu", "runs": "data/runs-gpu"}, "extra.unipo_sets[1].label"),
    ({"id": "GPU!", "label": "GPU set", "runs": "data/runs-gpu"}, "extra.unipo_sets[1].id"),
    ({"id": "gpu", "label": "GPU set", "runs": "data/runs-gpu", "colour": "red"}, "extra.unipo_sets[1]: unknown field 'colour'"),
])
def test_a_malformed_set_stops_the_build_with_one_line(entry, field):
    config = _config({"unipo_sets": [TWO_SETS[0], entry]})
    with pytest.raises(PluginError) as err:
        hooks.on_config(config)
    message = str(err.value)
    assert "\n" not in message and message.startswith("mkdocs.yml ") and field in message, message


def test_mkdocs_build_prints_the_malformed_set_and_stops(tmp_path, caplog):
    """The real build (MkDocs' API, the project's config): it stops at on_config, before any page,
    with core/sets.py's line as its error."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort

    config = load_config(str(REPO / "mkdocs.yml"), site_dir=str(tmp_path / "site"))
    config.extra["unipo_sets"] = [TWO_SETS[0], {"id": "gpu", "label": "", "runs": "data/runs-gpu"}]
    with caplog.at_level(logging.ERROR, logger="mkdocs"), pytest.raises(Abort):
        build(config)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == ["mkdocs.yml extra.unipo_sets[1].label: a non-empty string is required"], errors
    assert not (tmp_path / "site" / "index.html").exists()


def test_a_config_outside_the_project_declares_sets_relative_to_itself(tmp_path):
    """A test or a user's config that INHERITs the course's from another directory: the gpu set's
    relative path points into that directory, which holds no runs, so the build shows one set
    (it used to stop: 'not a UNIPO project')."""
    extra = {"unipo_sets": [{"id": "tiny", "label": "CPU", "runs": "data/runs"},
                            {"id": "gpu", "label": "GPU", "runs": "data/runs-gpu"}]}
    declared = sets.declared_sets(extra, tmp_path, environ={})
    assert [s.runs for s in declared] == [tmp_path / "data" / "runs", tmp_path / "data" / "runs-gpu"]
    assert [s.id for s in sets.available_sets(extra, tmp_path, environ={})] == ["tiny"]


def test_a_build_on_your_own_runs_shows_them_alone_unless_a_set_is_named_too(tmp_path):
    """UNIPO_RUNS=your/runs: the course on those runs, without the shipped gpu set beside them (a
    practitioner's logs, a test's stand-in); UNIPO_SET_GPU_RUNS brings a further set back."""
    gpu = tmp_path / "data" / "runs-gpu"
    (gpu / "grpo").mkdir(parents=True)
    extra = {"unipo_sets": [{"id": "tiny", "label": "CPU", "runs": "data/runs"},
                            {"id": "gpu", "label": "GPU", "runs": "data/runs-gpu"}]}
    assert [s.id for s in sets.available_sets(extra, tmp_path, environ={})] == ["tiny", "gpu"]
    mine = {"UNIPO_RUNS": str(tmp_path / "mine")}
    assert [s.id for s in sets.available_sets(extra, tmp_path, environ=mine)] == ["tiny"]
    both = {**mine, "UNIPO_SET_GPU_RUNS": str(gpu)}
    assert [s.id for s in sets.available_sets(extra, tmp_path, environ=both)] == ["tiny", "gpu"]
