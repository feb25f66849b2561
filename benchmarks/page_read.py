"""A page read to its end, as the budgets measure it (issue 47 item 5): the reader scrolls from the top to the
bottom a screen at a time, and every lazy view near each stop starts and is drawn before the next one (the
formulas typeset within half a screen of the viewport, each Step Inspector that comes within half a screen loads
and draws its step, the charts drawn). Folds (<details>) and content tabs the reader has not opened stay as they
are: what they hold is counted as the server wrote it.

benchmarks/page_budgets.py and benchmarks/reader_budget.py measure with it, and the browser tests' walk over every
page (tests/browser/browser_harness.py walk_every_page) loads this file, so all three read a page alike. No
dependencies beyond a Selenium driver: ``state`` is page_state.js's body, ``selectors`` its argument.
"""

from __future__ import annotations

import time

#: One screen further down, without smooth scrolling; true once the bottom was already in view.
STEP_JS = """
const bottom = document.documentElement.scrollHeight - innerHeight;
if (scrollY >= bottom - 1) return true;
window.scrollTo({top: Math.min(bottom, scrollY + innerHeight), behavior: 'instant'});
return false;
"""

#: Two animation frames and a task: the intersection observers have run for the new scroll position (or 300 ms,
#: where the browser draws no frames: a tab it does not show).
FRAMES_JS = """
const done = arguments[arguments.length - 1];
let over = false;
const finish = () => { if (!over) { over = true; done(); } };
requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(finish, 0)));
setTimeout(finish, 300);
"""


def _ready(driver, state: str, selectors: dict, deadline: float) -> dict:
    while True:
        now = driver.execute_script(state, selectors)
        if now["ready"] or time.monotonic() > deadline:
            return now
        time.sleep(0.05)


def read_through(driver, state: str, selectors: dict, timeout: float = 120.0) -> dict:
    """Scroll the loaded page from its top to its bottom, a screen at a time, waiting at each stop until what
    started there is drawn; at the bottom, wait until the page keeps still (the same height and nodes on two
    reads 0.3 s apart, the bottom still in view: a view that grew below is read too). Returns page_state.js's
    state there, with ``ready`` False if the views did not finish within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    driver.execute_script("window.scrollTo({top: 0, behavior: 'instant'})")
    last = None
    while True:
        driver.execute_async_script(FRAMES_JS)
        now = _ready(driver, state, selectors, deadline)
        if time.monotonic() > deadline:
            return dict(now, ready=False)
        if not driver.execute_script(STEP_JS):
            last = None  # one screen further down
            continue
        if last is not None and (now["nodes"], now["height"]) == (last["nodes"], last["height"]):
            return now
        last = now
        time.sleep(0.3)
