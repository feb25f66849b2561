/*
 * UNIPO views: the Step Inspector's selected token (loaded before inspector.js, after
 * views-common.js and unipo-math.js): the selection, its numbers under its response (and how its
 * objective adds up), the keyboard. inspector.js adds these methods to its Inspector.
 */
(function () {
  "use strict";

  var V = window.UNIPOViews;
  if (!V || !V.el) {
    console.error("UNIPO: views-common.js must load before inspector-tokens.js");
    return;
  }
  var el = V.el;
  var fmt = V.fmt;
  var fmtSigned = V.fmtSigned;
  var methods = {};

  function klBeta(cfg) {
    return cfg && cfg.components.kl.kl_place === "loss" ? cfg.components.kl.params.beta : null; // a KL in the loss (the registry's kl_place)
  }

  function inViewport(node, margin) {
    var rect = node.getBoundingClientRect();
    var header = document.querySelector(".md-header");
    var top = header ? header.getBoundingClientRect().bottom : 0;
    return rect.top >= top - (margin || 0) && rect.bottom <= window.innerHeight + (margin || 0);
  }

  methods.itemOf = function (node) {
    for (var i = 0; i < this.tokens.length; i++) if (this.tokens[i].node === node) return this.tokens[i];
    return null;
  };

  /** Select a token: outlined, its numbers under its response, reported to the explainer;
   * options: quiet (the state came from the URL: nothing written), reveal (the reader chose it). */
  methods.select = function (item, options) {
    options = options || {};
    this.deselect(true);
    this.selected = item;
    item.fromMoment = !!options.fromMoment;
    item.node.classList.add("unipo-tok--selected");
    item.node.setAttribute("aria-pressed", "true");
    this.rove(item.node);
    this.showReadout(item);
    this.container.setAttribute("data-selected", [item.groupKey, item.response, item.t].join(":"));
    // The reader's click (or Enter) is a new history entry, as a guided path's step is: Back
    // returns to the token chosen before (or none), on this page.
    if (!options.quiet) this.save(true);
    // The numbers follow the token: when they run off the screen's foot, the token moves to the top (scroll-margin: inspector.css).
    var values = this.readout && this.readout.querySelector(".unipo-readout-values");
    if (options.reveal && values && !inViewport(values, 0)) item.node.scrollIntoView({ block: "start" });
    var detail = { run: this.run, algorithm: this.algorithm, step: this.step, group: item.group, response: item.response,
      token: item.t, inspector: this.uid, anchor: this.uid + "-g" + item.groupKey + "-r" + item.response };
    document.dispatchEvent(new CustomEvent(V.events.token, { detail: detail }));
  };

  methods.deselect = function (quiet) {
    if (this.selected) {
      this.selected.node.classList.remove("unipo-tok--selected");
      this.selected.node.setAttribute("aria-pressed", "false");
    }
    if (this.readout) this.readout.remove();
    var had = !!this.selected;
    this.readout = null;
    this.selected = null;
    this.container.removeAttribute("data-selected");
    if (had) this.cleared();
    if (!quiet) this.save(true); // closing the numbers is undone by Back too
  };

  /** No token is selected any more: the page's Algorithm Explainer stops showing one. */
  methods.cleared = function () {
    document.dispatchEvent(new CustomEvent(V.events.token_cleared, { detail: { run: this.run, algorithm: this.algorithm, inspector: this.uid } }));
  };

  // The readout's quantities recomputed from the token's logged inputs (one source with the
  // Explainer card below them): the same fields of the math port's breakdown.
  var RECOMPUTED = { objective: "objective", ratio: "ratio", kl: "kl" };

  /** The selected token's breakdown (unipo-math.js), or null when it cannot be computed. */
  methods.breakdownOf = function (item) {
    var M = window.UNIPO_MATH;
    var cfg = this.data.config;
    if (!M || !cfg || !item.tokens.mask[item.t]) return null;
    try {
      return M.breakdown(cfg, item.tokens);
    } catch (err) {
      return null;
    }
  };

  /**
   * The token's numbers right under its response: each quantity once (recomputed where the
   * Explainer recomputes it, so the two agree), how its objective adds up, and the Algorithm
   * Explainer's card for this token beside the token on every screen width: open when the reader
   * chose the token, folded when a teaching moment did.
   */
  methods.showReadout = function (item) {
    var self = this;
    if (this.readout) this.readout.remove(); // shown again (another colour, another comparison)
    var tk = item.tokens;
    var b = this.breakdownOf(item);
    var tinyShown = false;
    var close = el("button", { type: "button", class: "unipo-btn unipo-readout-close", "aria-label": "Close the token's numbers", text: "\u00d7" });
    close.addEventListener("click", function () {
      var node = self.selected && self.selected.node;
      self.deselect();
      if (node) node.focus();
    });
    var values = el("dl", { class: "unipo-readout-values" });
    this.data.quantities.forEach(function (q) {
      var vs = tk[q.source];
      if (!vs) return;
      var field = RECOMPUTED[q.key];
      var raw = b && field && b[field] ? b[field][item.t] : vs[item.t];
      var v = q.transform === "exp" ? Math.exp(raw) : raw;
      var small = (q.key === "objective" || q.key === "kl") && V.tiny(v);
      if (small) tinyShown = true;
      var text = small ? V.fmtQuantity(v) : q.kind === "signed" && q.transform !== "log" ? fmtSigned(v) : fmt(v); // a ratio has no sign
      values.appendChild(el("div", { class: "unipo-readout-value" + (q.key === self.quantity ? " unipo-readout-value--current" : ""),
        "data-key": q.key, "data-value": String(v) }, [el("dt", { text: q.label }), el("dd", { class: "unipo-num", text: text })]));
    });
    if (tk.weight) {
      values.appendChild(el("div", { class: "unipo-readout-value", "data-key": "weight", "data-value": String(tk.weight[item.t]) },
        [el("dt", { text: "Aggregation weight" }), el("dd", { class: "unipo-num", text: fmt(tk.weight[item.t]) })]));
    }
    var head = [el("strong", { class: "unipo-readout-token", text: V.tokenLabel(item.text) }),
      el("span", { class: "unipo-fact", text: "step " + this.step + " \u00b7 group " + item.group + " \u00b7 response #" + item.response + " \u00b7 token " + item.t })];
    if (tk.clip && tk.clip[item.t]) head.push(el("span", { class: "unipo-mark unipo-mark--clipped", text: tk.clip[item.t] > 0 ? "clipped high" : "clipped low" }));
    if (!tk.mask[item.t]) head.push(el("span", { class: "unipo-mark", text: "not in the objective" }));
    head.push(close);
    var parts = [el("div", { class: "unipo-readout-head" }, head), values];
    var found = V.explainToken && tk.mask[item.t] && this.detail ? V.findToken(this.detail, item.group, item.response) : null;
    var card = null;
    if (found && this.data.config) {
      try {
        card = V.explainToken(this.data.config, this.detail, found.group, found.response, item.t, this.algorithm).node;
      } catch (err) {
        console.error("UNIPO inspector: the token's card could not be built:", err);
      }
    }
    // How the objective adds up, in one line: the card below says it term by term when it is there.
    // (and when the log has no per-token objective: the card cannot check its own against the log)
    var sum = card && tk.objective ? null : this.objectiveSum(item, b);
    if (sum) parts.push(el("p", { class: "unipo-readout-sum", "data-value": sum.value === null ? null : String(sum.value), text: sum.text }));
    if (sum && sum.tiny) tinyShown = true;
    if (tinyShown && !(card && card.querySelector(".unipo-noise-note"))) {
      parts.push(el("p", { class: "unipo-readout-note unipo-noise-note", text: V.NOISE_NOTE }));
    }
    // A token the page chose (a teaching moment, opened as the inspector comes into view) shows its
    // numbers with the card folded, one click away: open, its 400-600 px made every chapter with a
    // moment taller than its budget once read (issue 47). A token the reader chooses opens it.
    if (card && item.fromMoment) card.open = false;
    if (card) parts.push(card);
    this.readout = el("div", { class: "unipo-token-readout", role: "region", "aria-label": "Numbers of the selected token", "aria-live": "polite" }, parts);
    var li = item.node.closest(".unipo-response");
    li.appendChild(this.readout);
  };

  /**
   * How the selected token's objective adds up, in one line, from the breakdown ``b`` (the readout's
   * source), for a token the card beside it cannot explain or whose log has no per-token objective:
   * the clip kind's own rows, as its registry entry sends them (explainer.js kindRows: "label: how =
   * value", the surrogate's last), then the rollout correction's weight and the KL in the loss. A kind
   * whose data gives no surrogate row is said to be not logged, never computed by another kind's rule.
   */
  methods.objectiveSum = function (item, b) {
    var cfg = this.data.config;
    if (!b) return null;
    var q = V.fmtQuantity;
    var t = item.t;
    var logged = !!item.tokens.objective;
    var kind = cfg.components.clip.kind;
    var found = this.detail && V.kindRows ? V.findToken(this.detail, item.group, item.response) : null;
    var rows = null;
    try {
      rows = found ? V.kindRows(cfg, this.detail, found.group, found.response, t, "clip") : null;
    } catch (err) {
      console.error("UNIPO inspector: the " + kind + " term could not be recomputed:", err);
    }
    var at = rows ? rows.map(function (r) { return r.key; }).indexOf("surrogate") : -1;
    if (at < 0) {
      return logged ? null : { text: "Objective: not logged for this token, and its \u201c" + kind +
        "\u201d term cannot be recomputed on this page.", tiny: false, value: null };
    }
    var terms = rows.slice(0, at + 1).filter(function (r) { return typeof r.value === "number"; }).map(function (r) {
      return r.label + ": " + (r.how ? r.how + " = " : "") + (r.key === "surrogate" ? q(r.value, true) : fmt(r.value));
    });
    var text = (logged ? "Objective" : "Objective, not logged, recomputed from the token\u2019s inputs") + ": " + terms.join("; ");
    if (b.correction) text += "; times the rollout correction\u2019s weight " + fmt(b.correction[t]);
    var beta = klBeta(cfg);
    if (beta && b.kl) text += "; minus \u03b2\u00b7KL = " + fmt(beta) + " \u00d7 " + q(b.kl[t]);
    text += ". Token objective " + q(b.objective[t], true);
    var tinyHere = V.tiny(b.surrogate[t]) || V.tiny(b.objective[t]) || (beta && b.kl && V.tiny(b.kl[t]));
    return { text: text + ".", tiny: !!tinyHere, value: b.objective[t] };
  };

  methods.rove = function (node) {
    var group = node.parentNode;
    Array.prototype.forEach.call(group.querySelectorAll('.unipo-tok[tabindex="0"]'), function (n) {
      if (n !== node) n.setAttribute("tabindex", "-1");
    });
    node.setAttribute("tabindex", "0");
  };

  methods.onKey = function (event) {
    var node = event.target;
    if (event.key === "Escape" && this.selected) {
      var selected = this.selected.node;
      this.deselect();
      selected.focus();
      return;
    }
    if (!node.classList || !node.classList.contains("unipo-tok")) return;
    var item = this.itemOf(node);
    if (!item) return;
    var key = event.key;
    if (key === "Enter" || key === " " || key === "Spacebar") {
      event.preventDefault();
      this.select(item, { reveal: true });
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

  V.inspectorTokens = { methods: methods, klBeta: klBeta, inViewport: inViewport };
})();
