/*
 * UNIPO playgrounds: controls, simulations and chart updates on the three playground pages.
 *
 * The pages are written by unipo_build/site/playgrounds/macros.py: a JSON block per page
 * (<template id="pg-data-PAGE">, read with UNIPO.data), rows of controls ([data-pg-control]), figures
 * ([data-pg-chart] around a unipo.js chart) and, on the GDPO page, a toggle grid. The
 * simulations live in playgrounds-sim.js (a parity-tested port of the numpy modules).
 *
 * Each figure's Vega-Lite spec reads named datasets and parameters. This script keeps its
 * own copy of every spec, hands it to UNIPO.embed (so a colour-scheme redraw shows the
 * current state), and on every change swaps datasets with view.data() and parameters with
 * view.signal(). Registered with UNIPO.register, so it runs on load and after instant
 * navigation; a page is set up once (its data template gets data-pg-ready).
 */
(function () {
  "use strict";

  // Loaded on the pages that use it, again after each instant navigation to one: set up once.
  var loaded = (window.UNIPO_LOADED = window.UNIPO_LOADED || {});
  if (loaded.playgrounds) return;
  loaded.playgrounds = true;

  // The page's text colour in the light and the dark scheme: the palette's "ink" (every page's
  // data carries it), set before any chart is drawn.
  var INK_LIGHT = null;
  var INK_DARK = null;
  var RAMPS = null; // the palette's diverging ramps, light and dark (the heat map's colours)

  function sim() {
    return window.UNIPO_PLAYGROUNDS_SIM;
  }

  /* ---------------------------------------------------------------- charts */

  function currentInk() {
    return window.UNIPO && window.UNIPO.scheme() === "slate" ? INK_DARK : INK_LIGHT;
  }

  // Replace the ink colour everywhere in a spec (mark colours, scale ranges, the ink param).
  function recolour(node, ink) {
    if (Array.isArray(node)) {
      for (var i = 0; i < node.length; i++) {
        if (node[i] === INK_LIGHT || node[i] === INK_DARK) node[i] = ink;
        else if (node[i] && typeof node[i] === "object") recolour(node[i], ink);
      }
      return;
    }
    Object.keys(node).forEach(function (key) {
      var value = node[key];
      if (value === INK_LIGHT || value === INK_DARK) node[key] = ink;
      else if (value && typeof value === "object") recolour(value, ink);
    });
  }

  // Panel widths for faceted and concatenated charts (width "container" cannot be used there).
  function setPanelWidths(node, width) {
    if (Array.isArray(node)) {
      node.forEach(function (child) { setPanelWidths(child, width); });
      return;
    }
    if (!node || typeof node !== "object") return;
    if (typeof node.width === "number") node.width = width;
    ["spec", "vconcat", "hconcat", "concat", "layer"].forEach(function (key) {
      if (node[key]) setPanelWidths(node[key], width);
    });
  }

  // On a phone-wide chart, legends list their entries one per line.
  function singleColumnLegends(node) {
    if (Array.isArray(node)) {
      node.forEach(singleColumnLegends);
      return;
    }
    if (!node || typeof node !== "object") return;
    if (node.legend && typeof node.legend === "object" && node.legend.columns) node.legend.columns = 1;
    Object.keys(node).forEach(function (key) {
      if (key !== "datasets" && node[key] && typeof node[key] === "object") singleColumnLegends(node[key]);
    });
  }

  function Chart(figure) {
    this.figure = figure;
    this.el = figure.querySelector(".unipo-vega");
    this.spec = null;
    if (this.el) {
      try {
        this.spec = window.UNIPO.data(this.el.getAttribute("data-spec-id")); // a fresh copy
      } catch (err) {
        console.error("UNIPO playgrounds: no spec for a figure", err);
      }
    }
    this.lastWidth = 0;
  }

  // usermeta.pgLayout: {columns, fixed, perColumn, min, max, wrap}. A row of `columns` panels
  // needs columns * (panel + perColumn) + fixed pixels; with `wrap`, fewer columns are used
  // (the spec's `columns`) when the panels would be narrower than `min`.
  Chart.prototype.fit = function () {
    var layout = (this.spec.usermeta || {}).pgLayout;
    if (!layout) return false;
    var available = Math.max(this.el.clientWidth || this.figure.clientWidth || 600, 200);
    if (Math.abs(available - this.lastWidth) < 8) return false;
    this.lastWidth = available;
    var columns = layout.columns;
    var panelFor = function (n) { return Math.floor((available - layout.fixed) / n - layout.perColumn); };
    var panel = panelFor(columns);
    if (layout.wrap) {
      while (columns > 1 && panel < layout.min) {
        columns -= 1;
        panel = panelFor(columns);
      }
      this.spec.columns = columns;
      if (columns === 1) singleColumnLegends(this.spec);
    }
    setPanelWidths(this.spec, Math.max(layout.min, Math.min(layout.max, panel)));
    return true;
  };

  Chart.prototype.embed = function () {
    recolour(this.spec, currentInk());
    // the casing under the exact gradient's path is the page's own background colour
    var paper = getComputedStyle(document.body).getPropertyValue("--md-default-bg-color").trim();
    (this.spec.params || []).forEach(function (p) { if (p.name === "paper" && paper) p.value = paper; });
    // the heat map's ramp follows the colour scheme (a dark neutral on a dark page)
    if (this.spec.datasets && this.spec.datasets.pg_surface) this.fitColours(this.spec.datasets.pg_surface);
    return window.UNIPO.embed(this.el, this.spec);
  };

  Chart.prototype.view = function () {
    return window.UNIPO.view(this.el);
  };

  Chart.prototype.setData = function (name, rows) {
    this.spec.datasets[name] = rows;
    var view = this.view();
    if (view) {
      try {
        view.data(name, rows);
        return view.runAsync();
      } catch (err) {
        console.error("UNIPO playgrounds: could not update " + name, err);
      }
    }
    return Promise.resolve();
  };

  /** The heat map's colours fitted to this surface: its real range, neutral at 0 (token-scale.js). */
  Chart.prototype.fitColours = function (rows) {
    var values = [];
    rows.forEach(function (row) { values.push.apply(values, row.J); });
    var fitted = window.UNIPOViews.scale.chartScale(RAMPS, values, window.UNIPO.scheme() === "slate");
    this.setParam("jdomain", fitted.domain);
    this.setParam("jrange", fitted.range);
    this.setParam("jticks", fitted.ticks);
  };

  Chart.prototype.setParam = function (name, value) {
    (this.spec.params || []).forEach(function (p) {
      if (p.name === name) p.value = value;
    });
    var view = this.view();
    if (view) {
      try {
        view.signal(name, value);
        return view.runAsync();
      } catch (err) {
        console.error("UNIPO playgrounds: could not set " + name, err);
      }
    }
    return Promise.resolve();
  };

  function chartsOf(root) {
    var charts = {};
    Array.prototype.forEach.call(root.querySelectorAll("[data-pg-chart]"), function (fig) {
      var chart = new Chart(fig);
      if (chart.el && chart.spec) charts[fig.getAttribute("data-pg-chart")] = chart;
    });
    return charts;
  }

  /* -------------------------------------------------------------- controls */

  function controlValue(input) {
    var choices = input.getAttribute("data-pg-choices");
    if (choices) return JSON.parse(choices)[Number(input.value)];
    if (input.type === "number") {
      var lo = Number(input.min || 1);
      var hi = Number(input.max || 9999);
      var v = Math.round(Number(input.value));
      return isFinite(v) ? Math.min(hi, Math.max(lo, v)) : lo;
    }
    return input.value;
  }

  function showValue(input) {
    var out = input.parentNode.querySelector("output");
    var value = controlValue(input);
    if (out) out.textContent = String(value);
    if (input.type === "range") input.setAttribute("aria-valuetext", String(value));
  }

  /** The value a control was written with (the page's default). */
  function defaultOf(input) {
    if (input.tagName === "SELECT") {
      var chosen = Array.prototype.filter.call(input.options, function (o) { return o.defaultSelected; })[0] || input.options[0];
      return chosen ? chosen.value : "";
    }
    return input.defaultValue;
  }

  /** Whether ``raw`` is a value control ``input`` can take (an option; a number in its range and step). */
  function accepts(input, raw) {
    if (input.tagName === "SELECT") return Array.prototype.some.call(input.options, function (o) { return o.value === raw; });
    if (input.type !== "range" && input.type !== "number") return typeof raw === "string";
    var v = Number(raw);
    if (raw === "" || !isFinite(v)) return false;
    if (input.min !== "" && v < Number(input.min)) return false;
    if (input.max !== "" && v > Number(input.max)) return false;
    var step = input.step && input.step !== "any" ? Number(input.step) : null;
    var base = input.min !== "" ? Number(input.min) : 0;
    return !step || Math.abs((v - base) / step - Math.round((v - base) / step)) < 1e-6;
  }

  // Binds every control of `page` under root; onChange(name) runs once per animation frame.
  // The settings live in the URL hash (UNIPO.state, view "pg-<page>"): a committed change is a
  // history entry, a reload, Back or a shared link restores them, a value the control cannot
  // take leaves its default and a one-line note.
  function bindControls(root, page, onChange) {
    var inputs = root.querySelectorAll('[data-pg-control][data-pg-page="' + page + '"]');
    var pending = {};
    var scheduled = false;
    var stateId = "pg-" + page;
    var state = window.UNIPO && window.UNIPO.state;
    function flush() {
      scheduled = false;
      var names = Object.keys(pending);
      pending = {};
      onChange(names);
    }
    function params() {
      var p = {};
      Array.prototype.forEach.call(inputs, function (input) {
        var name = input.getAttribute("data-pg-control");
        if (input.value !== defaultOf(input)) p[name] = input.value;
      });
      return p;
    }
    /** Set the controls from URL params (null: the defaults); returns the names that changed. */
    function restore(given) {
      var bad = [];
      var changed = {};
      Array.prototype.forEach.call(inputs, function (input) {
        var name = input.getAttribute("data-pg-control");
        var want = given && Object.prototype.hasOwnProperty.call(given, name) ? given[name] : null;
        if (want !== null && !accepts(input, want)) {
          if (bad.indexOf(name) < 0) bad.push(name + " = " + want);
          want = null;
        }
        var value = want === null ? defaultOf(input) : want;
        if (input.value !== value) {
          input.value = value;
          changed[name] = true;
        }
        showValue(input);
      });
      if (state && inputs.length) {
        state.note(stateId, bad.length ? "The link sets " + bad.join(", ") + ", which this playground cannot take; " +
          "those controls keep their defaults." : null, inputs[0].closest(".pg-controls") || inputs[0].closest("label") || inputs[0]);
      }
      return Object.keys(changed);
    }
    if (state && inputs.length) {
      var first = restore(state.get(stateId));
      if (first.length) window.requestAnimationFrame(function () { onChange(first); });
      state.watch(stateId, function (given) {
        var names = restore(given);
        if (names.length) onChange(names);
      }, inputs[0]);
    }
    Array.prototype.forEach.call(inputs, function (input) {
      showValue(input);
      var handler = function () {
        var name = input.getAttribute("data-pg-control");
        // the same control may sit next to several figures: keep the copies in step
        Array.prototype.forEach.call(inputs, function (other) {
          if (other !== input && other.getAttribute("data-pg-control") === name) {
            other.value = input.value;
            showValue(other);
          }
        });
        showValue(input);
        pending[name] = true;
        if (!scheduled) {
          scheduled = true;
          window.requestAnimationFrame(flush);
        }
      };
      input.addEventListener(input.tagName === "SELECT" || input.type === "number" ? "change" : "input", handler);
      // a committed value (a slider let go): one history entry
      input.addEventListener("change", function () { if (state) state.set(stateId, params(), true); });
    });
    return function read() {
      var values = {};
      Array.prototype.forEach.call(inputs, function (input) {
        values[input.getAttribute("data-pg-control")] = controlValue(input);
      });
      return values;
    };
  }

  /* ---------------------------------------------- playground 1: one axis */

  function axisRows(bumps, beta, cfg) {
    var S = sim();
    var a = S.linspace(-6, 6, 241);
    var star = S.piStar(bumps, beta, cfg);
    var xs = Array.from(a);
    var reward = [];
    var ref = [];
    var opt = [];
    var matched = [];
    xs.forEach(function (x) {
      var r = S.reward(x, bumps);
      reward.push(r);
      var lref = S.logNormalPdf(x, 0.0, cfg.refSigma);
      ref.push(Math.exp(lref));
      opt.push(Math.exp(lref + r / beta - star.logZ));
      matched.push(Math.exp(S.logNormalPdf(x, star.mean, star.std)));
    });
    return {
      star: star,
      reward: [{ a: xs, r: reward }],
      density: [
        { curve: "π_ref", a: xs, p: ref },
        { curve: "π*", a: xs, p: opt },
        { curve: "Gaussian with π*'s mean and std", a: xs, p: matched },
      ],
    };
  }

  function surfaceRows(bumps, beta, cfg) {
    var S = sim();
    var mus = Array.from(S.linspace(cfg.surfaceMu[0], cfg.surfaceMu[1], cfg.surfaceMu[2]));
    var sigmas = S.linspace(cfg.surfaceSigma[0], cfg.surfaceSigma[1], cfg.surfaceSigma[2]);
    var rows = [];
    for (var j = 0; j < sigmas.length; j++) {
      var J = mus.map(function (m) { return S.objective(m, sigmas[j], bumps, beta, cfg.refSigma); });
      rows.push({ sigma: sigmas[j], mu: mus, J: J });
    }
    return rows;
  }

  // The exact gradient last, so that it is drawn on top of the sampled methods.
  function drawOrder(methods) {
    return methods.filter(function (m) { return m !== "exact"; }).concat(methods.indexOf("exact") >= 0 ? ["exact"] : []);
  }

  function trajectoryRows(settings, cfg) {
    var S = sim();
    return drawOrder(cfg.methods).map(function (m) {
      var t = S.runMethod(m, settings, cfg);
      return {
        method: cfg.methodLabels[m],
        step: t.mu.map(function (_, i) { return i; }),
        mu: t.mu,
        sigma: t.logSigma.map(Math.exp),
        J: t.objective,
      };
    });
  }

  function bandRows(settings, cfg) {
    var S = sim();
    return drawOrder(cfg.methods).map(function (m) {
      var b = S.objectiveBand(m, settings, cfg, cfg.bandSeeds);
      return {
        method: cfg.methodLabels[m],
        step: Array.from(b.median, function (_, i) { return i; }),
        median: Array.from(b.median),
        low: Array.from(b.low),
        high: Array.from(b.high),
      };
    });
  }

  // Same as charts.band_domain in Python: the medians and J(pi*), padded.
  function bandDomain(rows, optimum) {
    var lo = Infinity;
    var hi = optimum;
    rows.forEach(function (row) {
      row.median.forEach(function (v) {
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      });
    });
    var pad = Math.max(0.08 * (hi - lo), 0.02);
    return [lo - pad, hi + pad];
  }

  function initObjective(root, data, charts) {
    var cfg = data.sim;
    var read = bindControls(root, "objective", update);

    function settings() {
      var s = Object.assign({}, data.defaults);
      var v = read();
      Object.keys(v).forEach(function (k) { s[k] = v[k]; });
      return s;
    }

    function update(changed) {
      var s = settings();
      var bumps = cfg.presets[s.preset].bumps;
      var onlyView = changed && changed.length && changed.every(function (n) { return n === "focus"; });
      if (onlyView) return Promise.resolve();
      var axis = axisRows(bumps, s.beta, cfg);
      var jobs = [];
      if (charts.axis) {
        jobs.push(charts.axis.setData("pg_reward", axis.reward));
        jobs.push(charts.axis.setData("pg_density", axis.density));
      }
      if (charts.surface) {
        var marks = [
          { kind: "start", label: "start (π_ref)", mu: s.startMu, sigma: s.startSigma },
          { kind: "pistar", label: "π* (mean, std)", mu: axis.star.mean, sigma: axis.star.std },
        ];
        var surface = surfaceRows(bumps, s.beta, cfg);
        charts.surface.fitColours(surface);
        jobs.push(charts.surface.setData("pg_surface", surface));
        jobs.push(charts.surface.setData("pg_traj", trajectoryRows(s, cfg)));
        jobs.push(charts.surface.setData("pg_marks", marks));
      }
      if (charts.band) {
        var rows = bandRows(s, cfg);
        var optimum = s.beta * axis.star.logZ;
        var range = bandDomain(rows, optimum);
        jobs.push(charts.band.setParam("ylo", range[0]));
        jobs.push(charts.band.setParam("yhi", range[1]));
        jobs.push(charts.band.setData("pg_band", rows));
        jobs.push(charts.band.setData("pg_optimum", [{ J: optimum, label: "J(π*) = β log Z" }]));
      }
      return Promise.all(jobs).then(function () {
        root.setAttribute("data-pg-updates", String(Number(root.getAttribute("data-pg-updates") || 0) + 1));
      });
    }

    // Content tabs beside the surface pick the method it highlights.
    Array.prototype.forEach.call(root.querySelectorAll("[data-pg-tabs]"), function (box) {
      var keys = box.getAttribute("data-pg-tabs").split(",");
      var set = box.querySelector(".tabbed-set");
      if (!set) return;
      var radios = Array.prototype.filter.call(set.children, function (c) { return c.tagName === "INPUT"; });
      radios.forEach(function (radio, i) {
        radio.addEventListener("change", function () {
          if (radio.checked && charts.surface) charts.surface.setParam("focus", keys[i] === "all" ? "all" : cfg.methodLabels[keys[i]]);
        });
      });
    });

    update([]);
  }

  /* ------------------------------------------- playground 2: GRPO vs GDPO */

  function advantageRows(grid) {
    var S = sim();
    var weights = grid[0].map(function () { return 1.0; });
    var grpo = S.grpoAdvantages([grid], weights)[0];
    var gdpo = S.gdpoAdvantages([grid], weights)[0];
    var order = grid.map(function (_, i) { return i; }).sort(function (i, j) {
      return gdpo[j] - gdpo[i] || i - j;
    });
    var rank = {};
    order.forEach(function (i, k) { rank[i] = k + 1; });
    var tags = {};
    var sets = S.collapsedGroups(grid, grpo);
    sets.forEach(function (members, n) {
      members.forEach(function (i) { tags[i] = String.fromCharCode(65 + n); });
    });
    var rows = [];
    grid.forEach(function (vec, i) {
      var num = String(i + 1);
      var label = (tags[i] || " ") + " #" + (num.length < 2 ? num + " " : num) + " " + vec.join(" ");
      rows.push({ rollout: label, method: "GRPO", adv: grpo[i], rank: rank[i], tag: tags[i] || "" });
      rows.push({ rollout: label, method: "GDPO", adv: gdpo[i], rank: rank[i], tag: tags[i] || "" });
    });
    return { rows: rows, sets: sets };
  }

  function toyRows(toy, data) {
    var S = sim();
    var rows = [];
    data.sim.toyMethods.forEach(function (method) {
      var runs = [];
      for (var k = 0; k < data.toySeeds; k++) runs.push(S.trainBernoulli(method, toy, data.sim, toy.seed + k));
      data.sim.rewardNames.forEach(function (name, r) {
        var epochs = [];
        var med = [];
        var lo = [];
        var hi = [];
        for (var t = 0; t < runs[0].length; t++) {
          var col = runs.map(function (run) { return run[t][r]; }).sort(function (a, b) { return a - b; });
          var n = col.length;
          epochs.push(t);
          med.push(n % 2 ? col[(n - 1) / 2] : 0.5 * (col[n / 2 - 1] + col[n / 2]));
          lo.push(col[0]);
          hi.push(col[n - 1]);
        }
        rows.push({ method: method === "grpo" ? "GRPO" : "GDPO", reward: name, epoch: epochs, p: med, lo: lo, hi: hi });
      });
    });
    return rows;
  }

  function initGdpo(root, data, charts) {
    var grid = data.grid.map(function (r) { return r.slice(); });
    var box = root.querySelector('.pg-grid[data-pg-page="gdpo"]');
    var status = root.querySelector('[data-pg-status="gdpo"]');

    function paintGrid() {
      if (!box) return;
      Array.prototype.forEach.call(box.querySelectorAll("[data-pg-cell]"), function (button) {
        var ik = button.getAttribute("data-pg-cell").split(",").map(Number);
        var on = grid[ik[0]][ik[1]] === 1;
        button.setAttribute("aria-pressed", on ? "true" : "false");
        button.textContent = on ? "1" : "0";
      });
    }

    function updateAdvantages() {
      var out = advantageRows(grid);
      if (status) {
        var n = out.sets.reduce(function (acc, s) { return acc + s.length; }, 0);
        status.textContent = out.sets.length
          ? n + " of " + grid.length + " rollouts share their GRPO advantage with a rollout whose reward vector differs (tags " +
            out.sets.map(function (_, i) { return String.fromCharCode(65 + i); }).join(", ") + ")."
          : "No two different reward vectors share a GRPO advantage here.";
      }
      var job = charts.advantages ? charts.advantages.setData("gd_adv", out.rows) : Promise.resolve();
      return job.then(bump);
    }

    function bump() {
      root.setAttribute("data-pg-updates", String(Number(root.getAttribute("data-pg-updates") || 0) + 1));
    }

    if (box) {
      box.addEventListener("click", function (event) {
        var target = event.target.closest("button");
        if (!target || !box.contains(target)) return;
        var cell = target.getAttribute("data-pg-cell");
        var action = target.getAttribute("data-pg-grid-action");
        if (cell) {
          var ik = cell.split(",").map(Number);
          grid[ik[0]][ik[1]] = 1 - grid[ik[0]][ik[1]];
        } else if (action === "reset") {
          grid = data.grid.map(function (r) { return r.slice(); });
        } else if (action === "collide") {
          grid = data.collideGrid.map(function (r) { return r.slice(); });
        } else if (action === "random") {
          grid = grid.map(function (r) { return r.map(function () { return Math.random() < 0.5 ? 1 : 0; }); });
        } else {
          return;
        }
        paintGrid();
        updateAdvantages();
      });
    }

    var read = bindControls(root, "gdpo", function () {
      var v = read();
      var toy = Object.assign({}, data.defaults, {
        groupSize: v.toyGroup,
        weights: data.weights[v.toyWeights],
        seed: v.toySeed,
      });
      var job = charts.toy ? charts.toy.setData("gd_toy", toyRows(toy, data)) : Promise.resolve();
      job.then(bump);
    });

    paintGrid();
    updateAdvantages();
  }

  /* -------------------------------------------- playground 3: loss shapes */

  function initShapes(root, data, charts) {
    var read = bindControls(root, "shapes", function (names) {
      var v = read();
      var jobs = [];
      names.forEach(function (name) {
        if (name === "other_len" && charts.aggregation) jobs.push(charts.aggregation.setParam("other_len", v.other_len));
        else if (charts.shapes && (name === "eps" || name === "eps_low" || name === "eps_high")) jobs.push(charts.shapes.setParam(name, v[name]));
      });
      Promise.all(jobs).then(function () {
        root.setAttribute("data-pg-updates", String(Number(root.getAttribute("data-pg-updates") || 0) + 1));
      });
    });
    // Match the figures to controls the browser may have restored (back navigation).
    var v = read();
    if (charts.shapes) ["eps", "eps_low", "eps_high"].forEach(function (n) { if (n in v) charts.shapes.setParam(n, v[n]); });
    if (charts.aggregation && "other_len" in v) charts.aggregation.setParam("other_len", v.other_len);
  }

  /* ------------------------------------------------------------- the page */

  var PAGES = { objective: initObjective, gdpo: initGdpo, shapes: initShapes };

  function render(root) {
    var scripts = Array.prototype.filter.call(root.querySelectorAll('template.unipo-data[id^="pg-data-"]'), function (node) {
      return !node.hasAttribute("data-pg-ready");
    });
    if (!scripts.length) return;
    if (!sim()) {
      console.error("UNIPO playgrounds: playgrounds-sim.js is not loaded");
      return;
    }
    var anchor = scripts[0]; // belongs to this page only, even if Material reuses the root
    var pageData = window.UNIPO.data(anchor.id);
    INK_LIGHT = pageData.ink.light;
    INK_DARK = pageData.ink.dark;
    RAMPS = pageData.ramps;
    scripts.forEach(function (script) { script.setAttribute("data-pg-ready", "pending"); });
    var charts = chartsOf(root);
    Object.keys(charts).forEach(function (name) { charts[name].fit(); });
    scripts.forEach(function (script) {
      var init = PAGES[script.id.slice("pg-data-".length)];
      // the spec copies get their data first, then every chart is drawn once from them
      if (init) init(root, window.UNIPO.data(script.id), charts);
    });
    Promise.all(Object.keys(charts).map(function (name) { return charts[name].embed(); })).then(function () {
      scripts.forEach(function (script) { script.setAttribute("data-pg-ready", "true"); });
    });

    document.addEventListener(window.UNIPO.events.scheme_change, function onScheme() {
      if (!document.contains(anchor)) {
        document.removeEventListener(window.UNIPO.events.scheme_change, onScheme);
        return;
      }
      Object.keys(charts).forEach(function (name) { charts[name].embed(); });
    });

    var resizeTimer = null;
    window.addEventListener("resize", function onResize() {
      if (!document.contains(anchor)) {
        window.removeEventListener("resize", onResize);
        return;
      }
      window.clearTimeout(resizeTimer);
      resizeTimer = window.setTimeout(function () {
        Object.keys(charts).forEach(function (name) {
          if (charts[name].fit()) charts[name].embed();
        });
      }, 200);
    });
  }

  function start() {
    if (window.UNIPO && typeof window.UNIPO.register === "function") window.UNIPO.register("playgrounds", render);
    else console.error("UNIPO playgrounds: unipo.js is not loaded");
  }

  start();
})();
