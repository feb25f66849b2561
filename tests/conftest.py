"""Shared fixtures: the repository root, one strict build of the site, one random tiny policy and one real TRL
run per test session; the groups that keep `pytest -n 2 --dist loadgroup` (.ci/test.sh) from making a
module's or the session's costly fixtures on both workers; and, under xdist, the tests outside any group
ordered slowest first (by the last measured durations), so that the run does not end on one long test."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from site_build import REPO_ROOT, SiteBuild, build_site, free_port, make_standin_set, sitemap_root


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def site_build(tmp_path_factory) -> SiteBuild:
    """The site, built once per session (or the directory named by UNIPO_SITE_DIR)."""
    reuse = os.environ.get("UNIPO_SITE_DIR")
    if reuse:
        site_dir = Path(reuse).resolve()
        if not (site_dir / "index.html").is_file():
            pytest.fail(f"UNIPO_SITE_DIR={reuse} does not contain a built site (no index.html)")
        return SiteBuild(site_dir, None, None, sitemap_root(site_dir))
    # Built for a free local port under a subpath, as a GitHub Pages project site is.
    url = f"http://127.0.0.1:{free_port()}/unipo/"
    return build_site(tmp_path_factory.mktemp("site"), site_url=url)


@pytest.fixture(scope="session")
def built_site(site_build: SiteBuild) -> Path:
    """Path of the built site; fails the test if the build failed."""
    if site_build.returncode not in (0, None):
        pytest.fail(f"mkdocs build --strict failed:\n{(site_build.log or '')[-6000:]}")
    return site_build.site_dir


@pytest.fixture(scope="session")
def standin_set(tmp_path_factory) -> Path:
    return make_standin_set(tmp_path_factory.mktemp("standin") / "gpu")


@pytest.fixture(scope="session")
def sets_site_build(tmp_path_factory, standin_set) -> SiteBuild:
    """The course built with the stand-in as its gpu set (UNIPO_SET_GPU_RUNS), once per session."""
    url = f"http://127.0.0.1:{free_port()}/unipo/"
    return build_site(tmp_path_factory.mktemp("sets-site"), site_url=url,
                      extra_env={"UNIPO_SET_GPU_RUNS": str(standin_set)})


@pytest.fixture(scope="session")
def tiny_policy(tmp_path_factory) -> Path:
    """The random tiny policy of tests/training_fixtures.py (seeded: the same weights and tokenizer each time),
    saved once per session for every module's smoke runs. Trainers only read it; no test writes into it."""
    pytest.importorskip("torch")
    from training_fixtures import save_tiny_checkpoint

    return save_tiny_checkpoint(tmp_path_factory.mktemp("tiny-policy"))


@pytest.fixture(scope="session")
def trl_grpo_run(tmp_path_factory) -> Path:
    """One real TRL GRPOTrainer run with the UNIPO tap (tests/trl_support.py), made once per session for every
    module that reads it (tests/test_trl_run.py, tests/browser/test_trl_browser.py): GRPO with a KL term
    (beta 0.04) and two passes over each generation (num_iterations 2), 4 optimizer steps; the tap details one
    group of the two. Returns the directory holding trl-output/ and tap/: readers import from it into their own
    directories and write nothing into trl-output/ or tap/."""
    if os.environ.get("UNIPO_REQUIRE_TRL") != "1":
        pytest.importorskip("trl", reason="TRL is not installed (pip install -e '.[trl]')")
    from trl_support import run_trl

    tmp = tmp_path_factory.mktemp("trl-grpo")
    run_trl(tmp, loss_type="grpo", beta=0.04, num_iterations=2, max_steps=4, groups=1)
    return tmp


#: The session's costly fixtures: their users (and every browser test, which all serve the built site) run on one
#: worker under `pytest -n N --dist loadgroup` (.ci/test.sh), which then builds the site and runs TRL once, and
#: runs one Chromium at a time.
SHARED_BUILDS = {"site_build", "built_site", "sets_site_build", "trl_grpo_run"}
SHARED_GROUP = "shared-builds"


def xdist_group(item) -> str | None:
    """The group of a test under --dist loadgroup: SHARED_GROUP for the users of SHARED_BUILDS (the browser
    tests of the shipped site among them: its session fixtures depend on site_build); the module's node id
    when the test uses a fixture its module defines above function scope (a trained run, a built site of its
    own: made once, on one worker); None (any worker, test by test) otherwise. A browser test that builds its
    own site is thus free of the shipped site's worker (each worker starts its own Chromium: 3 s)."""
    if SHARED_BUILDS & set(getattr(item, "fixturenames", ())):
        return SHARED_GROUP
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info else ()):
        if any(d.scope != "function" and d.baseid.endswith(".py") for d in defs):
            return item.nodeid.split("::")[0]
    return None


def pytest_configure(config):
    # pytest-xdist registers its marker itself; without it (UNIPO_TEST_WORKERS=1, no dev extra) it is unknown
    config.addinivalue_line("markers", "xdist_group(name): tests that pytest-xdist's loadgroup runs on one worker")
    one_thread_per_worker()


def one_thread_per_worker() -> None:
    """In a pytest-xdist worker, torch (and every process a test starts: `unipo train`, TRL, mkdocs) computes on
    one thread unless the environment says otherwise. Workers share the machine's cores: each worker's OpenMP
    threads waiting for a core the other worker holds made the training tests three times slower (two smoke
    modules side by side: 86 s apart from each other's threads, 37 s on one thread each). README's advice for
    a busy machine, `--threads 1` or UNIPO_THREADS=1, applied to the suite."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for name in ("OMP_NUM_THREADS", "UNIPO_THREADS"):
        os.environ.setdefault(name, "1")
    threads = os.environ["OMP_NUM_THREADS"]
    torch = sys.modules.get("torch")  # torch reads OMP_NUM_THREADS when it is imported: tell one imported already
    if torch is not None and threads.isdigit() and int(threads) > 0:
        torch.set_num_threads(int(threads))


#: The last measured durations of the whole suite (`--durations`, kept in benchmarks/results).
DURATIONS = REPO_ROOT / "benchmarks" / "results" / "test_durations.txt"


def measured_durations(path: Path = DURATIONS) -> dict[str, float]:
    """{node id: seconds of setup + call + teardown} from a `pytest --durations` report (empty if none)."""
    seconds: dict[str, float] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            match = re.match(r"\s*([\d.]+)s (?:setup|call|teardown)\s+(\S+::\S+)\s*$", line)
            if match:
                seconds[match.group(2)] = seconds.get(match.group(2), 0.0) + float(match.group(1))
    return seconds


def slowest_first(items: list, seconds: dict[str, float]) -> list:
    """The tests that no group holds together, the slowest of the last measurement first; the rest in their
    order. --dist loadgroup hands out the groups, larger first, then these one by one in collection order:
    a two-minute walk handed out last would run alone at the end while the other worker idles."""
    free = [item for item in items if not any(m.name == "xdist_group" for m in item.iter_markers())]
    slow = sorted((item for item in free if item.nodeid in seconds), key=lambda item: -seconds[item.nodeid])
    first = {id(item) for item in slow}
    return slow + [item for item in items if id(item) not in first]


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook, which reads the markers into the node ids
def pytest_collection_modifyitems(config, items):
    for item in items:
        group = xdist_group(item)
        if group and not any(m.name == "xdist_group" for m in item.iter_markers()):
            item.add_marker(pytest.mark.xdist_group(group))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # only under xdist, where the order decides which worker runs what; every worker orders alike
        items[:] = slowest_first(items, measured_durations())
