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
    return cfg && cfg.components.kl.kind === "in_loss" ? cfg.components.kl.params.beta : null;
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

  /** Select a token: outlined, its numbers under its response, reported to the explainer. */
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
    if (!options.quiet) this.save(false);
    if (options.reveal && this.readout && !inViewport(this.readout, 0)) this.readout.scrollIntoView({ block: "nearest", behavior: "smooth" });
    var detail = { run: this.run, algorithm: this.algorithm, step: this.step, group: item.group, response: item.response,
      token: item.t, inspector: this.uid, anchor: this.uid + "-g" + item.groupKey + "-r" + item.response };
    document.dispatchEvent(new CustomEvent("unipo:token", { detail: detail }));
  };

  methods.deselect = function (quiet) {
    if (this.selected) {
      this.selected.node.classList.remove("unipo-tok--selected");
      this.selected.node.setAttribute("aria-pressed", "false");
    }
    if (this.readout) this.readout.remove();
    this.readout = null;
    this.selected = null;
    this.container.removeAttribute("data-selected");
    if (!quiet) this.save(false);
  };

  methods.showReadout = function (item) {
    var self = this;
    var tk = item.tokens;
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
      var v = q.transform === "exp" ? Math.exp(vs[item.t]) : vs[item.t];
      values.appendChild(el("div", { class: "unipo-readout-value" + (q.key === self.quantity ? " unipo-readout-value--current" : ""),
        "data-key": q.key, "data-value": String(v) }, [el("dt", { text: q.label }), el("dd", { class: "unipo-num", text: q.kind === "signed" && q.transform !== "log" ? fmtSigned(v) : fmt(v) })]));  // a ratio has no sign
    });
    if (tk.weight) {
      values.appendChild(el("div", { class: "unipo-readout-value", "data-key": "weight", "data-value": String(tk.weight[item.t]) },
        [el("dt", { text: "Aggregation weight" }), el("dd", { class: "unipo-num", text: fmt(tk.weight[item.t]) })]));
    }
    var head = [el("strong", { class: "unipo-readout-token", text: "\u201c" + V.isolate(item.text) + "\u201d" }),
      el("span", { class: "unipo-fact", text: "group " + item.group + " \u00b7 response #" + item.response + " \u00b7 token " + item.t })];
    if (tk.clip && tk.clip[item.t]) head.push(el("span", { class: "unipo-mark unipo-mark--clipped", text: tk.clip[item.t] > 0 ? "clipped high" : "clipped low" }));
    if (!tk.mask[item.t]) head.push(el("span", { class: "unipo-mark", text: "not in the objective" }));
    head.push(close);
    var parts = [el("div", { class: "unipo-readout-head" }, head), values];
    var sum = this.objectiveSum(item);
    if (sum) parts.push(el("p", { class: "unipo-readout-sum", text: sum }));
    var explainer = document.querySelector('.unipo-explainer[data-algorithm="' + CSS.escape(this.algorithm) + '"]');
    if (explainer) {
      parts.push(el("p", { class: "unipo-readout-more" }, [
        el("a", { href: "#" + explainer.id + "-c-token", text: "How each number is computed, in the Algorithm Explainer \u2191" }),
        " (your browser's back button returns here)"]));
    }
    this.readout = el("div", { class: "unipo-token-readout", role: "region", "aria-label": "Numbers of the selected token", "aria-live": "polite" }, parts);
    var li = item.node.closest(".unipo-response");
    li.appendChild(this.readout);
  };

  /** How the selected token's objective adds up, recomputed with the math port (explainer's sum). */
  methods.objectiveSum = function (item) {
    var M = window.UNIPO_MATH;
    var cfg = this.data.config;
    if (!M || !cfg || !item.tokens.mask[item.t]) return null;
    try {
      var b = M.breakdown(cfg, item.tokens);
      var t = item.t;
      var a = item.tokens.advantage[t];
      var text = "Objective = ";
      if (b.eps_low === null && b.eps_high === null) text += "\u03c1\u00b7\u00c2 = " + fmt(b.ratio[t]) + " \u00d7 " + fmt(a);
      else text += "min(\u03c1\u00c2, clip(\u03c1)\u00c2) = min(" + fmt(b.ratio[t]) + " \u00d7 " + fmt(a) + ", " +
        fmt(Math.min(Math.max(b.ratio[t], 1 - b.eps_low), 1 + b.eps_high)) + " \u00d7 " + fmt(a) + ")";
      text += " = " + fmtSigned(b.surrogate[t]);
      var beta = klBeta(cfg);
      if (beta && b.kl) text += ", minus \u03b2\u00b7KL = " + fmt(beta) + " \u00d7 " + fmt(b.kl[t]) + ": " + fmtSigned(b.objective[t]);
      return text + ".";
    } catch (err) {
      return null;
    }
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
