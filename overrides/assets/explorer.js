/*
 * Training Explorer (browser side of unipo_build/views/explorer.py).
 *
 * Each <section class="unipo-explorer"> carries one <script type="application/json"> with
 *   spec: a Vega-Lite spec (Altair) whose geometry is written in Vega expressions of six
 *         params: metrics, robust, focus, mag, hover, picked;
 *   data: the downsampled series of every metric of the run (steps as deltas), rollout
 *         boundaries, rim ticks and the steps that have token data.
 * This script decodes the data into the spec's named datasets, draws the chart with
 * UNIPO.embed, and turns the reader's input into signals: chips choose the rings, the
 * checkbox the robust scale, the sliders (or a mouse drag) the fisheye. Pointer and arrow keys
 * hover a step (read-out of every ring at that step); a click or Enter dispatches
 * `unipo:open-step` {run, step} for the nearest step that has token data.
 *
 * The reader's state lives here and is also written into the spec's param values, so when
 * unipo.js draws the chart again (colour scheme toggled) the new view starts from it.
 */
(function () {
  "use strict";

  // Loaded on the pages that use it, again after each instant navigation to one: set up once.
  var loaded = (window.UNIPO_LOADED = window.UNIPO_LOADED || {});
  if (loaded.explorer) return;
  loaded.explorer = true;

  var EVENT_OPEN_STEP = "unipo:open-step";
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

  // Sarkar-Brown fisheye on each side of the focus (same as explorer.py fisheye()).
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

  // Same rules as explorer.py format_value().
  function formatValue(v) {
    if (v === null || v === undefined || !isFinite(v)) return "–";
    var a = Math.abs(v);
    if (a === 0) return "0";
    if (a >= 1e5 || a < 1e-3) return v.toExponential(2);
    if (a >= 100) return Math.round(v).toLocaleString("en-US");
    return String(Number(v.toPrecision(3)));
  }

  function formatStep(s) {
    return Math.round(s).toLocaleString("en-US");
  }

  /* ------------------------------------------------------------ one explorer */

  function Explorer(section) {
    // The section's own data (unipo_build.render.json_data); the Step Inspector placed
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
      robust: false,
      mag: 0,
      focus: 0.5,
      hover: -1,
      picked: -1,
    };
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

  // Write the state into the spec (for redraws) and, if drawn, into the view.
  Explorer.prototype.push = function (names) {
    var state = this.state;
    var self = this;
    this.spec.params.forEach(function (p) {
      if (Object.prototype.hasOwnProperty.call(state, p.name)) {
        p.value = Array.isArray(state[p.name]) ? state[p.name].slice() : state[p.name];
      }
    });
    this.spec.width = this.spec.height = this.size;
    names = names || Object.keys(state);
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
    this.push();
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
    document.addEventListener(EVENT_OPEN_STEP, function onOpen(event) {
      if (!document.contains(self.section)) {
        // Left behind by Material's instant navigation.
        document.removeEventListener(EVENT_OPEN_STEP, onOpen);
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

  Explorer.prototype.updateChips = function () {
    var selected = this.state.metrics;
    this.section.querySelectorAll(".unipo-explorer__chip").forEach(function (chip) {
      var ring = selected.indexOf(chip.getAttribute("data-metric"));
      chip.setAttribute("aria-pressed", ring >= 0 ? "true" : "false");
      if (ring >= 0) chip.setAttribute("data-ring", String(ring));
      else chip.removeAttribute("data-ring");
    });
  };

  Explorer.prototype.toggleMetric = function (name) {
    var selected = this.state.metrics;
    var at = selected.indexOf(name);
    var label = this.metrics[name] ? this.metrics[name].info.label : name;
    if (at >= 0) {
      if (selected.length === 1) {
        this.status("At least one ring stays: choose another metric first, then remove " + label + ".");
        return;
      }
      selected.splice(at, 1);
      this.status(label + " removed. Rings from the outside in: " + this.ringNames() + ".");
    } else {
      if (selected.length >= this.data.max_rings) {
        this.status("At most " + this.data.max_rings + " rings: remove one before adding " + label + ".");
        return;
      }
      selected.push(name);
      this.status(label + " added as the innermost ring. Rings from the outside in: " + this.ringNames() + ".");
    }
    this.updateChips();
    this.push(["metrics"]);
    if (this.state.hover >= this.first) this.showTip(this.state.hover, this.tipAnchor);
  };

  Explorer.prototype.ringNames = function () {
    var self = this;
    return this.state.metrics
      .map(function (n) { return self.metrics[n] ? self.metrics[n].info.label : n; })
      .join(", ");
  };

  Explorer.prototype.bindControls = function () {
    var self = this;
    this.section.querySelectorAll(".unipo-explorer__chip").forEach(function (chip) {
      chip.addEventListener("click", function () {
        self.toggleMetric(chip.getAttribute("data-metric"));
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
    var robust = this.section.querySelector(".unipo-explorer__robust");
    robust.addEventListener("change", function () {
      self.state.robust = robust.checked;
      self.push(["robust"]);
    });
    var mag = this.section.querySelector(".unipo-explorer__mag");
    var magOut = this.section.querySelector(".unipo-explorer__mag-out");
    var focus = this.section.querySelector(".unipo-explorer__focus");
    var focusOut = this.section.querySelector(".unipo-explorer__focus-out");
    this.focusInput = focus;
    this.focusOut = focusOut;
    function onMag() {
      var factor = self.data.magnifications[+mag.value] || 1;
      self.state.mag = factor - 1;
      magOut.textContent = factor + "×";
      focus.disabled = factor === 1;
      self.push(["mag"]);
    }
    function onFocus() {
      self.setFocusStep(+focus.value);
    }
    mag.addEventListener("input", onMag);
    focus.addEventListener("input", onFocus);
    // The browser may restore form values on back/forward navigation.
    robust.checked = false;
    mag.value = "0";
    self.setFocusStep(+focus.value, true);
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
      var label = self.metrics[name] ? self.metrics[name].info.label : name;
      parts.push(label + " " + (v ? (v.exact ? "" : "about ") + formatValue(v.value) : "not logged"));
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
      dot.setAttribute("data-ring", String(ring));
      sw.appendChild(dot);
      var label = document.createElement("td");
      label.textContent = self.metrics[name] ? self.metrics[name].info.label : name;
      var value = document.createElement("td");
      value.className = "unipo-explorer__tip-value";
      if (!v) value.textContent = "–";
      else if (v.exact) value.textContent = formatValue(v.value);
      else {
        value.textContent = "≈ " + formatValue(v.value);
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

  Explorer.prototype.openStep = function (step) {
    var target = this.nearestLogged(step);
    if (target === null) {
      this.status("Step " + formatStep(step) + ": no step of this run has token data, so nothing can be opened.");
      return;
    }
    this.state.picked = target;
    this.push(["picked"]);
    var run = this.data.run;
    var own = this.section.getAttribute("data-inspector");
    var inspector = Array.prototype.some.call(document.querySelectorAll(".unipo-inspector"), function (el) {
      return own ? el.id === own : el.getAttribute("data-run") === run;
    });
    var where = inspector ? " in the Step Inspector below" : "";
    this.status(
      target === step
        ? "Opened step " + formatStep(target) + where + "."
        : "Step " + formatStep(step) + " has no token data: opened the nearest logged step, " +
            formatStep(target) + where + "."
    );
    this.section.setAttribute("data-opened-step", String(target));
    // Addressed to this explorer's own inspector: the chapter's teaching-moment inspectors of
    // the same run stay where the prose put them.
    var own = this.section.getAttribute("data-inspector");
    document.dispatchEvent(new CustomEvent(EVENT_OPEN_STEP, {
      detail: { run: this.data.run, step: target, inspector: own || undefined }
    }));
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
  } else {
    console.error("UNIPO: assets/unipo.js must load before assets/explorer.js");
  }
})();
