/*
 * Training Explorer (browser side of unipo_build/site/views/explorer/explorer.py).
 *
 * Each <section class="unipo-explorer"> carries one <script type="application/json"> with
 *   spec: a Vega-Lite spec (Altair) whose geometry is written in Vega expressions of six
 *         params: metrics, robust, focus, mag, hover, picked;
 *   data: the downsampled series of every metric of the run (steps as deltas), rollout
 *         boundaries, rim ticks and the steps that have token data.
 * This script decodes the data into the spec's named datasets, draws the chart with
 * UNIPO.embed, and turns the reader's input into signals: chips choose the rings, the scale
 * select which rings are drawn robust (automatic: those one outlier would flatten), the sliders
 * (or a mouse drag) the fisheye. Pointer and arrow keys hover a step (read-out of every ring at
 * that step); a click or Enter dispatches the `open_step` event (UNIPO.events) {run, step} for the nearest step
 * that has token data and brings the Step Inspector into view.
 *
 * A metric keeps its colour while it is drawn (the rings' strokes and swatches read the
 * section's --unipo-explorer-slot-N, set here); the list beside the chart gives each ring's
 * range and unit. The reader's state lives here, is written into the spec's param values (so a
 * redraw after a colour-scheme toggle starts from it) and into the URL hash (UNIPO.state).
 */
(function () {
  "use strict";

  // Loaded on the pages that use it, again after each instant navigation to one: set up once.
  var loaded = (window.UNIPO_LOADED = window.UNIPO_LOADED || {});
  if (loaded.explorer) return;
  loaded.explorer = true;

  var TAU = 2 * Math.PI;

  /* ------------------------------------------------------------ pure helpers */

  function undelta(deltas) {
    var out = new Array(deltas.length);
    var acc = 0;
    for (var i = 0; i < deltas.length; i++) {
      acc += deltas[i];
      out[i] = acc;
    }
    return out;
  }

  // Integers k with a power of ten e (explorer.py encode_values): k * 10^e. Dividing by
  // 10^-e keeps decimal values such as 0.5312 exact to the last digit.
  function decodeValues(ks, e) {
    var out = new Array(ks.length);
    var scale = Math.pow(10, Math.abs(e));
    for (var i = 0; i < ks.length; i++) out[i] = e < 0 ? ks[i] / scale : ks[i] * scale;
    return out;
  }

  // Sarkar-Brown fisheye on each side of the focus: the pointer's side of the formula the chart
  // draws with (explorer_series.fisheye_expr, a Vega expression in the spec). The build computes
  // no fisheye positions; tests check these two against that expression.
  function fisheye(u, f, d) {
    function g(t) { return ((d + 1) * t) / (d * t + 1); }
    if (u >= f) return f + (1 - f) * g((u - f) / Math.max(1e-9, 1 - f));
    return f - f * g((f - u) / Math.max(1e-9, f));
  }

  function fisheyeInverse(phi, f, d) {
    function gi(y) { return y / (d + 1 - d * y); }
    if (phi >= f) return f + (1 - f) * gi((phi - f) / Math.max(1e-9, 1 - f));
    return f - f * gi((f - phi) / Math.max(1e-9, f));
  }

  // Index of the element of sorted `arr` nearest to `x` (-1 when empty).
  function nearestIndex(arr, x) {
    if (!arr.length) return -1;
    var lo = 0;
    var hi = arr.length - 1;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (arr[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0 && Math.abs(arr[lo - 1] - x) <= Math.abs(arr[lo] - x)) return lo - 1;
    return lo;
  }

  // numbers.fmt_metric's port (views-common.js): 3 significant digits, fractions as %.
  function formatValue(v, unit) {
    return window.UNIPOViews.fmtMetric(v, unit);
  }

  function unitSuffix(unit) {
    return unit && unit.charAt(0) === "%" ? unit.slice(1).trim() : unit || "";
  }

  function formatStep(s) {
    return window.UNIPOViews.fmt(Math.round(s));
  }

  /* ------------------------------------------------------------ one explorer */

  function Explorer(section) {
    // The section's own data (unipo_build.site.render.json_data); the Step Inspector placed
    // under the chart sits outside the section.
    var payload = UNIPO.data(section.querySelector("template.unipo-data").id);
    this.section = section;
    this.spec = payload.spec;
    this.data = payload.data;
    this.chart = section.querySelector(".unipo-explorer__chart"); // the slider the reader uses
    this.canvas = section.querySelector(".unipo-explorer__canvas"); // where Vega draws
    this.figure = section.querySelector(".unipo-explorer__figure");
    this.tip = section.querySelector(".unipo-explorer__tip");
    this.statusEl = section.querySelector(".unipo-explorer__status");
    var d = this.data;
    this.first = d.first;
    this.last = d.last;
    this.span = d.last - d.first + 1;
    this.tokens = undelta(d.tokens);
    this.metrics = {};
    var self = this;
    d.metrics.forEach(function (m) {
      self.metrics[m.name] = { info: m, steps: undelta(m.s), values: decodeValues(m.v, m.e), rows: null };
    });
    var bsteps = undelta(d.boundaries);
    var boundaries = bsteps.map(function (s, i) {
      var next = i + 1 < bsteps.length ? bsteps[i + 1] : d.last + 1;
      return { s: s, i: i, g: Math.max(1, next - s) };
    });
    var tsteps = undelta(d.ticks[0]);
    var ticks = tsteps.map(function (s, i) {
      return { s: s, l: d.ticks[1][i], g: d.ticks[2][i] };
    });
    this.spec.datasets.boundaries = boundaries;
    this.spec.datasets.ticks = ticks;
    this.state = {
      metrics: d.selected.slice(),
      colours: d.selected.map(function (n) { return metricColour(d, n); }), // each metric's own colour (palette.py)
      scale: "auto",
      mag: 0,
      focus: 0.5,
      hover: -1,
      picked: -1,
    };
    this.id = section.id.replace(/^unipo-/, "");
    this.spec.datasets.series = this.seriesRows();
    this.view = null;
    this.size = 0;
    this.drag = null;
    this.keyStep = null;
  }

  // The chart's data holds the rows of the chosen metrics only: Vega takes about 20 ms per
  // 1,000 rows it holds, and a run logs some 30 metrics.
  //
  // A ring is a polyline: between kept points far apart (a short run, or the magnified stretch
  // of one) straight segments would cut corners. Points interpolated every 1/720 of the circle
  // (flagged interp: 1, never circled as clipped) keep the ring round.
  Explorer.prototype.rowsOf = function (name) {
    var m = this.metrics[name];
    if (!m) return [];
    if (!m.rows) {
      var info = m.info;
      var maxGap = this.span / 720;
      var rows = [];
      var steps = m.steps;
      var values = m.values;
      for (var i = 0; i < steps.length; i++) {
        rows.push({ m: info.name, s: steps[i], v: values[i], lo: info.lo, hi: info.hi, qlo: info.qlo, qhi: info.qhi });
        var gap = i + 1 < steps.length ? steps[i + 1] - steps[i] : 0;
        if (gap > maxGap) {
          var parts = Math.ceil(gap / maxGap);
          for (var k = 1; k < parts; k++) {
            rows.push({
              m: info.name, s: steps[i] + (gap * k) / parts, v: values[i] + ((values[i + 1] - values[i]) * k) / parts,
              lo: info.lo, hi: info.hi, qlo: info.qlo, qhi: info.qhi, interp: 1,
            });
          }
        }
      }
      m.rows = rows;
    }
    return m.rows;
  };

  Explorer.prototype.seriesRows = function () {
    var self = this;
    return [].concat.apply([], this.state.metrics.map(function (name) { return self.rowsOf(name); }));
  };

  Explorer.prototype.geometry = function () {
    return this.data.geometry;
  };

  Explorer.prototype.chartSize = function () {
    var width = this.chart.clientWidth || this.figure.clientWidth || 480;
    return Math.max(220, Math.min(600, Math.floor(width)));
  };

  /** The metrics drawn on their robust range under the current scale choice. */
  Explorer.prototype.robustMetrics = function () {
    var self = this;
    return this.state.metrics.filter(function (name) {
      var m = self.metrics[name];
      return self.state.scale === "robust" || (self.state.scale === "auto" && m && m.info.flat);
    });
  };

  /** What the spec's params hold: the state, with the robust metrics worked out. */
  Explorer.prototype.signals = function () {
    var s = this.state;
    return { metrics: s.metrics.slice(), robust: this.robustMetrics(), focus: s.focus, mag: s.mag, hover: s.hover, picked: s.picked };
  };

  // Write the state into the spec (for redraws) and, if drawn, into the view.
  Explorer.prototype.push = function (names) {
    var state = this.signals();
    var self = this;
    this.applyColours();
    this.spec.params.forEach(function (p) {
      if (Object.prototype.hasOwnProperty.call(state, p.name)) {
        p.value = Array.isArray(state[p.name]) ? state[p.name].slice() : state[p.name];
      }
    });
    this.spec.width = this.spec.height = this.size;
    names = names || Object.keys(state);
    if (names.indexOf("metrics") >= 0 && names.indexOf("robust") < 0) names = names.concat(["robust"]);
    if (names.indexOf("metrics") >= 0) this.spec.datasets.series = this.seriesRows();
    var view = this.view;
    if (!view) return Promise.resolve();
    if (names.indexOf("metrics") >= 0) {
      view.change("series", window.vega.changeset().remove(window.vega.truthy).insert(this.spec.datasets.series));
    }
    names.forEach(function (name) {
      // A new array each time: Vega ignores a signal set to the value it already holds.
      var value = Array.isArray(state[name]) ? state[name].slice() : state[name];
      view.signal(name, value);
    });
    if (view.width() !== self.size) view.width(self.size).height(self.size);
    return view.runAsync();
  };

  Explorer.prototype.attachView = function () {
    var view = window.UNIPO.view(this.canvas);
    if (!view || view === this.view) return;
    this.view = view;
    this.push();
    this.chart.setAttribute("data-explorer-view", String((+this.chart.getAttribute("data-explorer-view") || 0) + 1));
  };

  function mark(name) {
    if (window.performance && performance.mark) performance.mark(name);
  }

  Explorer.prototype.start = function () {
    var self = this;
    mark("unipo-explorer:embed");
    this.size = this.chartSize();
    this.restore(window.UNIPO.state.get(this.id), true);
    this.push();
    window.UNIPO.state.watch(this.id, function (params) { self.restore(params, false); });
    // unipo.js marks the container with the scheme it drew for; a new value means a new view.
    new MutationObserver(function () {
      var state = self.canvas.getAttribute("data-unipo-rendered");
      if (state && state !== "pending" && state !== "error") self.attachView();
    }).observe(this.canvas, { attributes: true, attributeFilter: ["data-unipo-rendered"] });
    window.UNIPO.embed(this.canvas, this.spec).then(function () {
      mark("unipo-explorer:drawn");
      self.attachView();
    });
    this.bindControls();
    this.bindPointer();
    this.bindKeys();
    if (window.ResizeObserver) {
      new ResizeObserver(function () {
        var size = self.chartSize();
        if (Math.abs(size - self.size) >= 4) {
          self.size = size;
          self.push([]);
        }
      }).observe(this.figure);
    }
    document.addEventListener(window.UNIPO.events.open_step, function onOpen(event) {
      if (!document.contains(self.section)) {
        // Left behind by Material's instant navigation.
        document.removeEventListener(window.UNIPO.events.open_step, onOpen);
        return;
      }
      var detail = event.detail || {};
      if (detail.run === self.data.run && detail.step !== self.state.picked && isFinite(detail.step)) {
        self.state.picked = detail.step;
        self.push(["picked"]);
      }
    });
  };

  /* ------------------------------------------------------------ controls */

  Explorer.prototype.status = function (text) {
    this.statusEl.textContent = text;
  };

  /** A metric's colour name (--unipo-metric-<name>): the same on every ring of every page. */
  function metricColour(data, name) {
    return (data.metric_colours && data.metric_colours[name]) || "grey";
  }

  Explorer.prototype.info = function (name) {
    return this.metrics[name] ? this.metrics[name].info : { name: name, label: name, unit: "" };
  };

  /** Each ring slot takes its metric's colour (the strokes and swatches read these variables). */
  Explorer.prototype.applyColours = function () {
    var section = this.section;
    this.state.colours.forEach(function (colour, slot) {
      section.style.setProperty("--unipo-explorer-slot-" + slot, "var(--unipo-metric-" + colour + ")");
    });
  };

  Explorer.prototype.updateChips = function () {
    var state = this.state;
    this.section.querySelectorAll(".unipo-explorer__chip").forEach(function (chip) {
      var ring = state.metrics.indexOf(chip.getAttribute("data-metric"));
      chip.setAttribute("aria-pressed", ring >= 0 ? "true" : "false");
      if (ring >= 0) {
        chip.setAttribute("data-ring", String(ring));
        chip.setAttribute("data-colour", String(state.colours[ring]));
      } else {
        chip.removeAttribute("data-ring");
        chip.removeAttribute("data-colour");
      }
    });
    this.renderRings();
  };

  /** As explorer.py ring_range_text: the range a ring spans, and a note when it is robust. */
  Explorer.prototype.ringText = function (name, robust) {
    var m = this.metrics[name].info;
    var unit = m.unit || "";
    var lo = robust ? m.qlo : m.lo, hi = robust ? m.qhi : m.hi;
    var span = formatValue(lo, unit) + " to " + formatValue(hi, unit) + (unit ? " " + unitSuffix(unit) : "");
    var note = robust ? "robust scale: the whole run spans " + formatValue(m.lo, unit) + " to " + formatValue(m.hi, unit) +
      "; values beyond the ring are drawn at its edge and circled" : "";
    return [span, note];
  };

  Explorer.prototype.renderRings = function () {
    var self = this;
    var list = this.section.querySelector(".unipo-explorer__ring-list");
    if (!list) return;
    var robust = this.robustMetrics();
    list.replaceChildren.apply(list, this.state.metrics.map(function (name, ring) {
      var colour = String(self.state.colours[ring]);
      var text = self.ringText(name, robust.indexOf(name) >= 0);
      var li = document.createElement("li");
      li.className = "unipo-explorer__ring";
      li.setAttribute("data-metric", name);
      li.setAttribute("data-colour", colour);
      var sw = document.createElement("span");
      sw.className = "unipo-explorer__swatch";
      sw.setAttribute("data-colour", colour);
      sw.setAttribute("aria-hidden", "true");
      var label = document.createElement("span");
      label.className = "unipo-explorer__ring-name";
      label.textContent = self.info(name).label;
      var range = document.createElement("span");
      range.className = "unipo-explorer__ring-range";
      range.textContent = text[0];
      var note = document.createElement("span");
      note.className = "unipo-explorer__ring-note";
      note.textContent = text[1];
      li.append(sw, label, " ", range, note);
      return li;
    }));
  };

  /** A short message beside the chip the reader clicked (and in the status under the chart). */
  Explorer.prototype.chipNote = function (chip, text) {
    var old = this.section.querySelector(".unipo-explorer__chip-note");
    if (old) old.remove();
    clearTimeout(this.noteTimer);
    if (!chip || !text) return;
    var note = document.createElement("span");
    note.className = "unipo-explorer__chip-note";
    note.setAttribute("role", "status");
    note.textContent = text;
    chip.insertAdjacentElement("afterend", note);
    this.noteTimer = setTimeout(function () { note.remove(); }, 6000);
  };

  Explorer.prototype.toggleMetric = function (name, chip) {
    var state = this.state;
    var at = state.metrics.indexOf(name);
    var label = this.info(name).label;
    if (at >= 0) {
      if (state.metrics.length === 1) {
        var keep = "At least one ring stays: choose another metric first, then remove " + label + ".";
        this.chipNote(chip, keep);
        this.status(keep);
        return;
      }
      state.metrics.splice(at, 1);
      state.colours.splice(at, 1);
      this.status(label + " removed. Rings from the outside in: " + this.ringNames() + ".");
    } else {
      if (state.metrics.length >= this.data.max_rings) {
        var full = "At most " + this.data.max_rings + " rings: remove one before adding " + label + ".";
        this.chipNote(chip, full);
        this.status(full);
        return;
      }
      // A metric has one colour on every ring of every page (site/palette.py METRIC_COLOURS).
      state.metrics.push(name);
      state.colours.push(metricColour(this.data, name));
      this.status(label + " added as the innermost ring. Rings from the outside in: " + this.ringNames() + ".");
    }
    this.chipNote(null);
    this.updateChips();
    this.push(["metrics"]);
    this.save(false);
    if (this.state.hover >= this.first) this.showTip(this.state.hover, this.tipAnchor);
  };

  Explorer.prototype.ringNames = function () {
    var self = this;
    return this.state.metrics.map(function (n) { return self.info(n).label; }).join(", ");
  };

  /* ---- the state in the URL ---- */

  Explorer.prototype.params = function () {
    var s = this.state;
    var p = {};
    if (s.metrics.join("+") !== this.data.selected.join("+")) p.metrics = s.metrics.join("+");
    if (s.scale !== "auto") p.scale = s.scale;
    if (s.mag > 0) {
      p.magnify = s.mag + 1;
      p.around = this.first + Math.round(s.focus * this.span);
    }
    if (s.picked >= this.first) p.step = s.picked;
    return p;
  };

  Explorer.prototype.save = function (push) {
    window.UNIPO.state.set(this.id, this.params(), push);
  };

  /** Take the state from URL params (null: the defaults); ``initial``: before the first draw. */
  Explorer.prototype.restore = function (params, initial) {
    var self = this;
    params = params || {};
    var s = this.state;
    var metrics = params.metrics ? params.metrics.split("+").filter(function (n) { return self.metrics[n]; }) : [];
    metrics = metrics.slice(0, this.data.max_rings);
    if (!metrics.length) metrics = this.data.selected.slice();
    if (metrics.join("+") !== s.metrics.join("+")) {
      s.metrics = metrics;
      s.colours = metrics.map(function (n) { return metricColour(self.data, n); });
    }
    s.scale = ["full", "robust"].indexOf(params.scale) >= 0 ? params.scale : "auto";
    if (this.scaleSelect) this.scaleSelect.value = s.scale;
    var factor = Number(params.magnify);
    var index = this.data.magnifications.indexOf(factor);
    s.mag = index > 0 ? factor - 1 : 0;
    if (this.magInput) {
      this.magInput.value = String(Math.max(0, index));
      this.magOut.textContent = (index > 0 ? factor : 1) + "\u00d7";
      this.focusInput.disabled = s.mag === 0;
    }
    // From the other run set's page (the set switch, unipo.js crossSetHash): its steps are points of
    // its own run, placed at the same fraction of training here.
    var of = Number(params.of);
    var crossing = params.of !== undefined && isFinite(of) && of > 0;
    var last = this.last;
    var first = this.first;
    function mapped(value) {
      var x = Number(value);
      if (!crossing || value === undefined || value === "" || !isFinite(x)) return value;
      return String(Math.min(last, Math.max(first, Math.round(Math.min(1, Math.max(0, x / of)) * last))));
    }
    var asked = params.step;
    params = Object.assign({}, params, { step: mapped(params.step), around: mapped(params.around) });
    var around = Number(params.around);
    if (s.mag > 0 && isFinite(around)) this.setFocusStep(around, true);
    var step = Number(params.step);
    var bad = [];
    if (params.metrics) {
      params.metrics.split("+").forEach(function (n) { if (!self.metrics[n]) bad.push("metric \u201c" + n + "\u201d"); });
    }
    var stepOk = params.step !== undefined && params.step !== "" && isFinite(step) && step >= this.first && step <= this.last;
    if (params.step !== undefined && !stepOk) bad.push("step " + params.step);
    s.picked = stepOk ? step : -1;
    // A link that names what this run does not have: the default, and one line saying so.
    var lines = [];
    if (bad.length) lines.push("The link names " + bad.join(", ") + ", which this run does not have; the chart shows its default there.");
    if (crossing && asked !== undefined && stepOk) {
      lines.push("From the " + window.UNIPO.state.setLabel(params.from || "other set") + ": step " + asked + " of " + of +
        " there is " + Math.round(100 * Math.min(1, Math.max(0, Number(asked) / of))) + "% of the way through training; here that is step " +
        step + " of " + last + ".");
    }
    window.UNIPO.state.note(this.id, lines.length ? lines.join(" ") : null, this.statusEl);
    this.section.toggleAttribute("data-mapped", crossing);
    this.updateChips();
    if (crossing) this.save(false); // written back as this set's own steps (no of=, from=)
    if (!initial) {
      this.push();
      if (s.picked >= this.first) this.dispatchOpen(s.picked, false);
    } else {
      this.applyColours();
      if (s.picked >= this.first) {
        // The inspector under the chart opens the step the link names once it is set up.
        var picked = s.picked;
        setTimeout(function () { self.dispatchOpen(picked, false); }, 0);
      }
    }
  };

  Explorer.prototype.bindControls = function () {
    var self = this;
    this.section.querySelectorAll(".unipo-explorer__chip").forEach(function (chip) {
      chip.addEventListener("click", function () {
        self.toggleMetric(chip.getAttribute("data-metric"), chip);
      });
    });
    var more = this.section.querySelector(".unipo-explorer__more-metrics");
    var chips = this.section.querySelector(".unipo-explorer__chips");
    if (more) {
      more.addEventListener("click", function () {
        var open = more.getAttribute("aria-expanded") !== "true";
        more.setAttribute("aria-expanded", open ? "true" : "false");
        chips.classList.toggle("is-open", open);
        more.textContent = open ? "Show only the chosen rings" : "Choose rings: all " + self.data.metrics.length + " metrics";
      });
    }
    var scale = (this.scaleSelect = this.section.querySelector(".unipo-explorer__scale"));
    scale.addEventListener("change", function () {
      self.state.scale = scale.value;
      self.renderRings();
      self.push(["robust"]);
      self.save(false);
    });
    var mag = (this.magInput = this.section.querySelector(".unipo-explorer__mag"));
    var magOut = (this.magOut = this.section.querySelector(".unipo-explorer__mag-out"));
    var focus = this.section.querySelector(".unipo-explorer__focus");
    var focusOut = this.section.querySelector(".unipo-explorer__focus-out");
    this.focusInput = focus;
    this.focusOut = focusOut;
    function onMag() {
      var factor = self.data.magnifications[+mag.value] || 1;
      self.state.mag = factor - 1;
      magOut.textContent = factor + "\u00d7";
      focus.disabled = factor === 1;
      self.push(["mag"]);
      self.save(false);
    }
    function onFocus() {
      self.setFocusStep(+focus.value);
      self.save(false);
    }
    mag.addEventListener("input", onMag);
    focus.addEventListener("input", onFocus);
    // The browser may restore form values on back/forward navigation: the state decides.
    scale.value = this.state.scale;
    var index = this.data.magnifications.indexOf(this.state.mag + 1);
    mag.value = String(Math.max(0, index));
    magOut.textContent = (this.state.mag + 1) + "\u00d7";
    focus.disabled = this.state.mag === 0;
    self.setFocusStep(this.first + Math.round(this.state.focus * this.span), true);
  };

  Explorer.prototype.setFocusStep = function (step, quiet) {
    step = Math.max(this.first, Math.min(this.last, Math.round(step)));
    this.state.focus = (step - this.first) / this.span;
    if (this.focusInput && +this.focusInput.value !== step) this.focusInput.value = String(step);
    if (this.focusOut) this.focusOut.textContent = formatStep(step);
    if (!quiet) this.push(["focus"]);
  };

  /* ------------------------------------------------------------ pointer */

  // Polar position of a client point: {r (in spec units), phi (angle fraction from the top, clockwise)}.
  Explorer.prototype.polar = function (clientX, clientY) {
    var svg = this.chart.querySelector("svg");
    if (!svg) return null;
    var rect = svg.getBoundingClientRect();
    var unit = rect.width / (2 * this.geometry().domain);
    var dx = (clientX - (rect.left + rect.width / 2)) / unit;
    var dy = (rect.top + rect.height / 2 - clientY) / unit;
    var phi = Math.atan2(dx, dy) / TAU;
    if (phi < 0) phi += 1;
    return { r: Math.sqrt(dx * dx + dy * dy), phi: phi };
  };

  Explorer.prototype.stepAtPhi = function (phi) {
    var u = fisheyeInverse(phi, this.state.focus, this.state.mag);
    var s = this.first + Math.round(u * this.span);
    return Math.max(this.first, Math.min(this.last, s));
  };

  // Client coordinates of a step on the outer ring (for the tooltip of keyboard hover).
  Explorer.prototype.clientAt = function (step) {
    var svg = this.chart.querySelector("svg");
    var rect = svg.getBoundingClientRect();
    var g = this.geometry();
    var unit = rect.width / (2 * g.domain);
    var theta = TAU * fisheye((step - this.first) / this.span, this.state.focus, this.state.mag);
    return {
      x: rect.left + rect.width / 2 + g.r_out * unit * Math.sin(theta),
      y: rect.top + rect.height / 2 - g.r_out * unit * Math.cos(theta),
    };
  };

  Explorer.prototype.inRings = function (p) {
    var g = this.geometry();
    return p && p.r >= g.r_in - 0.1 && p.r <= g.domain;
  };

  Explorer.prototype.setHover = function (step, anchor) {
    if (step === this.state.hover && anchor === this.tipAnchor) return;
    this.state.hover = step;
    this.tipAnchor = anchor;
    this.push(["hover"]);
    if (step >= this.first) this.showTip(step, anchor);
    else this.hideTip();
    this.chart.setAttribute("aria-valuenow", String(Math.max(step, this.first)));
    if (step >= this.first) this.chart.setAttribute("aria-valuetext", this.describe(step));
  };

  Explorer.prototype.valueAt = function (name, step) {
    var m = this.metrics[name];
    if (!m) return null;
    var i = nearestIndex(m.steps, step);
    if (i < 0) return null;
    if (m.steps[i] === step) return { value: m.values[i], exact: true, at: step };
    // Between two kept points of equal value, a metric that was not downsampled (info.exact)
    // held that value at every step: the points in between were dropped as repeats.
    var j = m.steps[i] < step ? i + 1 : i - 1;
    if (m.info.exact && j >= 0 && j < m.steps.length && m.values[j] === m.values[i]) {
      return { value: m.values[i], exact: true, at: step };
    }
    // Beyond twice the spacing of the kept points, the metric was not logged near this step.
    var spacing = this.span / Math.max(1, m.steps.length);
    if (Math.abs(m.steps[i] - step) > Math.max(1, 2 * spacing)) return null;
    return { value: m.values[i], exact: false, at: m.steps[i] };
  };

  Explorer.prototype.nearestLogged = function (step) {
    var i = nearestIndex(this.tokens, step);
    return i < 0 ? null : this.tokens[i];
  };

  Explorer.prototype.describe = function (step) {
    var self = this;
    var parts = ["step " + formatStep(step)];
    this.state.metrics.forEach(function (name) {
      var v = self.valueAt(name, step);
      var info = self.info(name);
      parts.push(info.label + " " + (v ? (v.exact ? "" : "about ") + formatValue(v.value, info.unit) : "not logged"));
    });
    return parts.join(", ");
  };

  Explorer.prototype.showTip = function (step, anchor) {
    var tip = this.tip;
    var self = this;
    tip.textContent = "";
    var head = document.createElement("div");
    head.className = "unipo-explorer__tip-head";
    head.textContent = "Step " + formatStep(step);
    tip.appendChild(head);
    var table = document.createElement("table");
    table.className = "unipo-explorer__tip-table";
    this.state.metrics.forEach(function (name, ring) {
      var v = self.valueAt(name, step);
      var tr = document.createElement("tr");
      var sw = document.createElement("td");
      var dot = document.createElement("span");
      dot.className = "unipo-explorer__swatch";
      dot.setAttribute("data-colour", String(self.state.colours[ring]));
      sw.appendChild(dot);
      var info = self.info(name);
      var label = document.createElement("td");
      label.textContent = info.label;
      var value = document.createElement("td");
      value.className = "unipo-explorer__tip-value";
      if (!v) value.textContent = "–";
      else if (v.exact) value.textContent = formatValue(v.value, info.unit);
      else {
        value.textContent = "≈ " + formatValue(v.value, info.unit);
        value.title = "Nearest kept point: step " + formatStep(v.at);
      }
      tr.appendChild(sw);
      tr.appendChild(label);
      tr.appendChild(value);
      table.appendChild(tr);
    });
    tip.appendChild(table);
    var foot = document.createElement("div");
    foot.className = "unipo-explorer__tip-foot";
    var logged = this.nearestLogged(step);
    foot.textContent =
      logged === null
        ? "No step of this run has token data."
        : logged === step
          ? "Click to open this step."
          : "Click to open the nearest logged step, " + formatStep(logged) + ".";
    tip.appendChild(foot);
    tip.hidden = false;
    if (!anchor) return;
    var box = this.figure.getBoundingClientRect();
    var x = anchor.x - box.left + 14;
    var y = anchor.y - box.top + 14;
    var w = tip.offsetWidth;
    var h = tip.offsetHeight;
    if (x + w > box.width) x = Math.max(0, anchor.x - box.left - w - 14);
    if (y + h > box.height) y = Math.max(0, anchor.y - box.top - h - 14);
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  };

  Explorer.prototype.hideTip = function () {
    this.tip.hidden = true;
  };

  /** The Step Inspector this explorer opens steps in: its own, else one of the same run. */
  Explorer.prototype.inspector = function () {
    var own = this.section.getAttribute("data-inspector");
    var run = this.data.run;
    return Array.prototype.filter.call(document.querySelectorAll(".unipo-inspector"), function (el) {
      return own ? el.id === own : el.getAttribute("data-run") === run;
    })[0] || null;
  };

  Explorer.prototype.dispatchOpen = function (step, reveal, text) {
    // Addressed to this explorer's own inspector: the chapter's teaching-moment inspectors of
    // the same run stay where the prose put them.
    var own = this.section.getAttribute("data-inspector");
    document.dispatchEvent(new CustomEvent(window.UNIPO.events.open_step, {
      detail: { run: this.data.run, step: step, inspector: own || undefined, restore: !reveal,
                status: reveal ? { text: text || "Step " + formatStep(step) + ", opened from the Training Explorer.", back: this.section.id } : undefined }
    }));
  };

  Explorer.prototype.openStep = function (step) {
    var target = this.nearestLogged(step);
    if (target === null) {
      this.status("Step " + formatStep(step) + ": no step of this run has token data, so nothing can be opened.");
      return;
    }
    this.state.picked = target;
    this.push(["picked"]);
    var inspector = this.inspector();
    var where = inspector ? " in the Step Inspector below" : "";
    var said = target === step
      ? "Opened step " + formatStep(target) + where + "."
      : "Step " + formatStep(step) + " has no token data: opened the nearest logged step, " + formatStep(target) + where + ".";
    this.status(said);
    this.section.setAttribute("data-opened-step", String(target));
    this.save(true);
    // The inspector says the same on its status line, which is where the reader looks next.
    this.dispatchOpen(target, true, target === step ? null
      : "Step " + formatStep(target) + ", opened from the Training Explorer. Step " + formatStep(step) + " has no token data; this is the nearest logged step.");
    // Show the answer: bring the inspector's step into view unless its top already is, and take
    // the keyboard focus with the scroll (to the inspector's status line, which reads the news).
    if (inspector) {
      var rect = inspector.getBoundingClientRect();
      if (rect.top < 0 || rect.top > window.innerHeight * 0.6) inspector.scrollIntoView({ block: "start", behavior: "smooth" });
      var line = inspector.querySelector(".unipo-inspector-status") || inspector;
      if (!line.hasAttribute("tabindex")) line.setAttribute("tabindex", "-1");
      line.focus({ preventScroll: true });
    }
  };

  Explorer.prototype.bindPointer = function () {
    var self = this;
    var chart = this.chart;
    chart.addEventListener("pointermove", function (event) {
      var p = self.polar(event.clientX, event.clientY);
      if (self.drag && self.drag.id === event.pointerId) {
        var moved = Math.hypot(event.clientX - self.drag.x, event.clientY - self.drag.y);
        if (moved >= 5 && self.state.mag > 0 && event.pointerType !== "touch") self.drag.moving = true;
        if (self.drag.moving && p) {
          // Dragging moves the lens: the focus lands under the pointer (the fisheye fixes it).
          self.setFocusStep(self.first + p.phi * self.span);
          self.setHover(self.stepAtPhi(p.phi), { x: event.clientX, y: event.clientY });
          return;
        }
      }
      if (self.inRings(p)) self.setHover(self.stepAtPhi(p.phi), { x: event.clientX, y: event.clientY });
      else self.setHover(-1, null);
    });
    chart.addEventListener("pointerleave", function () {
      if (!self.drag) self.setHover(-1, null);
    });
    chart.addEventListener("pointerdown", function (event) {
      if (event.button !== 0) return;
      self.drag = { id: event.pointerId, x: event.clientX, y: event.clientY, moving: false };
      if (self.state.mag > 0 && event.pointerType !== "touch" && chart.setPointerCapture) {
        chart.setPointerCapture(event.pointerId);
      }
    });
    function end(event) {
      var drag = self.drag;
      self.drag = null;
      if (!drag || drag.id !== event.pointerId || drag.moving || event.type === "pointercancel") return;
      var p = self.polar(event.clientX, event.clientY);
      if (!self.inRings(p)) return;
      var step = self.stepAtPhi(p.phi);
      self.setHover(step, { x: event.clientX, y: event.clientY });
      self.openStep(step);
    }
    chart.addEventListener("pointerup", end);
    chart.addEventListener("pointercancel", end);
  };

  /* ------------------------------------------------------------ keyboard */

  Explorer.prototype.bindKeys = function () {
    var self = this;
    var chart = this.chart;
    chart.setAttribute("aria-valuemin", String(this.first));
    chart.setAttribute("aria-valuemax", String(this.last));
    chart.setAttribute("aria-valuenow", String(this.first));
    chart.addEventListener("keydown", function (event) {
      var current = self.state.hover >= self.first ? self.state.hover : self.state.picked >= self.first ? self.state.picked : self.first;
      var big = Math.max(1, Math.round(self.span / 24));
      var next = null;
      switch (event.key) {
        case "ArrowRight":
        case "ArrowUp":
          next = current + (event.shiftKey ? big : 1);
          break;
        case "ArrowLeft":
        case "ArrowDown":
          next = current - (event.shiftKey ? big : 1);
          break;
        case "PageUp":
          next = current + big;
          break;
        case "PageDown":
          next = current - big;
          break;
        case "Home":
          next = self.first;
          break;
        case "End":
          next = self.last;
          break;
        case "Enter":
        case " ":
          event.preventDefault();
          self.openStep(current);
          return;
        case "Escape":
          self.setHover(-1, null);
          return;
        default:
          return;
      }
      event.preventDefault();
      next = Math.max(self.first, Math.min(self.last, next));
      self.setHover(next, null);
      self.showTip(next, self.clientAt(next));
    });
    chart.addEventListener("blur", function () {
      self.setHover(-1, null);
    });
  };

  /* ------------------------------------------------------------ registry */

  function initAll(root) {
    if (!window.UNIPO) return;
    (root || document).querySelectorAll(".unipo-explorer").forEach(function (section) {
      if (section.hasAttribute("data-explorer-ready")) return;
      section.setAttribute("data-explorer-ready", "");
      try {
        mark("unipo-explorer:start");
        var explorer = new Explorer(section);
        section.unipoExplorer = explorer;
        explorer.start();
      } catch (err) {
        section.setAttribute("data-explorer-ready", "error");
        console.error("UNIPO: Training Explorer failed:", err);
      }
    });
  }

  // Exposed for tests and for other views (e.g. a moment link that sets the focus).
  window.UNIPOExplorer = { fisheye: fisheye, fisheyeInverse: fisheyeInverse, formatValue: formatValue };

  if (window.UNIPO && typeof window.UNIPO.register === "function") {
    window.UNIPO.register("training-explorer", initAll);
    // A guided path's links (unipo.js UNIPO.pathView): "explorer" opens the run's explorer, and a step
    // opened there opens in its inspector too (the inspector's own state in the URL would otherwise
    // win); "explorer-inspector" opens that inspector.
    var ownInspector = function (link, byRun) {
      var explorer = byRun(".unipo-explorer")[0];
      var own = explorer && explorer.getAttribute("data-inspector");
      return own ? document.getElementById(own) : null;
    };
    window.UNIPO.pathView("explorer", function (link, byRun) { return byRun(".unipo-explorer")[0]; },
      function (view, params) {
        var own = view.getAttribute("data-inspector");
        return own && params.step !== undefined ? [{ id: own.replace(/^unipo-/, ""), params: { step: params.step } }] : [];
      });
    window.UNIPO.pathView("explorer-inspector", ownInspector);
  } else {
    console.error("UNIPO: assets/unipo.js must load before assets/explorer.js");
  }
})();
