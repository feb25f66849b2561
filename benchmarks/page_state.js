// A page's state as the reader budgets measure it (benchmarks/reader_budget.py, page_budgets.py and the
// browser tests' walk, tests/browser/browser_harness.py, all read this file): whether its formulas, charts
// and active inspectors are drawn for the current scheme (a formula or chart in a closed fold waits for it
// to open: "deferred"), its DOM nodes, height, first chart's time, view scripts and views. The body of a
// function; arguments[0]: {view name: CSS selector}.
const scheme = document.body.getAttribute('data-md-color-scheme') || 'default';
const pending = [...document.querySelectorAll('.arithmatex')].filter(e => !e.hasAttribute('data-unipo-rendered')).length
  + [...document.querySelectorAll('.unipo-vega')].filter(e => {
      const s = e.getAttribute('data-unipo-rendered'); return s !== scheme && s !== 'error' && s !== 'deferred'; }).length
  + [...document.querySelectorAll('.unipo-inspector[data-active]')].filter(e => !e.hasAttribute('data-ready')).length;
return {ready: document.readyState === 'complete' && !!window.UNIPO && pending === 0,
        nodes: document.getElementsByTagName('*').length,
        height: document.documentElement.scrollHeight,
        chart: window.__unipoFirstChart,
        has_chart: !!document.querySelector('.unipo-vega, .unipo-explorer__chart'),
        scripts: [...document.querySelectorAll('script[src*="assets/views/"]')].map(s => s.getAttribute('src').split('/').pop().replace(/\.js$/, '')),
        views: Object.entries(arguments[0]).filter(([k, sel]) => document.querySelector(sel)).map(([k]) => k)};
