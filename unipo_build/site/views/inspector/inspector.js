/*
 * UNIPO views: the Step Inspector (after views-common.js, token-scale.js, unipo-math.js and
 * inspector-tokens.js, which holds the selected token: its numbers and the keyboard).
 *
 * Each <div class="unipo-inspector"> written by unipo_build/site/views/inspector/inspector.py carries its run,
 * algorithm and site root as data attributes and, in <template id="<its id>-data">, the steps
 * that have token files, the run's teaching moments, its resolved algorithm, the token
 * quantities and the palette's ramps. The build sends only that data (and a caption): this
 * script is the one place the step is rendered (issue 31: one view, one rendering). When the
 * inspector comes near the viewport (or the URL names it), it fetches the step's token file and
 * renders it:
 *
 * - the group bars, each group with token detail a button that opens that group (one at a time);
 * - the open group token by token, coloured by a quantity the reader picks (token-scale.js),
 *   with a legend spanning the step's values;
 * - a selected token's numbers under its response (and how its objective adds up), reported to
 *   the Algorithm Explainer with the `token` event (UNIPO.events) {run, algorithm, step, group, response,
 *   token};
 * - previous / next / go to step, teaching moments; `open_step` {run, step} opens a step
 *   from elsewhere (the Training Explorer);
 * - step, group, token, quantity and display in the URL hash (UNIPO.state), restored on load
 *   and when the reader goes back or forward.
 *
 * Log text only ever reaches the page through textContent.
 */
(function () {
  "use strict";

  var V = window.UNIPOViews;
  if (!V || !V.el || !V.scale) {
    console.error("UNIPO: views-common.js and token-scale.js must load before inspector.js");
    return;
  }
  if (V.__inspector) return; // loaded again by an instant navigation: already set up
  V.__inspector = true;
  var el = V.el;
  var fmt = V.fmt;
  var fmtSigned = V.fmtSigned;
  var fmtObjective = V.fmtObjective;
  var S = V.scale;
  var NOISE = V.NOISE;
  var T = V.inspectorTokens;
  if (!T) {
    console.error("UNIPO: inspector-tokens.js must load before inspector.js");
    return;
  }
  var klBeta = T.klBeta;
  var inViewport = T.inViewport;

  // Text with no visible character (empty, zero-width, controls, line breaks): such a token gets
  // a box of its own width (inspector.css), so it can still be clicked.
  var BLANK = /^[\s\p{Cc}\p{Cf}\p{Zl}\p{Zp}]*$/u;

  function showToken(node, text, mode) {
    var shown = visible(text, mode);
    node.textContent = shown;
    node.classList.toggle("unipo-tok--blank", BLANK.test(shown) && !/ /.test(shown));
  }
  var ZERO_OBJECTIVE_NOTE = "J is 0 up to rounding. That is the value of the objective, not what moves the policy: " +
    "its gradient is not 0, and the token colours show where it pushes (green tokens up, pink tokens down). On the " +
    "first update after sampling every ratio is 1, each token's objective is its advantage; when every response weighs the " +
    "same, a group's advantages cancel out.";

  var instances = (V.inspectors = V.inspectors || []);

  /* ------------------------------------------------------------ helpers */

  /** The logged step nearest to ``x`` (the earlier one on a tie). */
  function nearestStep(steps, x) {
    return steps.reduce(function (best, s) { return Math.abs(s - x) < Math.abs(best - x) ? s : best; }, steps[0]);
  }

  function dark() {
    return window.UNIPO && window.UNIPO.scheme && window.UNIPO.scheme() === "slate";
  }

  function groupKey(g) {
    return String(g.index) + (g.filtered ? "f" : "");
  }

  /** A short fingerprint of a prompt's text (FNV-1a, 32 bits, hex), kept on the inspector as
   * data-prompt: the set switch carries it (unipo.js crossSetHash), so the other set's inspector
   * can say when its group of that number holds another prompt. */
  function promptPrint(text) {
    var h = 0x811c9dc5;
    text = String(text || "");
    for (var i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    return ("0000000" + h.toString(16)).slice(-8);
  }

  function hasSignal(g) {
    return g.responses.some(function (r) {
      return r.tokens && r.tokens.advantage.some(function (a, t) { return r.tokens.mask[t] && a !== 0; });
    });
  }

  /** The group a step opens on: the moment's, else the first trained one with signal, else the first trained one. */
  function defaultGroup(detail, moment) {
    if (!detail.prompts.length) return null;
    if (moment && moment.group !== null && moment.group !== undefined && moment.step === detail.step) {
      var dropped = moment.name === "filtered_group";
      var found = detail.prompts.filter(function (g) { return g.index === moment.group && !!g.filtered === dropped; })[0];
      if (found) return found;
    }
    var trained = detail.prompts.filter(function (g) { return !g.filtered; });
    return trained.filter(hasSignal)[0] || trained[0] || detail.prompts[0];
  }

  function visible(text, mode) {
    if (mode !== "tokens") return text;
    return text.replace(/ /g, "\u00b7").replace(/\n/g, "\u21b5\n").replace(/\t/g, "\u2192") || "\u2205";
  }

  function rewardText(r) {
    var text = "reward " + fmt(r.reward);
    var comps = r.reward_components || {};
    var keys = Object.keys(comps);
    if (keys.length) text += " (" + keys.map(function (k) { return k + " " + fmt(comps[k]); }).join(", ") + ")";
    return text;
  }


  /** A trained group whose logged advantages are all 0: why it contributes (almost) nothing. */
  function zeroAdvantageNote(g, cfg) {
    if (g.filtered || !g.responses.length || g.responses.some(function (r) { return !r.tokens; })) return null;
    if (hasSignal(g)) return null;
    var n = g.responses.length;
    var k = g.responses.filter(function (r) { return r.correct; }).length;
    var known = g.responses.some(function (r) { return r.correct === true || r.correct === false; });
    var why = !known ? "equally rewarded" : k === n ? "right" : k === 0 ? "wrong" : "equally rewarded";
    var text = "Every advantage in this group is 0 (all " + n + " answers " + why + "), so its tokens push nothing through the policy gradient";
    var beta = klBeta(cfg);
    if (beta) return text + "; its contribution is only the KL term \u2212\u03b2\u00b7KL (\u03b2 = " + fmt(beta) + "), which still pulls each token toward the reference model.";
    return text + ": its contribution is 0.";
  }

  /** The zero-advantage mark's explanation. */
  function zeroAdvantageTitle(beta) {
    return "Every answer got the same reward, so the policy gradient gets nothing from this group" +
      (beta ? "; only the KL term \u2212\u03b2\u00b7KL (\u03b2 = " + fmt(beta) + ") acts on its tokens." : ": it contributes 0.");
  }

  /** "J = +0.0123", or "J ≈ 0" for rounding noise. */
  function jText(value) {
    var text = fmtObjective(value, true);
    return text.charAt(0) === "\u2248" ? "J " + text : "J = " + text;
  }


  /* ------------------------------------------------------------ one inspector */

  function Inspector(container) {
    var data = V.readData(container);
    this.container = container;
    this.data = data;
    this.uid = container.id || "unipo-insp";
    this.id = this.uid.replace(/^unipo-/, "");
    this.run = data.run;
    this.algorithm = data.algorithm;
    this.siteRoot = container.getAttribute("data-site-root") || "";
    this.steps = data.steps;
    this.step = data.step;
    this.groupKey = null; // the open group, once a step is rendered
    this.detail = null;
    this.quantity = "objective";
    this.mode = "text";
    this.tokens = []; // [{node, group, response, t, tokens, text}] of the open group
    this.selected = null;
    this.mark = data.moment; // the moment to highlight on its step
    // Only the open group's bar shows until the reader asks for all (16 groups are 300 px).
    this.folded = true;
    this.requests = 0;
    this.active = false;
    V.runs[this.run] = { config: data.config, siteRoot: this.siteRoot, stepPath: data.step_path, algorithm: this.algorithm };
  }

  Inspector.prototype.quantityInfo = function (key) {
    return this.data.quantities.filter(function (q) { return q.key === key; })[0];
  };

  /** Build the controls and render the step: once, when the reader comes near (or a link names it). */
  Inspector.prototype.activate = function (params) {
    if (this.active) return;
    this.active = true;
    this.container.setAttribute("data-active", "1");
    this.buildControls();
    this.attach();
    return this.apply(params || window.UNIPO.state.get(this.id), { initial: true });
  };

  /**
   * Bring the inspector to the state ``params`` holds (from the URL), or to its defaults. A
   * step, group, token, colour or moment the inspector does not have opens its default in that
   * place, with one line saying what the link named (never a blank view).
   */
  Inspector.prototype.apply = function (params, options) {
    options = options || {};
    params = params || {};
    var self = this;
    var notes = [];
    if (params.colour && this.quantityInfo(params.colour)) this.quantity = params.colour;
    else {
      if (params.colour) notes.push("colour \u201c" + params.colour + "\u201d");
      this.quantity = "objective";
    }
    this.quantitySelect.value = this.quantity;
    this.setMode(params.view === "tokens" ? "tokens" : "text", true);
    var moment = null;
    if (params.moment) {
      moment = this.data.moments.filter(function (m) { return m.name === params.moment; })[0] || null;
      if (!moment) notes.push("teaching moment \u201c" + params.moment + "\u201d");
    }
    var step = moment ? moment.open_step : this.data.step;
    var mapped = null; // {kind, text}: how a step named by another run set's page was placed here
    var keep = true; // whether the link's group and token are this step's
    if (params.step !== undefined) {
      var asked = Number(params.step);
      var number = params.step !== "" && isFinite(asked);
      var of = Number(params.of);
      if (number && params.of !== undefined && isFinite(of) && of > 0) {
        // From the other run set's page (the set switch): its step is a point of its own run.
        var where = "From the " + window.UNIPO.state.setLabel(params.from || "other set") + ": ";
        if (moment) {
          mapped = { kind: "moment", text: where + "its teaching moment \u201c" + moment.label + "\u201d (step " + asked +
            " there) opens as this run's own, at step " + moment.open_step + "." };
          keep = false;
        } else {
          var fraction = Math.min(1, Math.max(0, asked / of));
          step = nearestStep(this.steps, fraction * this.data.last_step);
          keep = step === asked;
          mapped = { kind: "fraction", text: where + "step " + asked + " of " + of + " there is " + Math.round(100 * fraction) +
            "% of the way through training; here that is step " + step + " of " + this.data.last_step +
            " (the nearest with token detail)" + (keep ? "." : ", with this step's own groups."),
            // the same step: its group and token are kept, and the line says when that group is another prompt
            prompt: keep && params.prompt ? String(params.prompt) : null,
            set: window.UNIPO.state.setLabel(params.from || "other set"), token: !!params.token };
        }
      } else if (number && this.steps.indexOf(asked) >= 0) {
        step = asked;
      } else {
        notes.push("step " + params.step);
        if (number) step = nearestStep(this.steps, asked); // the nearest step that has token detail
      }
    }
    if (!keep) params = { colour: params.colour, view: params.view, moment: params.moment };
    var token = null;
    if (params.token) {
      var rt = params.token.split(".").map(Number);
      if (rt.length === 2 && rt.every(function (x) { return isFinite(x) && x >= 0 && Math.floor(x) === x; })) token = { response: rt[0], t: rt[1] };
      else notes.push("token " + params.token);
    }
    var fromUrl = Object.keys(params).length > 0;
    this.mark = moment || (!fromUrl || step === this.data.step ? this.data.moment : null);
    this.showAll = false;
    // A step mapped from the other set is written back as this set's own (no of=, from=).
    return this.open(step, { group: params.group || null, token: token, selectMoment: !token && !params.group, quiet: !mapped,
                             missing: notes, mapped: mapped })
      .then(function () {
        if (options.initial && fromUrl && window.UNIPO.state.isFirst(self.id) && !window.UNIPO.state.placeHeld()) {
          var target = (self.selected && self.selected.node) || self.container;
          target.scrollIntoView({ block: self.selected ? "center" : "start" });
        }
      });
  };

  /**
   * The reader's state as URL params. Once the reader has chosen anything, the step and the
   * open group are written out (a default computed on reload could differ), and the token.
   */
  Inspector.prototype.params = function () {
    var p = {};
    p.step = this.step;
    if (this.groupKey) p.group = this.groupKey;
    if (this.selected) p.token = this.selected.response + "." + this.selected.t;
    if (this.quantity !== "objective") p.colour = this.quantity;
    if (this.mode === "tokens") p.view = "tokens";
    if (this.mark && this.mark !== this.data.moment && this.mark.open_step === this.step) p.moment = this.mark.name;
    return p;
  };

  /** data-at-moment: the teaching moment this inspector shows now (its step and group), which the
   * set switch carries to the other set's page (unipo.js crossSetHash). */
  Inspector.prototype.noteMoment = function () {
    var m = this.mark;
    var at = m && m.open_step === this.step && (m.group === null || m.group === undefined || String(m.group) === String(this.groupKey).replace(/f$/, ""));
    if (at) this.container.setAttribute("data-at-moment", m.name);
    else this.container.removeAttribute("data-at-moment");
  };

  Inspector.prototype.save = function (push) {
    window.UNIPO.state.set(this.id, this.params(), push);
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
    function pair(label, forId, control) {
      return el("span", { class: "unipo-control-pair" }, [el("label", { class: "unipo-control", for: forId, text: label }), control]);
    }
    controls.replaceChildren(
      // the short controls share a row; the teaching moments' long names get the next
      el("div", { class: "unipo-control-row" }, [
        el("span", { class: "unipo-control-pair", role: "group", "aria-label": "Step" }, [this.prev, pair("Step", id + "-step", this.stepSelect), this.next]),
        el("span", { class: "unipo-control-pair", role: "group", "aria-label": "Display" }, [
          pair("Colour by", id + "-quantity", this.quantitySelect),
          el("span", { class: "unipo-mode", role: "group", "aria-label": "Show responses as" }, this.modeButtons),
        ]),
      ]),
      el("div", { class: "unipo-control-row" }, [pair("Teaching moment", id + "-moment", this.momentSelect)]),
      this.status
    );
    controls.hidden = false;
    // the build's line on where the moment is: the status line says it from now on
    Array.prototype.forEach.call(this.container.querySelectorAll(".unipo-moment-note"), function (n) { n.remove(); });
    this.prev.addEventListener("click", function () { self.move(-1); });
    this.next.addEventListener("click", function () { self.move(1); });
    this.stepSelect.addEventListener("change", function () { self.mark = null; self.open(Number(self.stepSelect.value), { push: true }); });
    this.momentSelect.addEventListener("change", function () {
      var name = self.momentSelect.value;
      var m = self.data.moments.filter(function (x) { return x.name === name; })[0];
      if (!m) return;
      self.mark = m;
      self.open(m.open_step, { selectMoment: true, scroll: true, push: true });
    });
    this.quantitySelect.addEventListener("change", function () {
      self.quantity = self.quantitySelect.value;
      self.recolour();
      if (self.selected) self.showReadout(self.selected);
      self.save(false);
    });
    this.modeButtons.forEach(function (button) {
      button.addEventListener("click", function () { self.setMode(button.getAttribute("data-mode")); });
    });
  };

  Inspector.prototype.move = function (delta) {
    var i = this.steps.indexOf(this.step) + delta;
    if (i < 0 || i >= this.steps.length) return;
    this.mark = null;
    this.open(this.steps[i], { push: true });
  };

  Inspector.prototype.updateNav = function () {
    var i = this.steps.indexOf(this.step);
    this.prev.disabled = i <= 0;
    this.next.disabled = i < 0 || i >= this.steps.length - 1;
    this.stepSelect.value = String(this.step);
    this.momentSelect.value = this.mark && this.mark.open_step === this.step ? this.mark.name : "";
  };

  /**
   * Show ``step``; options: group (key), token {response, t}, selectMoment, scroll, push (a new
   * history entry), quiet (do not write the URL: the state came from it).
   */
  Inspector.prototype.open = function (step, options) {
    options = options || {};
    var self = this;
    if (this.steps.indexOf(step) < 0) {
      var nearest = nearestStep(this.steps, step);
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
      if (options.status) {
        // Opened from elsewhere (the Training Explorer): say so, with the way back.
        self.status.replaceChildren(options.status.text);
        if (options.status.back) self.status.append(" ", el("a", { href: "#" + options.status.back, text: "Back to the chart \u2191" }));
      }
      var missing = (options.missing || []).slice();
      var wanted = options.group && detail.prompts.filter(function (g) { return groupKey(g) === options.group; })[0];
      if (options.group && !wanted) missing.push("group " + options.group);
      var group = wanted || defaultGroup(detail, self.mark);
      self.renderStep();
      self.showGroup(group ? groupKey(group) : null, { quiet: true, response: options.token ? options.token.response : null });
      self.updateNav();
      if (self.mark && self.mark.open_step === step) self.highlightMoment(options.selectMoment && !options.token, options.scroll);
      if (options.token) {
        var item = self.tokens.filter(function (it) { return it.response === options.token.response && it.t === options.token.t; })[0];
        if (item) self.select(item, { quiet: true });
        else missing.push("token " + options.token.response + "." + options.token.t);
      }
      // From the other set at the same step: its group of this number is this run's own prompt, which
      // may be another than the reader had there (each set's run drew its own prompts).
      var other = !!(options.mapped && options.mapped.prompt && group && promptPrint(group.prompt) !== options.mapped.prompt);
      var mappedText = !options.mapped ? "" : options.mapped.text + (!other ? "" : " Group " + group.index +
        " here is another prompt than in the " + options.mapped.set + " (each set's run drew its own prompts)" +
        (options.mapped.token ? ", so the token marked is at the same place in another response." : "."));
      if (other) self.container.setAttribute("data-other-prompt", "1");
      else self.container.removeAttribute("data-other-prompt");
      if (missing.length) {
        // A link (or a history entry) named what this inspector does not have: its default, and why.
        self.status.textContent = "The link names " + missing.join(", ") + ", which this inspector does not have; showing step " +
          step + (group ? ", group " + group.index : "") + " instead." + (mappedText ? " " + mappedText : "");
        self.container.setAttribute("data-state-note", "1");
      } else {
        if (mappedText) self.status.textContent = mappedText + (self.status.textContent ? " " + self.status.textContent : "");
        self.container.removeAttribute("data-state-note");
      }
      if (options.mapped) self.container.setAttribute("data-mapped", options.mapped.kind);
      else self.container.removeAttribute("data-mapped");
      self.noteMoment();
      if (!options.quiet) self.save(!!options.push);
      self.container.setAttribute("data-ready", "1");
    }).catch(function (err) {
      if (request !== self.requests) return;
      self.container.removeAttribute("data-loading");
      self.container.setAttribute("data-ready", "error");
      self.status.textContent = "Could not load the token data of step " + step + " (" + err.message + ").";
      console.error("UNIPO inspector:", err);
    });
  };

  /* ---- the step: title, objective and group bars, legend, the open group ---- */

  Inspector.prototype.renderStep = function () {
    var detail = this.detail;
    var body = this.container.querySelector(".unipo-inspector-body");
    Array.prototype.forEach.call(this.quantitySelect.options, function (option) {
      option.disabled = !this.available(option.value);
    }, this);
    if (!this.available(this.quantity)) this.quantity = "objective";
    this.quantitySelect.value = this.quantity;
    this.legend = el("div", { class: "unipo-legend", role: "img" });
    this.groupView = el("div", { class: "unipo-group-view" });
    var step = el("div", { class: "unipo-inspector-step", "data-step": detail.step }, [
      el("p", { class: "unipo-step-title" }, ["Step " + detail.step + " ", el("span", { class: "unipo-fact", text: "rollout " + detail.rollout })]),
      this.renderBars(),
      this.legend,
      this.groupView,
    ]);
    body.replaceChildren(step);
    body.classList.toggle("unipo-mode-tokens", this.mode === "tokens");
  };

  Inspector.prototype.available = function (key) {
    var q = this.quantityInfo(key);
    return !!q && this.detail.prompts.some(function (g) {
      return g.responses.some(function (r) { return r.tokens && r.tokens[q.source]; });
    });
  };

  Inspector.prototype.renderBars = function () {
    var self = this;
    var detail = this.detail;
    var cfg = this.data.config;
    var largest = Math.max.apply(null, detail.groups.map(function (g) { return Math.abs(g.contribution); }).concat([0]));
    var beta = klBeta(cfg);
    var groupBased = !cfg || !!cfg.components.advantage.group_baseline;
    var logged = {};
    detail.prompts.forEach(function (g) { logged[groupKey(g)] = true; });
    this.groupButtons = {};
    var rows = detail.groups.map(function (g) {
      var width = Math.abs(g.contribution) < NOISE || largest < NOISE ? 0 : 50 * Math.abs(g.contribution) / largest;
      var sign = width === 0 ? "zero" : g.contribution > 0 ? "pos" : "neg";
      var known = g.n_correct !== null && g.n_correct !== undefined;
      var zeroAdv = groupBased && known && (g.n_correct === 0 || g.n_correct === g.size);
      var key = String(g.index);
      var label = logged[key]
        ? self.groupButton(key, "Group " + g.index)
        : el("span", { class: "unipo-bar-label", text: "Group " + g.index });
      var facts = el("span", { class: "unipo-bar-facts", text: known ? g.n_correct + "/" + g.size + " correct" : "" });
      if (logged[key]) facts.appendChild(el("span", { class: "unipo-mark unipo-mark--detailed", text: "tokens" }));
      if (zeroAdv) {
        facts.appendChild(el("span", { class: "unipo-bar-note", text: "advantage 0", title: zeroAdvantageTitle(beta) }));
      }
      return el("li", { class: "unipo-bar-row unipo-bar-row--" + sign, "data-group": g.index, "data-key": key, "data-detailed": logged[key] ? "1" : null }, [
        label,
        el("span", { class: "unipo-bar-track", "aria-hidden": "true" }, [
          el("span", { class: "unipo-bar unipo-bar--" + sign, style: "width:" + width.toFixed(1) + "%" }),
        ]),
        el("span", { class: "unipo-bar-value", text: fmtObjective(g.contribution, true) }),
        facts,
      ]);
    });
    var nDetailed = detail.prompts.filter(function (g) { return !g.filtered; }).length;
    var out = [
      el("p", { class: "unipo-step-j" }, ["Step objective ", el("strong", { text: jText(detail.objective) }),
        ", the sum of the " + detail.groups.length + " groups' contributions; " + nDetailed +
        " were logged token by token (marked \u201ctokens\u201d)."]),
    ];
    if (Math.abs(detail.objective) < NOISE) {
      out.push(el("details", { class: "unipo-step-note" }, [el("summary", { text: "Why is J \u2248 0?" }), el("p", { text: ZERO_OBJECTIVE_NOTE })]));
    }
    // Only the open group's bar is in the page while the list is folded (foldBars): a step of 64
    // groups would otherwise put 64 rows (hundreds of nodes) in every inspector.
    this.barRows = rows;
    this.barList = el("ul", { class: "unipo-bars" });
    out.push(this.barList);
    var toggle = el("button", { type: "button", class: "unipo-bars-toggle", "aria-expanded": "false" });
    toggle.addEventListener("click", function () {
      self.folded = !self.folded;
      self.foldBars();
    });
    out.push(toggle);
    this.barsToggle = toggle;
    if (detail.filtered_groups && detail.filtered_groups.length) {
      out.push(el("div", { class: "unipo-filtered-list" }, [
        el("span", { class: "unipo-label", text: "Dropped by the sampling filter before this update (" + detail.filtered_groups.length + " logged)" }),
        el("ul", null, detail.filtered_groups.map(function (g) {
          var text = ": " + (g.n_correct === null || g.n_correct === undefined ? "?" : g.n_correct) + "/" + g.size + " correct, dropped";
          var key = g.index + "f";
          var name = self.groupName(g.index, true);
          return el("li", null, logged[key] ? [self.groupButton(key, name), text] : [name + text]);
        })),
      ]));
    }
    this.barsBox = el("div", { class: "unipo-step-objective" }, out);
    return this.barsBox;
  };

  /** Show every group's bar, or (folded) only the open group's. */
  Inspector.prototype.foldBars = function () {
    if (!this.barsBox) return;
    var n = this.detail.groups.length;
    // a group is open: one of the bars, or a dropped group (then no bar shows, its list stays)
    var openRows = this.barRows.filter(function (row) { return row.classList.contains("unipo-bar-row--open"); });
    var open = openRows.length > 0 || !!this.barsBox.querySelector(".unipo-filtered-list .unipo-group-btn[aria-pressed='true']");
    var folded = this.folded && open;
    if (folded) this.barsBox.setAttribute("data-folded", "1");
    else this.barsBox.removeAttribute("data-folded");
    var rows = folded ? openRows : this.barRows;
    if (this.barList.children.length !== rows.length || rows.some(function (row, i) { return this.barList.children[i] !== row; }, this)) {
      this.barList.replaceChildren.apply(this.barList, rows);
    }
    this.barsToggle.hidden = !open || n < 2;
    this.barsToggle.setAttribute("aria-expanded", folded ? "false" : "true");
    this.barsToggle.textContent = folded ? "Show all " + n + " groups' contributions" : "Show only the open group's";
  };

  Inspector.prototype.groupButton = function (key, text) {
    var self = this;
    var button = el("button", { type: "button", class: "unipo-bar-label unipo-group-btn", "data-key": key,
      "aria-pressed": "false", "aria-controls": this.uid + "-groupview", title: "Show this group's tokens below", text: text });
    button.addEventListener("click", function () {
      self.showGroup(key, { push: true });
      if (!inViewport(self.groupView.firstChild || self.groupView, 0)) {
        (self.groupView.firstChild || self.groupView).scrollIntoView({ block: "start", behavior: "smooth" });
      }
    });
    this.groupButtons[key] = button;
    return button;
  };

  /** Open one group (its key) below the bars; options: push, quiet, response (one to render even
   * when the group's responses are folded: a token the URL names). */
  Inspector.prototype.showGroup = function (key, options) {
    options = options || {};
    var self = this;
    var g = this.detail.prompts.filter(function (x) { return groupKey(x) === key; })[0];
    this.tokens = [];
    if (this.selected) this.cleared();
    this.selected = null;
    this.container.removeAttribute("data-selected");
    this.groupKey = g ? key : null;
    this.container.setAttribute("data-group", g ? key : "");
    if (g) this.container.setAttribute("data-prompt", promptPrint(g.prompt));
    else this.container.removeAttribute("data-prompt");
    Object.keys(this.groupButtons).forEach(function (k) {
      self.groupButtons[k].setAttribute("aria-pressed", k === key ? "true" : "false");
    });
    this.barRows.forEach(function (row) {
      row.classList.toggle("unipo-bar-row--open", row.getAttribute("data-key") === key);
    });
    this.foldBars();
    this.groupView.id = this.uid + "-groupview";
    this.groupView.replaceChildren(g ? this.renderGroup(g, options.response) : el("p", { class: "unipo-group-note", text: "No group of this step was logged token by token." }));
    this.recolour();
    if (this.detail) this.noteMoment();
    if (!options.quiet) this.save(!!options.push);
  };

  /* A group of up to data.responses_all responses (8, the tiny set's group size) shows every one,
   * a larger group its first data.responses_shown (4), the rest one click away, so a set that
   * samples more answers per prompt keeps its pages within the length and node budgets. Both
   * numbers come from inspector.py (RESPONSES_ALL, RESPONSES_SHOWN), which the objectives
   * chapter's anatomy figure folds by too. */

  Inspector.prototype.renderGroup = function (g, need) {
    var self = this;
    var n = g.responses.length;
    var nCorrect = g.responses.filter(function (r) { return r.correct; }).length;
    // A log that records no correctness (prime-rl's token export) says so instead of "0/n correct".
    var correctKnown = g.responses.some(function (r) { return r.correct === true || r.correct === false; });
    var keys = this.detail.prompts.map(groupKey);
    var at = keys.indexOf(groupKey(g));
    function step(delta, label) {
      var target = keys[at + delta];
      var button = el("button", { type: "button", class: "unipo-btn unipo-group-step", text: label, disabled: target === undefined,
        "aria-label": delta < 0 ? "Previous logged group" : "Next logged group" });
      button.addEventListener("click", function () { self.showGroup(target, { push: true }); });
      return button;
    }
    var head = [el("span", { class: "unipo-group-name", text: this.groupName(g.index, g.filtered) }),
      el("span", { class: "unipo-fact", text: correctKnown ? nCorrect + "/" + n + " correct" : "correctness not logged" })];
    if (g.filtered) head.push(el("span", { class: "unipo-mark unipo-mark--filtered", text: "dropped by the sampling filter" }));
    else if (g.contribution !== null && g.contribution !== undefined) head.push(el("span", { class: "unipo-fact", text: "contribution " + fmtObjective(g.contribution, true) }));
    head.push(el("span", { class: "unipo-group-steps" }, [step(-1, "\u2039 group"), step(1, "group \u203a")]));
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
    var columns = el("li", { class: "unipo-response-head", "aria-hidden": "true" }, RESPONSE_HEAD.map(function (t) { return el("span", { text: t }); }));
    // A teaching moment about one response (a clipped token, the longest wrong answer) shows it
    // alone until the reader asks for the rest of its group; a large group shows its first
    // data.responses_shown (and any response a link names). The others are rendered when asked for.
    var m = this.mark;
    var focus = !this.showAll && m && m.step === this.detail.step && m.group === g.index && !g.filtered &&
      m.response !== null && m.response !== undefined && g.responses.some(function (r) { return r.index === m.response; });
    var limit = g.responses.length <= this.data.responses_all ? g.responses.length : this.data.responses_shown;
    // the first right and the first wrong answer show too, so a folded mixed group keeps both sides in view
    var sides = {};
    g.responses.forEach(function (r) {
      if ((r.correct === true || r.correct === false) && sides[r.correct] === undefined) sides[r.correct] = r.index;
    });
    var shown = g.responses.filter(function (r, i) {
      if (self.showAll) return true;
      if (focus) return r.index === m.response || r.index === need;
      return i < limit || r.index === need || r.index === sides[true] || r.index === sides[false];
    });
    var list = el("ol", { class: "unipo-responses" }, [columns].concat(shown.map(function (r) { return self.renderResponse(g, r); })));
    children.push(list);
    if (shown.length < g.responses.length) {
      var rest = g.responses.length - shown.length;
      var more = el("button", { type: "button", class: "unipo-btn unipo-responses-more",
        text: "Show the group's other " + rest + " response" + (rest === 1 ? "" : "s") });
      more.addEventListener("click", function () {
        self.showAll = true;
        var rendered = {};
        Array.prototype.forEach.call(list.querySelectorAll(".unipo-response"), function (li) { rendered[li.getAttribute("data-response")] = li; });
        var after = list.firstChild; // the column heads
        g.responses.forEach(function (r) {
          var li = rendered[String(r.index)] || self.renderResponse(g, r);
          after.after(li);
          after = li;
        });
        self.recolour();
        more.remove();
      });
      children.push(more);
    }
    return el("section", { class: "unipo-group" + (g.filtered ? " unipo-group--filtered" : ""), id: this.uid + "-g" + groupKey(g),
      "data-group": g.index, "data-key": groupKey(g), "data-filtered": g.filtered ? "1" : null }, children);
  };

  /** Every fact of a response in words (read by screen readers, and the row's tooltip). */
  function responseFacts(r) {
    var facts = [rewardText(r)];
    if (r.advantage !== null && r.advantage !== undefined) facts.push("advantage " + fmtSigned(r.advantage));
    facts.push(r.length + " tokens");
    if (r.contribution !== null && r.contribution !== undefined && !r.filtered) facts.push("contribution " + fmtObjective(r.contribution, true));
    if (r.truncated) facts.push("truncated at the generation budget");
    if (r.filtered) facts.push("filtered");
    return facts.join(" \u00b7 ");
  }

  /** How a group is named to the reader: "Group 3", or for a group the sampling filter dropped the
   *  name the build gave it ("Filtered group 2": inspector.py group_name, handed over as
   *  data.filtered_names[step][logged index]; a dropped group's logged index means nothing to a reader). */
  Inspector.prototype.groupName = function (index, filtered) {
    if (!filtered) return "Group " + index;
    var names = (this.data.filtered_names || {})[this.detail.step] || {};
    return names[index] || "Filtered group";
  };

  function responseMeta(r) {
    var mark = r.correct === true ? ["correct", "\u2713"] : r.correct === false ? ["wrong", "\u2717"] : ["unknown", "?"];
    var facts = responseFacts(r);
    var children = [
      el("span", { class: "unipo-response-index", text: "#" + r.index }),
      el("span", { class: "unipo-response-mark unipo-response-mark--" + mark[0], "aria-hidden": "true", text: mark[1] }),
      el("span", { class: "unipo-response-reward", "aria-hidden": "true", text: fmt(r.reward) }),
      el("span", { class: "unipo-response-adv", "aria-hidden": "true", text: r.advantage === null || r.advantage === undefined ? "\u2013" : fmtSigned(r.advantage) }),
      el("span", { class: "unipo-sr", text: mark[0] + ", " + facts }),
    ];
    if (r.truncated) children.push(el("span", { class: "unipo-mark unipo-mark--truncated", "aria-hidden": "true", text: "truncated" }));
    if (r.filtered) children.push(el("span", { class: "unipo-mark unipo-mark--filtered", "aria-hidden": "true", text: "filtered" }));
    return el("span", { class: "unipo-response-meta", title: facts }, children);
  }

  Inspector.prototype.renderResponse = function (g, r) {
    var self = this;
    var text;
    if (r.tokens) {
      var tk = r.tokens;
      text = el("div", { class: "unipo-tokens", role: "group",
        "aria-label": this.groupName(g.index, g.filtered) + ", response #" + r.index + ": " + tk.text.length + " tokens" });
      tk.text.forEach(function (piece, t) {
        var node = el("span", { class: "unipo-tok", role: "button", tabindex: t === 0 ? "0" : "-1", "aria-pressed": "false",
          "data-g": g.index, "data-r": r.index, "data-t": t });
        showToken(node, piece, self.mode);
        if (!tk.mask[t]) node.classList.add("unipo-tok--masked");
        text.appendChild(node);
        self.tokens.push({ node: node, group: g.index, groupKey: groupKey(g), response: r.index, t: t, tokens: tk, text: piece });
      });
    } else {
      text = el("div", { class: "unipo-tokens unipo-tokens--plain", text: r.text });
    }
    return el("li", { class: "unipo-response", id: this.uid + "-g" + groupKey(g) + "-r" + r.index, "data-response": r.index },
      [responseMeta(r), text]);
  };

  var RESPONSE_HEAD = ["#", "", "reward", "advantage", "response"];

  /* ---- colours and legend ---- */

  /** The scale of the current quantity over every logged token of the step (all groups). */
  Inspector.prototype.currentScale = function () {
    var q = this.quantityInfo(this.quantity);
    var values = [];
    this.detail.prompts.forEach(function (g) {
      g.responses.forEach(function (r) {
        var vs = r.tokens && r.tokens[q.source];
        if (!vs) return;
        for (var t = 0; t < vs.length; t++) if (r.tokens.mask[t]) values.push(S.colouredValue(q, vs[t]));
      });
    });
    return S.scaleFor(q, values);
  };

  Inspector.prototype.recolour = function () {
    if (!this.detail) return;
    var q = this.quantityInfo(this.quantity);
    var scale = this.currentScale();
    var ramps = this.data.ramps;
    var isDark = dark();
    this.tokens.forEach(function (item) {
      var vs = item.tokens[q.source];
      var node = item.node;
      if (!vs || !item.tokens.mask[item.t]) {
        node.style.background = "";
        node.style.color = "";
        node.setAttribute("aria-label", "\u201c" + item.text + "\u201d, not in the objective");
        return;
      }
      var bg = S.colourOf(ramps, scale, S.colouredValue(q, vs[item.t]), isDark);
      node.style.background = bg;
      node.style.color = S.textColour(bg);
      var shown = q.transform === "exp" ? Math.exp(vs[item.t]) : vs[item.t];
      node.setAttribute("aria-label", "\u201c" + item.text + "\u201d, " + q.label.toLowerCase() + " " + fmtSigned(shown));
    });
    this.renderLegend(q, scale);
    this.container.setAttribute("data-quantity", this.quantity);
  };

  Inspector.prototype.renderLegend = function (q, scale) {
    var ramps = this.data.ramps;
    var isDark = dark();
    var span = scale.hi - scale.lo;
    function at(v) { return span > 0 ? 100 * (v - scale.lo) / span : 50; }
    var stops = S.legendStops(ramps, scale, isDark).map(function (s) { return s[1] + " " + at(s[0]).toFixed(1) + "%"; });
    if (scale.kind === "diverging" && scale.lo < 0 && scale.hi > 0) {
      // The jump at zero (nonzero values start at the lightest tint): neutral exactly there.
      var zero = at(0).toFixed(1) + "%";
      var neutral = S.colourOf(ramps, scale, 0, isDark);
      stops.push(S.colourOf(ramps, scale, -1e-300, isDark) + " " + zero, neutral + " " + zero, S.colourOf(ramps, scale, 1e-300, isDark) + " " + zero);
      stops.sort(function (a, b) { return parseFloat(a.split(" ")[1]) - parseFloat(b.split(" ")[1]); });
    }
    function label(v) {
      return fmt(S.shownValue(q, v), 3);
    }
    var ticks = [[scale.lo, 0]];
    if (scale.kind === "diverging" && scale.lo < 0 && scale.hi > 0) ticks.push([0, at(0)]);
    if (scale.hi !== scale.lo) ticks.push([scale.hi, 100]);
    var empty = span === 0;
    var title = q.label + (empty ? ": " + label(scale.lo) + " on every token of this step" : "");
    var how = scale.kind === "diverging"
      ? "Centred on " + (q.transform === "log" ? "1" : "0") + " and symmetric; a nonzero value is at least lightly tinted."
      : "From this step's smallest value (lightest) to its largest.";
    this.legend.setAttribute("data-lo", String(S.shownValue(q, scale.lo)));
    this.legend.setAttribute("data-hi", String(S.shownValue(q, scale.hi)));
    this.legend.setAttribute("data-kind", scale.kind);
    this.legend.setAttribute("aria-label", q.label + " legend: from " + label(scale.lo) + " to " + label(scale.hi));
    this.legend.replaceChildren(
      el("span", { class: "unipo-legend-title", text: title }),
      el("span", { class: "unipo-legend-scale" }, [
        el("span", { class: "unipo-legend-bar", style: "background:linear-gradient(to right, " + (stops.length > 1 ? stops.join(", ") : stops[0].split(" ")[0] + " 0%, " + stops[0].split(" ")[0] + " 100%") + ")" }),
        el("span", { class: "unipo-legend-ticks" }, ticks.map(function (tk) {
          return el("span", { class: "unipo-legend-tick", "data-value": String(S.shownValue(q, tk[0])), style: "left:" + tk[1].toFixed(1) + "%", text: label(tk[0]) });
        })),
      ]),
      el("span", { class: "unipo-legend-note", text: q.description + " " + how })
    );
    this.clearTicks();
  };

  /** A middle tick (0 on a diverging scale) whose label would touch an end's label is left out:
   * the ends say the range, and the note says where the scale is centred. Measured after layout
   * (the bar's width is the page's); a hidden legend is measured when it is drawn again. */
  Inspector.prototype.clearTicks = function () {
    var ticks = this.legend.querySelectorAll(".unipo-legend-tick");
    if (ticks.length < 3) return;
    var first = ticks[0].getBoundingClientRect();
    var last = ticks[ticks.length - 1].getBoundingClientRect();
    if (!first.width || !last.width) return;
    var gap = 4;
    Array.prototype.slice.call(ticks, 1, -1).forEach(function (tick) {
      var r = tick.getBoundingClientRect();
      if (r.left < first.right + gap || r.right > last.left - gap) tick.remove();
    });
  };

  Inspector.prototype.setMode = function (mode, quiet) {
    var self = this;
    this.mode = mode;
    this.modeButtons.forEach(function (b) { b.setAttribute("aria-pressed", b.getAttribute("data-mode") === mode ? "true" : "false"); });
    this.tokens.forEach(function (item) { showToken(item.node, item.text, self.mode); });
    this.container.querySelector(".unipo-inspector-body").classList.toggle("unipo-mode-tokens", mode === "tokens");
    if (!quiet) this.save(false);
  };

  /* ---- selection, its numbers, keyboard: inspector-tokens.js ---- */
  Object.keys(T.methods).forEach(function (name) { Inspector.prototype[name] = T.methods[name]; });

  Inspector.prototype.attach = function () {
    var self = this;
    var body = this.container.querySelector(".unipo-inspector-body");
    body.addEventListener("click", function (event) {
      var node = event.target.closest ? event.target.closest(".unipo-tok") : null;
      if (!node) return;
      var item = self.itemOf(node);
      if (item) self.select(item, { reveal: true });
    });
    body.addEventListener("keydown", function (event) { self.onKey(event); });
  };

  /* ---- moments ---- */

  Inspector.prototype.highlightMoment = function (selectIt, scroll) {
    var m = this.mark;
    if (!m) return;
    var where = [];
    var groupNode = m.group !== null && m.group !== undefined ? this.groupView.querySelector(".unipo-group") : null;
    if (groupNode && Number(groupNode.getAttribute("data-group")) === m.group) {
      groupNode.classList.add("unipo-moment");
      where.push(this.groupName(m.group, groupNode.getAttribute("data-filtered") === "1").toLowerCase());
    } else {
      groupNode = null;
    }
    var responseNode = null;
    if (groupNode && m.response !== null && m.response !== undefined) {
      responseNode = groupNode.querySelector('.unipo-response[data-response="' + m.response + '"]');
      if (responseNode) {
        responseNode.classList.add("unipo-moment");
        where.push("response #" + m.response);
      }
    }
    var item = null;
    if (groupNode && m.token !== null && m.token !== undefined) {
      item = this.tokens.filter(function (it) { return it.response === m.response && it.t === m.token; })[0] || null;
      if (item) {
        item.node.classList.add("unipo-tok--moment");
        where.push("token " + m.token);
      }
    }
    this.status.textContent = "Teaching moment: " + m.label + (where.length ? " (" + where.join(", ") + ", outlined)." : ".") +
      (m.open_step !== m.step ? " It is at step " + m.step + ", which has no token detail; this is the nearest step that has." : "");
    if (item && selectIt) this.select(item, { quiet: true, fromMoment: true });
    var focusNode = (item && item.node) || responseNode || groupNode;
    if (scroll && focusNode) focusNode.scrollIntoView({ block: "center", behavior: "smooth" });
  };

  /* ------------------------------------------------------------ wiring */

  var observer = window.IntersectionObserver ? new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) {
      if (!entry.isIntersecting) return;
      observer.unobserve(entry.target);
      if (entry.target.__unipoInspector) entry.target.__unipoInspector.activate();
    });
  }, { rootMargin: "50% 0px" }) : null;

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
    instances.push(inspector);
    window.UNIPO.state.watch(inspector.id, function (params) {
      if (!inspector.active) return inspector.activate(params);
      return inspector.apply(params);
    });
    if (!observer || window.UNIPO.state.get(inspector.id)) inspector.activate();
    else observer.observe(container);
  }

  if (!V.inspectorListening) {
    V.inspectorListening = true;
    document.addEventListener(V.events.open_step, function (event) {
      var detail = event.detail || {};
      for (var i = instances.length - 1; i >= 0; i--) {
        var inspector = instances[i];
        if (!document.contains(inspector.container)) {
          instances.splice(i, 1); // left behind by instant navigation
          continue;
        }
        // An event may name one inspector (the explorer's own); else every inspector of the run.
        if (inspector.run === detail.run && (!detail.inspector || inspector.container.id === detail.inspector)) {
          // Restored from the URL (a reload, Back): when the URL holds this inspector's own state,
          // that state wins (it names the group and token too) and nothing is written.
          if (detail.restore && window.UNIPO.state.get(inspector.id)) continue;
          if (!inspector.active) {
            inspector.active = true;
            inspector.container.setAttribute("data-active", "1");
            inspector.buildControls();
            inspector.attach();
          }
          inspector.mark = null;
          inspector.open(Number(detail.step), detail.restore ? { quiet: true } : { push: true, status: detail.status });
        }
      }
    });
    document.addEventListener(V.events.scheme_change, function () {
      instances.forEach(function (inspector) { if (inspector.active) inspector.recolour(); });
    });
  }

  window.UNIPO.register("inspector", function (root) {
    Array.prototype.forEach.call(root.querySelectorAll(".unipo-inspector"), init);
  });
  // A guided path's "inspector" link (unipo.js UNIPO.pathView) opens the run's inspector showing its moment.
  window.UNIPO.pathView("inspector", function (link, byRun) {
    var moment = link.getAttribute("data-path-moment");
    return byRun(".unipo-inspector").filter(function (n) { return !moment || n.getAttribute("data-moment") === moment; })[0];
  });
})();
