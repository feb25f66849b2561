/*
 * UNIPO views, part 2: the Step Inspector (after explainer.js, which defines UNIPOViews).
 *
 * Each <div class="unipo-inspector"> written by unipo_build/views/inspector.py carries its run,
 * algorithm and site root as data attributes and, in <template id="<its id>-data">, the steps
 * that have token files, the run's teaching moments and its resolved algorithm. The server has
 * already rendered one step; this script fetches that step's token file
 * (<site root>assets/runs/<run>/steps/step_NNNNNN.json) and renders it interactively:
 *
 * - tokens coloured on one diverging scale (PiYG: pink negative, white zero, green positive,
 *   symmetric around the quantity's centre, domain = the step's largest |value - centre|) by a
 *   quantity the reader picks, with a legend that has numbers;
 * - raw tokens (boundaries and whitespace shown) or plain text;
 * - previous / next / go to step, teaching moments; the `unipo:open-step` event {run, step}
 *   opens a step from elsewhere (the Training Explorer);
 * - token selection by click, or keyboard (arrow keys move within a response, Enter or Space
 *   selects), dispatching `unipo:token` {run, algorithm, step, group, response, token}.
 *
 * Log text only ever reaches the page through textContent.
 */
(function () {
  "use strict";

  var V = window.UNIPOViews;
  if (!V || !V.el) {
    console.error("UNIPO: views-common.js must load before inspector.js");
    return;
  }
  if (V.__inspector) return; // loaded again by an instant navigation: already set up
  V.__inspector = true;
  var el = V.el;
  var fmt = V.fmt;
  var fmtSigned = V.fmtSigned;

  /* ------------------------------------------------------------ colour scale */

  // The diverging scale's anchors (the palette's PiYG, views/palette.py DIVERGING): each
  // inspector's data carries them ("scale"); set from the first inspector on the page.
  var PIYG = [];
  var PIYG_RGB = [];

  function setScale(anchors) {
    if (!anchors || !anchors.length || PIYG.length) return;
    PIYG = anchors.slice();
    PIYG_RGB = PIYG.map(function (c) {
      return [parseInt(c.slice(1, 3), 16), parseInt(c.slice(3, 5), 16), parseInt(c.slice(5, 7), 16)];
    });
  }

  function hex2(n) {
    return (n < 16 ? "0" : "") + n.toString(16);
  }

  /** As inspector.py diverging_colour: piecewise-linear RGB between the anchors. */
  function colour(value, domain, centre) {
    var t = 0;
    if (domain > 0 && Number.isFinite(domain)) t = Math.max(-1, Math.min(1, (value - centre) / domain));
    var position = (t + 1) / 2 * (PIYG.length - 1);
    var lo = Math.min(Math.floor(position), PIYG.length - 2);
    var frac = position - lo;
    var a = PIYG_RGB[lo], b = PIYG_RGB[lo + 1];
    return "#" + [0, 1, 2].map(function (i) { return hex2(Math.floor(a[i] + (b[i] - a[i]) * frac + 0.5)); }).join("");
  }

  function luminance(hex) {
    var rgb = [1, 3, 5].map(function (i) {
      var s = parseInt(hex.slice(i, i + 2), 16) / 255;
      return s <= 0.04045 ? s / 12.92 : Math.pow((s + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2];
  }

  /** Black or white, whichever contrasts more with the background (as inspector.py text_colour). */
  function textColour(bg) {
    var lum = luminance(bg);
    return (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) ? "#000000" : "#ffffff";
  }

  V.colour = colour;
  V.textColour = textColour;

  /* ------------------------------------------------------------ helpers */

  function values(tokens, key) {
    return key === "return" ? tokens["return"] : tokens[key];
  }

  function stepDomain(detail, key, centre) {
    var largest = 0;
    detail.prompts.forEach(function (g) {
      g.responses.forEach(function (r) {
        var tk = r.tokens;
        if (!tk) return;
        var vs = values(tk, key);
        if (!vs) return;
        for (var t = 0; t < vs.length; t++) if (tk.mask[t]) largest = Math.max(largest, Math.abs(vs[t] - centre));
      });
    });
    return largest;
  }

  function available(detail, key) {
    return detail.prompts.some(function (g) {
      return g.responses.some(function (r) { return r.tokens && values(r.tokens, key); });
    });
  }

  function visible(text, mode) {
    if (mode !== "tokens") return text;
    return text.replace(/ /g, "\u00b7").replace(/\n/g, "\u21b5\n").replace(/\t/g, "\u2192") || "\u2205";
  }

  // Text with no visible character (empty, zero-width, controls, line breaks): such a token gets
  // a box of its own width (views.css), so it can still be clicked.
  var BLANK = /^[\s\p{Cc}\p{Cf}\p{Zl}\p{Zp}]*$/u;

  function showToken(node, text, mode) {
    var shown = visible(text, mode);
    node.textContent = shown;
    node.classList.toggle("unipo-tok--blank", BLANK.test(shown) && !/ /.test(shown));
  }

  // The same thresholds and words as unipo_build/views/inspector.py.
  var BAR_FLOOR = 1e-6;
  var ZERO_OBJECTIVE = 1e-7;
  var ZERO_OBJECTIVE_NOTE = "J is 0 up to rounding. That is the value of the objective, not what moves the policy: " +
    "its gradient is not 0, and the token colours show where it pushes (green tokens up, pink tokens down). On the " +
    "first update after sampling every ratio is 1, each token's objective is its advantage; when every response weighs the " +
    "same, a group's advantages cancel out.";

  var instances = (V.inspectors = V.inspectors || []);

  /* ------------------------------------------------------------ one inspector */

  function Inspector(container) {
    var data = V.readData(container);
    if (data) setScale(data.scale);
    this.container = container;
    this.data = data;
    this.uid = container.id || "unipo-insp";
    this.run = data.run;
    this.algorithm = data.algorithm;
    this.siteRoot = container.getAttribute("data-site-root") || "";
    this.steps = data.steps;
    this.step = data.step;
    this.detail = null;
    this.quantity = "objective";
    this.mode = "text";
    this.tokens = []; // [{node, group, response, t, tokens}]
    this.selected = null;
    this.mark = data.moment; // the moment to highlight on the open step
    this.requests = 0;
    V.runs[this.run] = { config: data.config, siteRoot: this.siteRoot, stepPath: data.step_path, algorithm: this.algorithm };
    this.buildControls();
    this.open(this.step, { initial: true, selectMoment: true });
  }

  Inspector.prototype.quantityInfo = function (key) {
    return this.data.quantities.filter(function (q) { return q.key === key; })[0];
  };

  Inspector.prototype.buildControls = function () {
    var self = this;
    var controls = this.container.querySelector(".unipo-inspector-controls");
    var id = this.uid;
    this.prev = el("button", { type: "button", class: "unipo-btn unipo-prev", "aria-label": "Previous step", text: "\u2039 Previous" });
    this.next = el("button", { type: "button", class: "unipo-btn unipo-next", "aria-label": "Next step", text: "Next \u203a" });
    this.stepSelect = el("select", { class: "unipo-step-select", id: id + "-step" },
      this.steps.map(function (s) { return el("option", { value: s, text: "Step " + s }); }));
    this.momentSelect = el("select", { class: "unipo-moment-select", id: id + "-moment" },
      [el("option", { value: "", text: this.data.moments.length ? "Choose\u2026" : "none in this run" })].concat(
        this.data.moments.map(function (m) {
          var where = m.open_step === m.step ? "step " + m.step : "step " + m.step + ", shown at " + m.open_step;
          return el("option", { value: m.name, text: m.label + " (" + where + ")" });
        })));
    if (!this.data.moments.length) this.momentSelect.disabled = true;
    this.quantitySelect = el("select", { class: "unipo-quantity-select", id: id + "-quantity" },
      this.data.quantities.map(function (q) { return el("option", { value: q.key, text: q.label }); }));
    this.modeButtons = ["text", "tokens"].map(function (mode) {
      return el("button", { type: "button", class: "unipo-btn unipo-mode-btn", "data-mode": mode,
        "aria-pressed": mode === self.mode ? "true" : "false",
        title: mode === "text" ? "Show the responses as text" : "Show token boundaries and whitespace",
        text: mode === "text" ? "Text" : "Tokens" });
    });
    this.status = el("p", { class: "unipo-inspector-status", role: "status", "aria-live": "polite" });
    this.readout = el("div", { class: "unipo-token-readout", "aria-live": "polite" });
    this.resetReadout();
    function pair(label, forId, control) {
      return el("span", { class: "unipo-control-pair" }, [el("label", { class: "unipo-control", for: forId, text: label }), control]);
    }
    controls.replaceChildren(
      el("div", { class: "unipo-control-row", role: "group", "aria-label": "Step" }, [
        el("span", { class: "unipo-control-pair" }, [this.prev, pair("Step", id + "-step", this.stepSelect), this.next]),
        pair("Teaching moment", id + "-moment", this.momentSelect),
      ]),
      el("div", { class: "unipo-control-row", role: "group", "aria-label": "Display" }, [
        pair("Colour by", id + "-quantity", this.quantitySelect),
        el("span", { class: "unipo-mode", role: "group", "aria-label": "Show responses as" }, this.modeButtons),
      ]),
      this.status,
      this.readout
    );
    controls.hidden = false;
    this.prev.addEventListener("click", function () { self.move(-1); });
    this.next.addEventListener("click", function () { self.move(1); });
    this.stepSelect.addEventListener("change", function () { self.mark = null; self.open(Number(self.stepSelect.value)); });
    this.momentSelect.addEventListener("change", function () {
      var name = self.momentSelect.value;
      var m = self.data.moments.filter(function (x) { return x.name === name; })[0];
      if (!m) return;
      self.mark = m;
      self.open(m.open_step, { selectMoment: true, scroll: true });
    });
    this.quantitySelect.addEventListener("change", function () {
      self.quantity = self.quantitySelect.value;
      self.recolour();
    });
    this.modeButtons.forEach(function (button) {
      button.addEventListener("click", function () { self.setMode(button.getAttribute("data-mode")); });
    });
  };

  Inspector.prototype.resetReadout = function () {
    this.readout.replaceChildren(el("span", { class: "unipo-readout-hint",
      text: "Click a token (or Tab to a response, move with the arrow keys and press Enter) to see its numbers; " +
        "an Algorithm Explainer of the same algorithm on this page shows how they were computed." }));
  };

  Inspector.prototype.move = function (delta) {
    var i = this.steps.indexOf(this.step) + delta;
    if (i < 0 || i >= this.steps.length) return;
    this.mark = null;
    this.open(this.steps[i]);
  };

  Inspector.prototype.updateNav = function () {
    var i = this.steps.indexOf(this.step);
    this.prev.disabled = i <= 0;
    this.next.disabled = i < 0 || i >= this.steps.length - 1;
    this.stepSelect.value = String(this.step);
    if (!this.mark) this.momentSelect.value = "";
  };

  Inspector.prototype.open = function (step, options) {
    options = options || {};
    var self = this;
    if (this.steps.indexOf(step) < 0) {
      var nearest = this.steps.reduce(function (best, s) { return Math.abs(s - step) < Math.abs(best - step) ? s : best; }, this.steps[0]);
      this.status.textContent = "Step " + step + " has no token detail; showing the nearest step that has, " + nearest + ".";
      step = nearest;
    } else {
      this.status.textContent = "Loading step " + step + "\u2026";
    }
    var request = ++this.requests;
    this.container.setAttribute("data-loading", "1");
    return V.loadStep(V.stepUrl(V.runs[this.run], step)).then(function (detail) {
      if (request !== self.requests) return;
      self.step = step;
      self.detail = detail;
      self.container.setAttribute("data-step", String(step));
      self.container.removeAttribute("data-loading");
      if (/^Loading/.test(self.status.textContent)) self.status.textContent = "";
      self.render();
      self.updateNav();
      if (self.mark && self.mark.open_step === step) self.highlightMoment(options.selectMoment, options.scroll);
      self.container.setAttribute("data-ready", "1");
    }).catch(function (err) {
      if (request !== self.requests) return;
      self.container.removeAttribute("data-loading");
      self.container.setAttribute("data-ready", "error");
      self.status.textContent = "Could not load the token data of step " + step + " (" + err.message + ")." +
        (options.initial ? " The step below is shown without interaction." : "");
      console.error("UNIPO inspector:", err);
    });
  };

  /* ---- rendering a step (the same markup as inspector.py step_html) ---- */

  Inspector.prototype.render = function () {
    var self = this;
    var detail = this.detail;
    var body = this.container.querySelector(".unipo-inspector-body");
    this.tokens = [];
    this.selected = null;
    this.container.removeAttribute("data-selected");
    this.resetReadout();
    // Quantities this step has; fall back to the token objective.
    Array.prototype.forEach.call(this.quantitySelect.options, function (option) {
      option.disabled = !available(detail, option.value);
    });
    if (!available(detail, this.quantity)) this.quantity = "objective";
    this.quantitySelect.value = this.quantity;
    this.legend = el("div", { class: "unipo-legend" });
    var trained = detail.prompts.filter(function (g) { return !g.filtered; });
    var dropped = detail.prompts.filter(function (g) { return g.filtered; });
    var groups = el("div", { class: "unipo-groups" }, trained.concat(dropped).map(function (g) { return self.renderGroup(g); }));
    var step = el("div", { class: "unipo-inspector-step", "data-step": detail.step }, [
      el("p", { class: "unipo-step-title" }, ["Step " + detail.step + " ", el("span", { class: "unipo-fact", text: "rollout " + detail.rollout })]),
      this.legend,
      this.renderBars(),
      groups,
    ]);
    body.replaceChildren(step);
    body.classList.toggle("unipo-mode-tokens", this.mode === "tokens");
    this.recolour();
  };

  Inspector.prototype.renderBars = function () {
    var detail = this.detail;
    var cfg = this.data.config;
    var uid = this.uid;
    // As inspector.py: drawn to the largest contribution, never to less than BAR_FLOOR.
    var largest = Math.max.apply(null, detail.groups.map(function (g) { return Math.abs(g.contribution); }).concat([BAR_FLOOR]));
    var beta = cfg && cfg.components.kl.kind === "in_loss" ? cfg.components.kl.params.beta : null;
    var groupBased = !cfg || ["group_zscore", "group_mean", "leave_one_out"].indexOf(cfg.components.advantage.kind) >= 0;
    var rows = detail.groups.map(function (g) {
      var sign = g.contribution > 0 ? "pos" : g.contribution < 0 ? "neg" : "zero";
      var facts = g.n_correct !== null && g.n_correct !== undefined ? g.n_correct + "/" + g.size + " correct" : "";
      var zeroAdv = groupBased && g.n_correct !== null && g.n_correct !== undefined && (g.n_correct === 0 || g.n_correct === g.size);
      var label = "Group " + g.index;
      var children = [
        g.detailed ? el("a", { href: "#" + uid + "-g" + g.index, class: "unipo-bar-label", text: label })
                   : el("span", { class: "unipo-bar-label", text: label }),
        el("span", { class: "unipo-bar-track", "aria-hidden": "true" }, [
          el("span", { class: "unipo-bar unipo-bar--" + sign, style: "width:" + (50 * Math.abs(g.contribution) / largest).toFixed(1) + "%" }),
        ]),
        el("span", { class: "unipo-bar-value", text: fmtSigned(g.contribution) }),
      ];
      var factsNode = el("span", { class: "unipo-bar-facts", text: facts });
      if (g.detailed) factsNode.appendChild(el("span", { class: "unipo-mark unipo-mark--detailed", text: "tokens below" }));
      if (zeroAdv) {
        factsNode.appendChild(el("span", { class: "unipo-bar-note",
          text: "advantage 0: nothing from the policy gradient" + (beta ? "; only \u2212\u03b2\u00b7KL (\u03b2 = " + fmt(beta) + ")" : "") }));
      }
      children.push(factsNode);
      return el("li", { class: "unipo-bar-row unipo-bar-row--" + sign, "data-group": g.index }, children);
    });
    var nDetailed = detail.groups.filter(function (g) { return g.detailed; }).length;
    var out = [
      el("p", { class: "unipo-step-j" }, ["Step objective ", el("strong", { text: "J = " + fmtSigned(detail.objective) }),
        ": the sum of the " + detail.groups.length + " groups' contributions in this update (" + nDetailed + " shown token by token below)."]),
    ];
    if (Math.abs(detail.objective) < ZERO_OBJECTIVE) out.push(el("p", { class: "unipo-step-note", text: ZERO_OBJECTIVE_NOTE }));
    out.push(el("ul", { class: "unipo-bars" }, rows));
    if (detail.filtered_groups && detail.filtered_groups.length) {
      out.push(el("div", { class: "unipo-filtered-list" }, [
        el("span", { class: "unipo-label", text: "Dropped by the sampling filter before this update (" + detail.filtered_groups.length + " logged)" }),
        el("ul", null, detail.filtered_groups.map(function (g) {
          return el("li", { text: "Group " + g.index + ": " + (g.n_correct === null || g.n_correct === undefined ? "?" : g.n_correct) + "/" + g.size + " correct, dropped" });
        })),
      ]));
    }
    return el("div", { class: "unipo-step-objective" }, out);
  };

  function rewardText(r) {
    var text = "reward " + fmt(r.reward);
    var comps = r.reward_components || {};
    var keys = Object.keys(comps);
    if (keys.length) text += " (" + keys.map(function (k) { return k + " " + fmt(comps[k]); }).join(", ") + ")";
    return text;
  }

  /** As inspector.py zero_advantage_note: a trained group whose logged advantages are all 0. */
  function zeroAdvantageNote(g, cfg) {
    if (g.filtered || !g.responses.length || g.responses.some(function (r) { return !r.tokens; })) return null;
    var any = g.responses.some(function (r) {
      return r.tokens.advantage.some(function (a, t) { return r.tokens.mask[t] && a !== 0; });
    });
    if (any) return null;
    var n = g.responses.length;
    var k = g.responses.filter(function (r) { return r.correct; }).length;
    var why = k === n ? "right" : k === 0 ? "wrong" : "equally rewarded";
    var text = "Every advantage in this group is 0 (all " + n + " answers " + why + "), so its tokens push nothing through the policy gradient";
    var beta = cfg && cfg.components.kl.kind === "in_loss" ? cfg.components.kl.params.beta : null;
    if (beta) return text + "; its contribution is only the KL term \u2212\u03b2\u00b7KL (\u03b2 = " + fmt(beta) + "), which still pulls each token toward the reference model.";
    return text + ": its contribution is 0.";
  }

  Inspector.prototype.renderGroup = function (g) {
    var self = this;
    var n = g.responses.length;
    var nCorrect = g.responses.filter(function (r) { return r.correct; }).length;
    var head = [el("span", { class: "unipo-group-name", text: "Group " + g.index }), el("span", { class: "unipo-fact", text: nCorrect + "/" + n + " correct" })];
    if (g.filtered) head.push(el("span", { class: "unipo-mark unipo-mark--filtered", text: "dropped by the sampling filter" }));
    else if (g.contribution !== null && g.contribution !== undefined) head.push(el("span", { class: "unipo-fact", text: "contribution " + fmtSigned(g.contribution) }));
    var children = [
      el("div", { class: "unipo-group-head" }, head),
      el("p", { class: "unipo-prompt" }, [el("span", { class: "unipo-label", text: "Prompt" }), " " + g.prompt]),
    ];
    if (g.answer !== null && g.answer !== undefined) {
      children.push(el("p", { class: "unipo-answer" }, [el("span", { class: "unipo-label", text: "Answer" }), " " + g.answer]));
    }
    if (g.filtered) {
      children.push(el("p", { class: "unipo-group-note", text: "Every response got the same correctness, so every advantage would be 0: the group was dropped and more prompts were sampled. It is not part of the update." }));
    }
    var zero = zeroAdvantageNote(g, this.data.config);
    if (zero) children.push(el("p", { class: "unipo-group-note unipo-group-note--zero", text: zero }));
    children.push(el("ol", { class: "unipo-responses" }, g.responses.map(function (r) { return self.renderResponse(g, r); })));
    return el("section", { class: "unipo-group" + (g.filtered ? " unipo-group--filtered" : ""), id: this.uid + "-g" + g.index + (g.filtered ? "f" : ""),
      "data-group": g.index, "data-filtered": g.filtered ? "1" : null }, children);
  };

  Inspector.prototype.renderResponse = function (g, r) {
    var self = this;
    var marks = [el("span", { class: "unipo-response-index", text: "#" + r.index })];
    if (r.correct === true) marks.push(el("span", { class: "unipo-mark unipo-mark--correct", text: "\u2713 correct" }));
    else if (r.correct === false) marks.push(el("span", { class: "unipo-mark unipo-mark--wrong", text: "\u2717 wrong" }));
    if (r.truncated) marks.push(el("span", { class: "unipo-mark unipo-mark--truncated", text: "truncated" }));
    if (r.filtered) marks.push(el("span", { class: "unipo-mark unipo-mark--filtered", text: "filtered" }));
    marks.push(el("span", { class: "unipo-fact", text: rewardText(r) }));
    if (r.advantage !== null && r.advantage !== undefined) marks.push(el("span", { class: "unipo-fact", text: "advantage " + fmtSigned(r.advantage) }));
    marks.push(el("span", { class: "unipo-fact", text: r.length + " tokens" }));
    if (r.contribution !== null && r.contribution !== undefined && !r.filtered) marks.push(el("span", { class: "unipo-fact", text: "contribution " + fmtSigned(r.contribution) }));
    var text;
    if (r.tokens) {
      var tk = r.tokens;
      text = el("div", { class: "unipo-tokens", role: "group",
        "aria-label": "Group " + g.index + ", response #" + r.index + ": " + tk.text.length + " tokens" });
      tk.text.forEach(function (piece, t) {
        var node = el("span", { class: "unipo-tok", role: "button", tabindex: t === 0 ? "0" : "-1", "aria-pressed": "false",
          "data-g": g.index, "data-r": r.index, "data-t": t });
        showToken(node, piece, self.mode);
        if (!tk.mask[t]) node.classList.add("unipo-tok--masked");
        text.appendChild(node);
        self.tokens.push({ node: node, group: g.index, response: r.index, t: t, tokens: tk, text: piece });
      });
    } else {
      text = el("div", { class: "unipo-tokens unipo-tokens--plain", text: r.text });
    }
    return el("li", { class: "unipo-response", "data-response": r.index }, [el("div", { class: "unipo-response-meta" }, marks), text]);
  };

  /* ---- colours, legend, mode ---- */

  Inspector.prototype.recolour = function () {
    var key = this.quantity;
    var q = this.quantityInfo(key);
    var centre = q ? q.centre : 0;
    var domain = this.detail ? stepDomain(this.detail, key, centre) : 0;
    this.tokens.forEach(function (item) {
      var vs = values(item.tokens, key);
      var node = item.node;
      if (!vs || !item.tokens.mask[item.t]) {
        node.style.background = "";
        node.style.color = "";
        node.setAttribute("aria-label", "\u201c" + item.text + "\u201d, not in the objective");
        return;
      }
      var bg = colour(vs[item.t], domain, centre);
      node.style.background = bg;
      node.style.color = textColour(bg);
      node.setAttribute("aria-label", "\u201c" + item.text + "\u201d, " + (q ? q.label.toLowerCase() : key) + " " + fmtSigned(vs[item.t]));
    });
    this.renderLegend(q, domain, centre);
    this.container.setAttribute("data-quantity", key);
  };

  Inspector.prototype.renderLegend = function (q, domain, centre) {
    var stops = PIYG.map(function (c, i) { return c + " " + Math.round(100 * i / (PIYG.length - 1)) + "%"; }).join(", ");
    var ticks = [centre - domain, centre - domain / 2, centre, centre + domain / 2, centre + domain];
    var title = (q ? q.label : this.quantity) + (domain === 0 ? ": " + fmt(centre) + " on every token of this step" : "");
    this.legend.replaceChildren(
      el("span", { class: "unipo-legend-title", text: title }),
      el("span", { class: "unipo-legend-bar", style: "background:linear-gradient(to right, " + stops + ")" }),
      el("span", { class: "unipo-legend-ticks" }, ticks.map(function (v) { return el("span", { text: fmt(v) }); })),
      el("span", { class: "unipo-legend-note", text: (q ? q.description + " " : "") + "Scale: this step's largest |value" + (centre ? " \u2212 " + fmt(centre) : "") + "|." })
    );
  };

  Inspector.prototype.setMode = function (mode) {
    var self = this;
    this.mode = mode;
    this.modeButtons.forEach(function (b) { b.setAttribute("aria-pressed", b.getAttribute("data-mode") === mode ? "true" : "false"); });
    this.tokens.forEach(function (item) { showToken(item.node, item.text, self.mode); });
    var body = this.container.querySelector(".unipo-inspector-body");
    body.classList.toggle("unipo-mode-tokens", mode === "tokens");
  };

  /* ---- selection and keyboard ---- */

  Inspector.prototype.itemOf = function (node) {
    for (var i = 0; i < this.tokens.length; i++) if (this.tokens[i].node === node) return this.tokens[i];
    return null;
  };

  Inspector.prototype.select = function (item, options) {
    options = options || {};
    if (this.selected) {
      this.selected.node.classList.remove("unipo-tok--selected");
      this.selected.node.setAttribute("aria-pressed", "false");
    }
    this.selected = item;
    item.node.classList.add("unipo-tok--selected");
    item.node.setAttribute("aria-pressed", "true");
    this.rove(item.node);
    this.showReadout(item);
    var detail = { run: this.run, algorithm: this.algorithm, step: this.step, group: item.group, response: item.response, token: item.t };
    this.container.setAttribute("data-selected", [item.group, item.response, item.t].join(":"));
    document.dispatchEvent(new CustomEvent("unipo:token", { detail: detail }));
  };

  Inspector.prototype.showReadout = function (item) {
    var self = this;
    var tk = item.tokens;
    var parts = [el("strong", { class: "unipo-readout-token", text: "\u201c" + V.isolate(item.text) + "\u201d" }),
      el("span", { class: "unipo-fact", text: "group " + item.group + ", response #" + item.response + ", token " + item.t })];
    this.data.quantities.forEach(function (q) {
      var vs = values(tk, q.key);
      if (!vs) return;
      parts.push(el("span", { class: "unipo-readout-value", "data-key": q.key, "data-value": String(vs[item.t]) },
        [q.label + " ", el("span", { class: "unipo-num", text: fmtSigned(vs[item.t]) })]));
    });
    if (tk.clip && tk.clip[item.t]) parts.push(el("span", { class: "unipo-mark unipo-mark--clipped", text: tk.clip[item.t] > 0 ? "clipped high" : "clipped low" }));
    if (tk.weight) parts.push(el("span", { class: "unipo-readout-value", "data-key": "weight", "data-value": String(tk.weight[item.t]) },
      ["weight ", el("span", { class: "unipo-num", text: fmt(tk.weight[item.t]) })]));
    self.readout.replaceChildren.apply(self.readout, parts);
  };

  Inspector.prototype.rove = function (node) {
    var group = node.parentNode;
    Array.prototype.forEach.call(group.querySelectorAll('.unipo-tok[tabindex="0"]'), function (n) {
      if (n !== node) n.setAttribute("tabindex", "-1");
    });
    node.setAttribute("tabindex", "0");
  };

  Inspector.prototype.onKey = function (event) {
    var node = event.target;
    if (!node.classList || !node.classList.contains("unipo-tok")) return;
    var item = this.itemOf(node);
    if (!item) return;
    var key = event.key;
    if (key === "Enter" || key === " " || key === "Spacebar") {
      event.preventDefault();
      this.select(item);
      return;
    }
    var siblings = node.parentNode.children;
    var index = Array.prototype.indexOf.call(siblings, node);
    var target = null;
    if (key === "ArrowRight") target = siblings[index + 1];
    else if (key === "ArrowLeft") target = siblings[index - 1];
    else if (key === "Home") target = siblings[0];
    else if (key === "End") target = siblings[siblings.length - 1];
    else if (key === "ArrowDown" || key === "ArrowUp") {
      var lists = Array.prototype.slice.call(this.container.querySelectorAll(".unipo-tokens"))
        .filter(function (n) { return n.querySelector(".unipo-tok"); });
      var at = lists.indexOf(node.parentNode) + (key === "ArrowDown" ? 1 : -1);
      if (lists[at]) target = lists[at].children[Math.min(index, lists[at].children.length - 1)];
    }
    if (target) {
      event.preventDefault();
      this.rove(target);
      target.focus();
    }
  };

  Inspector.prototype.attach = function () {
    var self = this;
    var body = this.container.querySelector(".unipo-inspector-body");
    body.addEventListener("click", function (event) {
      var node = event.target.closest ? event.target.closest(".unipo-tok") : null;
      if (!node) return;
      var item = self.itemOf(node);
      if (item) self.select(item);
    });
    body.addEventListener("keydown", function (event) { self.onKey(event); });
  };

  /* ---- moments ---- */

  Inspector.prototype.highlightMoment = function (selectIt, scroll) {
    var m = this.mark;
    if (!m) return;
    this.momentSelect.value = m.name;
    var body = this.container.querySelector(".unipo-inspector-body");
    var where = [];
    var groupNode = null, responseNode = null;
    if (m.group !== null && m.group !== undefined) {
      groupNode = body.querySelector('.unipo-group[data-group="' + m.group + '"]');
      if (groupNode) {
        groupNode.classList.add("unipo-moment");
        where.push("group " + m.group);
      }
    }
    if (groupNode && m.response !== null && m.response !== undefined) {
      responseNode = groupNode.querySelector('.unipo-response[data-response="' + m.response + '"]');
      if (responseNode) {
        responseNode.classList.add("unipo-moment");
        where.push("response #" + m.response);
      }
    }
    var item = null;
    if (m.token !== null && m.token !== undefined) {
      for (var i = 0; i < this.tokens.length; i++) {
        var it = this.tokens[i];
        if (it.group === m.group && it.response === m.response && it.t === m.token) item = it;
      }
      if (item) {
        item.node.classList.add("unipo-tok--moment");
        where.push("token " + m.token);
      }
    }
    this.status.textContent = "Teaching moment: " + m.label + (where.length ? " (" + where.join(", ") + ", outlined)." : ".") +
      (m.open_step !== m.step ? " It is at step " + m.step + ", which has no token detail; this is the nearest step that has." : "");
    if (item && selectIt) this.select(item);
    var focusNode = (item && item.node) || responseNode || groupNode;
    if (scroll && focusNode) focusNode.scrollIntoView({ block: "center", behavior: "smooth" });
  };

  /* ------------------------------------------------------------ wiring */

  function init(container) {
    if (container.__unipoInspector) return;
    if (!V.readData(container)) return;
    var inspector;
    try {
      inspector = new Inspector(container);
    } catch (err) {
      console.error("UNIPO inspector:", err);
      return;
    }
    container.__unipoInspector = inspector;
    inspector.attach();
    instances.push(inspector);
  }

  if (!V.inspectorListening) {
    V.inspectorListening = true;
    document.addEventListener("unipo:open-step", function (event) {
      var detail = event.detail || {};
      for (var i = instances.length - 1; i >= 0; i--) {
        var inspector = instances[i];
        if (!document.contains(inspector.container)) {
          instances.splice(i, 1); // left behind by instant navigation
          continue;
        }
        // An event may name one inspector (the explorer's own); else every inspector of the run.
        if (inspector.run === detail.run && (!detail.inspector || inspector.container.id === detail.inspector)) {
          inspector.mark = null;
          inspector.open(Number(detail.step));
        }
      }
    });
  }

  window.UNIPO.register("inspector", function (root) {
    Array.prototype.forEach.call(root.querySelectorAll(".unipo-inspector"), init);
  });
})();
