/*
 * UNIPO views: the Algorithm Explainer and the comparison selector (view code only).
 * Each view reads its data from the <template class="unipo-data" id="<view id>-data"> the build
 * wrote next to it. A selected token's numbers are recomputed with the one math port,
 * unipo-math.js (window.UNIPO_MATH), from the token's logged inputs; shared helpers come from
 * views-common.js (window.UNIPOViews). The build loads all three on the pages that use them.
 * Security: text from a log or a spec only ever reaches the page through textContent (or as the
 * TeX source of a formula, which KaTeX renders trusting only \htmlClass with the project's own classes: unipo.js).
 */
(function (global) {
  "use strict";

  var V = global.UNIPOViews;
  var M = global.UNIPO_MATH;
  if (!V || !V.el || !M) {
    console.error("UNIPO: unipo-math.js and views-common.js must load before explainer.js");
    return;
  }
  if (V.__explainer) return; // loaded again by an instant navigation: already set up
  V.__explainer = true;
  var el = V.el;
  var fmt = V.fmt;
  var fmtSigned = V.fmtSigned;
  var readData = V.readData;
  var findToken = V.findToken;
  var sum = M.sum, mean = M.mean, std = M.std;

  function kindOf(cfg, slot) {
    return cfg.components[slot].kind;
  }

  function paramOf(cfg, slot, name, fallback) {
    var p = cfg.components[slot].params || {};
    return p[name] === undefined || p[name] === null ? fallback : p[name];
  }

  /* ============================================================ the explainer */

  var SLOT_LABELS = {
    advantage: "Advantage", ratio: "Importance ratio", clip: "Clip", kl: "KL penalty",
    aggregation: "Aggregation", filter: "Sampling filter", shaping: "Reward shaping",
  };

  /** A row of a live table: label, how it is computed, the value (with its full precision in data-value). */
  // Quantities computed from float32 log-probabilities: below V.NOISE they read 0* (V.NOISE_NOTE).
  // A token's terms only: a weighted term or a sum of them is small because the weight is.
  var NOISY = { surrogate: 1, unclipped: 1, clipped: 1, kl: 1, kl_term: 1, objective: 1 };
  var fmtQ = V.fmtQuantity;

  function row(label, how, value, key, extraText) {
    var valueCell;
    if (typeof value === "number") {
      var small = !!(key && NOISY[key] && V.tiny(value));
      valueCell = el("td", { class: "unipo-num" }, [
        el("span", { class: "unipo-num-value", "data-key": key || null, "data-value": String(value), "data-tiny": small ? "1" : null,
          text: small ? fmtQ(value) : fmt(value) }),
      ]);
    } else {
      valueCell = el("td", { class: "unipo-num" }, [value === null || value === undefined ? "" : String(value)]);
    }
    if (extraText) valueCell.appendChild(el("span", { class: "unipo-num-note", text: " " + extraText }));
    return el("tr", null, [el("th", { scope: "row", text: label }), el("td", { class: "unipo-how", text: how || "" }), valueCell]);
  }

  function table(rows) {
    return el("div", { class: "unipo-table-wrap" }, [el("table", { class: "unipo-live-table" }, [el("tbody", null, rows)])]);
  }

  function para(text, cls) {
    return el("p", { class: cls || null, text: text });
  }

  function matches(a, b) {
    return Math.abs(a - b) <= 1e-6 * (1 + Math.abs(b));
  }

  function checkText(computed, logged) {
    if (logged === null || logged === undefined) return "";
    return matches(computed, logged) ? "\u2713 equals the log" : "\u2717 differs from the log (" + fmt(logged) + ")";
  }

  function tokenLabel(ctx) {
    return "Step " + ctx.step.step + ", group " + ctx.group.index + ", response #" + ctx.response.index +
      ", token " + ctx.t + " " + V.tokenLabel(ctx.tokens.text[ctx.t]);
  }

  function liveRatio(ctx) {
    var cfg = ctx.cfg, tk = ctx.tokens, t = ctx.t, b = ctx.b;
    var kind = kindOf(cfg, "ratio");
    var rows = [];
    if (kind === "none") {
      rows.push(row("ratio \u03c1", "\u03c0\u03b8 / sg[\u03c0\u03b8] = exp(log \u03c0\u03b8 \u2212 log \u03c0\u03b8)", b.ratio[t], "ratio"));
    } else {
      rows.push(row("log \u03c0\u03b8(token)", "the policy being trained, at this update", tk.logp[t], "logp"));
      rows.push(row("log \u03c0old(token)", "the policy that sampled it", tk.old_logp[t], "old_logp"));
      if (kind === "sequence") {
        rows.push(row("sequence ratio s\u1d62", "exp(mean over the " + sum(tk.mask) + " tokens of log \u03c0\u03b8 \u2212 log \u03c0old)", b.ratio[t], "ratio"));
      } else {
        rows.push(row("ratio \u03c1", "exp(log \u03c0\u03b8 \u2212 log \u03c0old)", b.ratio[t], "ratio", checkText(b.ratio[t], tk.ratio[t])));
      }
    }
    if (tk.sample_logp) {
      // Mixed-precision runs log the log-prob the token was sampled with beside the training pass's:
      // the second ratio, and the truncated importance-sampling weight min(1, it).
      var mismatch = Math.exp(tk.old_logp[t] - tk.sample_logp[t]);
      rows.push(row("log \u03c0sample(token)", "the log-prob it was sampled with (the decoding pass)", tk.sample_logp[t], "sample_logp"));
      rows.push(row("sampling ratio", "\u03c0old / \u03c0sample = exp(log \u03c0old \u2212 log \u03c0sample): training pass against sampling pass", mismatch, "sample_ratio"));
      rows.push(row("truncated IS weight", "min(1, \u03c0old / \u03c0sample)", Math.min(1, mismatch), "tis_weight"));
    }
    return [table(rows)];
  }

  function groupRewards(group) {
    return group.responses.map(function (r) { return r.reward; });
  }

  function liveAdvantage(ctx) {
    var cfg = ctx.cfg, tk = ctx.tokens, t = ctx.t;
    var kind = kindOf(cfg, "advantage");
    var r = ctx.response.reward;
    var rows = [];
    var out = [];
    var logged = tk.advantage[t];
    var unrecorded = groupRewards(ctx.group).some(function (x) { return x === null || x === undefined; });
    if (cfg.components.advantage.group_baseline && unrecorded) {
      // An imported log without rewards (prime-rl's token export): nothing to recompute the advantage from.
      out.push(para("The log does not record this group's rewards, so the advantage cannot be recomputed here: it is the trainer's own."));
      rows.push(row("advantage \u00c2", "as logged", logged, "advantage"));
    } else if (cfg.components.advantage.group_baseline) {
      var rewards = groupRewards(ctx.group);
      var pos = ctx.group.responses.indexOf(ctx.response);
      out.push(para("Rewards of the group's " + rewards.length + " responses: " +
        rewards.map(function (x) { return fmt(x); }).join(", ") + " (this response: " + fmt(r) + ")."));
      var m = mean(rewards);
      rows.push(row("mean of the group", "baseline", m, "reward_mean"));
      var computed;
      if (kind === "group_zscore") {
        var ddof = paramOf(cfg, "advantage", "std_ddof", 1);
        var eps = paramOf(cfg, "advantage", "eps", 1e-6);
        var s = std(rewards, ddof);
        rows.push(row("std of the group", ddof === 1 ? "sample std (divides by n \u2212 1 = " + (rewards.length - 1) + ")" : "population std (divides by n = " + rewards.length + ")", s, "reward_std"));
        rows.push(row("\u03b5", "added to the std", eps, "eps"));
        computed = M.groupAdvantages(cfg, rewards)[pos];
        var how = Math.max.apply(null, rewards) === Math.min.apply(null, rewards)
          ? "every reward is equal: 0 for the whole group"
          : "(r\u1d62 \u2212 mean) / (std + \u03b5) = (" + fmt(r) + " \u2212 " + fmt(m) + ") / (" + fmt(s) + " + " + fmt(eps) + ")";
        rows.push(row("advantage \u00c2", how, computed, "advantage", checkText(computed, logged)));
      } else if (kind === "group_mean") {
        computed = M.groupAdvantages(cfg, rewards)[pos];
        rows.push(row("advantage \u00c2", "r\u1d62 \u2212 mean = " + fmt(r) + " \u2212 " + fmt(m), computed, "advantage", checkText(computed, logged)));
      } else {
        computed = M.groupAdvantages(cfg, rewards)[pos];
        rows.push(row("advantage \u00c2", "r\u1d62 \u2212 mean of the other " + (rewards.length - 1) + " rewards", computed, "advantage", checkText(computed, logged)));
      }
    } else if (kind === "gae") {
      rows.push(row("reward r\u1d62", "on the last token (plus \u2212\u03b2\u00b7KL on every token)", r, "reward"));
      if (tk.value) rows.push(row("critic value V(s\u209c)", "the critic's prediction at this token", tk.value[t], "value"));
      if (tk.return) rows.push(row("return R\u209c", "the \u03bb-return, the critic's target", tk.return[t], "return"));
      if (tk.value && tk.return) {
        var gae = tk.return[t] - tk.value[t];
        rows.push(row("advantage \u00c2", "R\u209c \u2212 V(s\u209c) (GAE, \u03b3 " + fmt(paramOf(cfg, "advantage", "gamma", 1)) + ", \u03bb " + fmt(paramOf(cfg, "advantage", "lam", 0.95)) + ")", gae, "advantage", checkText(gae, logged)));
      } else {
        rows.push(row("advantage \u00c2", "as logged", logged, "advantage"));
      }
    } else if (kind === "reinforce_return") {
      rows.push(row("reward r\u1d62", "the response's reward", r, "reward"));
      if (tk.return) {
        rows.push(row("return G\u209c", "reward to go from this token", tk.return[t], "return"));
        rows.push(row("baseline", paramOf(cfg, "advantage", "baseline", "batch_mean") === "batch_mean" ? "mean reward of the batch (G\u209c \u2212 \u00c2)" : "none", tk.return[t] - logged, "baseline"));
      }
      rows.push(row("advantage \u00c2", "G\u209c \u2212 baseline", logged, "advantage"));
    } else {
      if (tk.return) rows.push(row("return G\u209c", "reward to go from this token", tk.return[t], "return"));
      rows.push(row("advantage \u00c2", "whitened over the batch", logged, "advantage"));
    }
    out.push(table(rows));
    return out;
  }

  function liveClip(ctx) {
    var tk = ctx.tokens, t = ctx.t, b = ctx.b;
    // The clip acts on the algorithm's own ratio: a token's ρ, or GSPO's sequence ratio sᵢ.
    var r = ctx.cfg.components.ratio.symbol || "\u03c1";
    var rho = b.ratio[t], a = tk.advantage[t];
    var rows = [];
    if (b.eps_low === null && b.eps_high === null) {
      rows.push(row("\u2113 = " + r + "\u00b7\u00c2", fmt(rho) + " \u00d7 " + fmt(a) + " (nothing is clipped)", b.surrogate[t], "surrogate"));
      return [table(rows)];
    }
    var low = 1 - b.eps_low, high = 1 + b.eps_high;
    var unclipped = rho * a;
    var clippedValue = Math.min(Math.max(rho, low), high) * a;
    rows.push(row("bounds", "[1 \u2212 " + fmt(b.eps_low) + ", 1 + " + fmt(b.eps_high) + "]", "[" + fmt(low) + ", " + fmt(high) + "]"));
    rows.push(row("unclipped " + r + "\u00b7\u00c2", fmt(rho) + " \u00d7 " + fmt(a), unclipped, "unclipped"));
    rows.push(row("clipped clip(" + r + ")\u00b7\u00c2", fmt(Math.min(Math.max(rho, low), high)) + " \u00d7 " + fmt(a), clippedValue, "clipped"));
    rows.push(row("\u2113 = min(\u2026)", "the smaller of the two", b.surrogate[t], "surrogate"));
    var side = b.clip_side[t];
    var branch;
    if (side === 1) branch = "The clipped branch won on the high side: " + r + " > " + fmt(high) + " with \u00c2 > 0, so this token no longer pushes its probability up (its gradient is 0).";
    else if (side === -1) branch = "The clipped branch won on the low side: " + r + " < " + fmt(low) + " with \u00c2 < 0, so this token no longer pushes its probability down (its gradient is 0).";
    else if (unclipped === clippedValue) branch = "Both branches are equal: " + r + " is inside the bounds (or \u00c2 = 0), so the gradient flows unclipped.";
    else branch = "The unclipped branch is the smaller: " + r + " is outside the bounds on the side the advantage pushes away from, so the gradient still flows.";
    var logged = tk.clip ? tk.clip[t] : null;
    var out = [table(rows), para(branch, "unipo-live-branch")];
    if (logged !== null && logged !== side) out.push(para("The log says clip side " + logged + ", the recomputation " + side + ".", "unipo-live-warn"));
    return out;
  }

  var KL_HOW = {
    k1: "log \u03c0\u03b8 \u2212 log \u03c0ref",
    k2: "\u00bd (log \u03c0ref \u2212 log \u03c0\u03b8)\u00b2",
    k3: "exp(log \u03c0ref \u2212 log \u03c0\u03b8) \u2212 (log \u03c0ref \u2212 log \u03c0\u03b8) \u2212 1",
  };

  function liveKl(ctx) {
    var cfg = ctx.cfg, tk = ctx.tokens, t = ctx.t, b = ctx.b;
    var kind = kindOf(cfg, "kl");
    if (kind === "none") return [para("This algorithm has no KL term: nothing ties the policy to the reference model.")];
    var est = paramOf(cfg, "kl", "estimator");
    var beta = paramOf(cfg, "kl", "beta");
    var rows = [];
    if (kind === "in_loss") {
      if (tk.ref_logp) rows.push(row("log \u03c0ref(token)", "the frozen reference model", tk.ref_logp[t], "ref_logp"));
      rows.push(row("D (" + est + ")", KL_HOW[est] || est, b.kl[t], "kl", tk.kl ? checkText(b.kl[t], tk.kl[t]) : ""));
      rows.push(row("\u03b2", "KL coefficient", beta, "beta"));
      rows.push(row("\u2212\u03b2\u00b7D", "subtracted from this token's objective", -beta * b.kl[t], "kl_term"));
      return [table(rows)];
    }
    rows.push(row("D (" + est + ")", "estimated when the response was sampled: " + (KL_HOW[est] || est).replace(/\u03c0\u03b8/g, "\u03c0old"), b.kl ? b.kl[t] : null, "kl"));
    rows.push(row("\u03b2", "KL coefficient", beta, "beta"));
    rows.push(row("\u2212\u03b2\u00b7D", "added to this token's reward before the advantage", b.kl ? -beta * b.kl[t] : null, "kl_term"));
    return [table(rows), para("The penalty is already inside the advantage \u00c2; nothing is subtracted from the objective.")];
  }

  function liveObjective(ctx) {
    var cfg = ctx.cfg, tk = ctx.tokens, t = ctx.t, b = ctx.b;
    var inLoss = cfg.components.kl.kl_place === "loss";
    var how = inLoss
      ? "\u2113 \u2212 \u03b2\u00b7D = " + fmtQ(b.surrogate[t]) + " \u2212 " + fmt(paramOf(cfg, "kl", "beta")) + " \u00d7 " + fmtQ(b.kl[t])
      : "\u2113 = " + fmtQ(b.surrogate[t]);
    var out = [];
    out.push(table([row("token objective", how, b.objective[t], "objective", checkText(b.objective[t], tk.objective[t]))]));
    return out;
  }

  function liveAggregation(ctx) {
    var cfg = ctx.cfg, tk = ctx.tokens, t = ctx.t, b = ctx.b, step = ctx.step;
    var kind = kindOf(cfg, "aggregation");
    var n = sum(step.groups.map(function (g) { return g.size; }));
    var length = sum(tk.mask);
    var logged = tk.weight[t];
    var rows = [];
    var w, how;
    if (kind === "seq_mean_token_mean") {
      w = M.tokenWeight(cfg, { responses: n, length: length });
      how = "1 / (N \u00b7 |o\u1d62|) = 1 / (" + n + " \u00d7 " + length + ")";
    } else if (kind === "token_mean") {
      var total = Math.round(1 / logged);
      w = M.tokenWeight(cfg, { responses: n, length: length, tokens: total });
      how = "1 / \u03a3|o\u2c7c| = 1 / " + total + " (the update's tokens, from the log)";
    } else if (kind === "constant_normalizer") {
      var L = paramOf(cfg, "aggregation", "normalizer");
      w = M.tokenWeight(cfg, { responses: n, length: length });
      how = "1 / (N \u00b7 L) = 1 / (" + n + " \u00d7 " + L + ")";
    } else {
      w = M.tokenWeight(cfg, { responses: n, length: length });
      how = "1 / N = 1 / " + n;
    }
    rows.push(row("N", "responses in this update (" + step.groups.length + " groups)", n, "n_responses"));
    rows.push(row("|o\u1d62|", "this response's length", length, "length"));
    rows.push(row("weight w", how, w, "weight", checkText(w, logged)));
    rows.push(row("w \u00b7 objective", fmt(logged) + " \u00d7 " + fmtQ(b.objective[t]), logged * b.objective[t], "weighted"));
    var contribution = 0;
    for (var i = 0; i < tk.weight.length; i++) contribution += tk.weight[i] * tk.objective[i];
    rows.push(row("this response", "\u03a3\u209c w \u00b7 objective", contribution, "response_contribution", checkText(contribution, ctx.response.contribution)));
    if (ctx.group.contribution !== null && ctx.group.contribution !== undefined) {
      rows.push(row("its group", "sum over the group's responses", ctx.group.contribution, "group_contribution"));
    }
    rows.push(row("step objective J", "sum over every group of the update", step.objective, "step_objective"));
    return [table(rows)];
  }

  function liveFilter(ctx) {
    var cfg = ctx.cfg, step = ctx.step;
    var kind = kindOf(cfg, "filter");
    var g = ctx.group;
    var k = g.responses.filter(function (r) { return r.correct; }).length;
    var G = g.responses.length;
    var out = [];
    if (kind === "none") {
      out.push(para("This token's group has " + k + "/" + G + " correct answers. Every group is trained on" +
        (k === 0 || k === G ? ", including this one although its advantages are all 0." : ".")));
      return out;
    }
    out.push(para("This token's group has " + k + "/" + G + " correct answers: " +
      (k > 0 && k < G ? "0 < " + k + " < " + G + ", so the filter kept it." : "the filter would have dropped it.")));
    var dropped = step.filtered_groups || [];
    out.push(para(dropped.length
      ? "Before this update the filter dropped " + dropped.length + " logged group(s): " +
        dropped.map(function (d) { return "group " + d.index + " (" + d.n_correct + "/" + d.size + " correct)"; }).join(", ") + "."
      : "The log lists no dropped groups for this step (drops are logged on the first update of a rollout)."));
    return out;
  }

  function liveShaping(ctx) {
    var cfg = ctx.cfg;
    var kind = kindOf(cfg, "shaping");
    var resp = ctx.response;
    var out = [];
    if (kind === "none") {
      out.push(para("The reward is used as it is: r\u1d62 = " + fmt(resp.reward) + "."));
      return out;
    }
    var rows = [];
    var maxLength = paramOf(cfg, "shaping", "max_length");
    var cache = paramOf(cfg, "shaping", "cache_length");
    rows.push(row("|o\u1d62|", "this response's length", resp.length, "length"));
    if (maxLength && cache) {
      var pen = M.overlongPenalty(resp.length, maxLength, cache, paramOf(cfg, "shaping", "penalty"));
      var comp = resp.reward_components ? resp.reward_components.shaping : undefined;
      rows.push(row("L_max, L_cache", "the budget and the ramp before it", maxLength + ", " + cache));
      rows.push(row("R_length", resp.length <= maxLength - cache ? "0: shorter than L_max \u2212 L_cache" : "penalty \u00d7 (L_max \u2212 L_cache \u2212 |o\u1d62|) / L_cache", pen, "shaping", comp === undefined ? "" : checkText(pen, comp)));
    }
    rows.push(row("reward r\u1d62", "after shaping", resp.reward, "reward"));
    out.push(table(rows));
    return out;
  }

  var LIVE = {
    ratio: liveRatio, advantage: liveAdvantage, clip: liveClip, kl: liveKl, objective: liveObjective,
    aggregation: liveAggregation, filter: liveFilter, shaping: liveShaping,
  };

  function setLive(container, fill) {
    Array.prototype.forEach.call(container.querySelectorAll(".unipo-live"), function (block) {
      var name = block.getAttribute("data-live");
      var children;
      try {
        children = fill(name);
      } catch (err) {
        console.error("UNIPO explainer:", err);
        children = [para("These numbers could not be computed: " + err.message, "unipo-live-warn")];
      }
      block.replaceChildren.apply(block, children);
    });
  }

  function showToken(container, detail) {
    var data = container.__unipo;
    var info = V.runs[detail.run];
    if (!info) return;
    var cfg = info.config || data.config;
    container.setAttribute("data-token", [detail.run, detail.step, detail.group, detail.response, detail.token].join(":"));
    setLive(container, function (name) { return name === "where" ? [para("Loading step " + detail.step + "\u2026", "unipo-live-hint")] : []; });
    var request = (data.request = {});
    V.loadStep(V.stepUrl(info, detail.step)).then(function (step) {
      if (data.request !== request) return; // a newer selection won
      var found = findToken(step, detail.group, detail.response);
      if (!found || !found.response.tokens) throw new Error("token not found in step " + detail.step);
      var tokens = found.response.tokens;
      var ctx = { cfg: cfg, step: step, group: found.group, response: found.response, tokens: tokens, t: detail.token,
                  b: M.breakdown(cfg, tokens) };
      setLive(container, function (name) {
        if (name === "where") return [para(tokenLabel(ctx), "unipo-live-where")];
        return LIVE[name] ? LIVE[name](ctx) : [];
      });
      container.setAttribute("data-live-ready", "1");
    }).catch(function (err) {
      if (data.request !== request) return;
      console.error("UNIPO explainer:", err);
      setLive(container, function (name) { return name === "where" ? [para("The token's data could not be loaded: " + err.message, "unipo-live-warn")] : []; });
    });
  }

  function openSlot(container, slot, focus) {
    var data = container.__unipo;
    var card = container.querySelector('.unipo-card[data-card="' + data.card_of_slot[slot] + '"]');
    if (!card) return;
    card.open = true;
    Array.prototype.forEach.call(container.querySelectorAll(".unipo-slot-section--active, .unipo-part--active"), function (n) {
      n.classList.remove("unipo-slot-section--active", "unipo-part--active");
    });
    var section = card.querySelector('.unipo-slot-section[data-slot="' + slot + '"]');
    var target = section || card;
    target.classList.add("unipo-slot-section--active");
    Array.prototype.forEach.call(container.querySelectorAll('.unipo-part[data-slot="' + slot + '"]'), function (b) {
      b.classList.add("unipo-part--active");
    });
    if (focus) {
      target.setAttribute("tabindex", "-1");
      target.focus({ preventScroll: true });
    }
    target.scrollIntoView({ block: "nearest", behavior: "smooth" });
  }

  function slotOf(node) {
    var m = /(?:^|\s)unipo-slot-([a-z]+)(?:\s|$)/.exec(node.getAttribute("class") || "");
    return m ? m[1] : null;
  }

  function initExplainer(container) {
    if (container.__unipo) return;
    var data = readData(container);
    if (!data) return;
    container.__unipo = data;
    // Parts of the formula: clickable and keyboard operable (once the formula is typeset, which
    // may be when the reader scrolls to it).
    function decorate() {
      Array.prototype.forEach.call(container.querySelectorAll(".unipo-explainer-formula .unipo-slot"), function (node) {
        var slot = slotOf(node);
        if (!slot || node.hasAttribute("role")) return;
        node.setAttribute("role", "button");
        node.setAttribute("tabindex", "0");
        node.setAttribute("aria-label", (SLOT_LABELS[slot] || slot) + ": open its card");
        node.setAttribute("title", (SLOT_LABELS[slot] || slot) + " (click to open its card)");
      });
    }
    decorate();
    var formula = container.querySelector(".unipo-explainer-formula");
    if (formula) formula.addEventListener("unipo:typeset", decorate);
    function activate(event) {
      var node = event.target.closest ? event.target.closest(".unipo-slot") : null;
      if (!node || !formula.contains(node)) return;
      event.preventDefault();
      event.stopPropagation();
      openSlot(container, slotOf(node), event.type === "keydown");
    }
    if (formula) {
      formula.addEventListener("click", activate);
      formula.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") activate(event);
      });
    }
    Array.prototype.forEach.call(container.querySelectorAll(".unipo-part"), function (button) {
      button.addEventListener("click", function () { openSlot(container, button.getAttribute("data-slot"), true); });
    });
    // Say so when no inspector on this page can feed the cards.
    var algorithm = container.getAttribute("data-algorithm");
    var feeds = document.querySelector('.unipo-inspector[data-algorithm="' + CSS.escape(algorithm) + '"]');
    if (!feeds) {
      Array.prototype.forEach.call(container.querySelectorAll(".unipo-live-hint"), function (hint) {
        hint.textContent = "On a page with a Step Inspector of a " + data.name + " run, selecting a token there shows its numbers here.";
      });
    }
  }

  /* ===================================================== the card beside a token */

  /** The comparison the page's selector shows with ``algorithm`` on one side: the other side. */
  function comparisonFor(algorithm) {
    var selectors = document.querySelectorAll(".unipo-compare-selector");
    for (var i = 0; i < selectors.length; i++) {
      var c = selectors[i];
      var data = c.__unipo;
      var selA = c.querySelector('select[data-side="a"]'), selB = c.querySelector('select[data-side="b"]');
      if (!data || !selA || !selB) continue;
      var other = selA.value === algorithm ? selB.value : selB.value === algorithm ? selA.value : null;
      if (other && other !== algorithm && data.specs[other]) {
        return { id: other, name: data.specs[other].name, aggregation: (data.aggregation || {})[other] || null,
                 label: data.specs[other].slots.aggregation.kind_label, status: (data.pairs[algorithm + "|" + other] || {}).aggregation };
      }
    }
    return null;
  }

  /** What the other algorithm's aggregation would weigh this same token with. */
  function compareAggregation(ctx, other) {
    var tk = ctx.tokens, t = ctx.t, step = ctx.step;
    var n = sum(step.groups.map(function (g) { return g.size; }));
    var length = sum(tk.mask);
    var counts = { responses: n, length: length };
    if (kindOf(ctx.cfg, "aggregation") === "token_mean" && tk.weight[t] > 0) counts.tokens = Math.round(1 / tk.weight[t]);
    var out = [];
    var same = other.status && other.status.status === "unchanged";
    out.push(para(other.name + " aggregates by " + other.label + (same ? ", as this algorithm does." : ".")));
    if (same && other.aggregation) {
      var again = M.tokenWeight({ components: { aggregation: other.aggregation } }, counts);
      if (isFinite(again) && matches(again, tk.weight[t])) {
        out[0] = para(other.name + " aggregates by " + other.label + " too: the same weight, " + fmt(again) + ".");
        return out;
      }
    }
    if (!other.aggregation) {
      out.push(para("No run of " + other.name + " is on this site, so its parameters (such as L) are unknown here.", "unipo-live-hint"));
      return out;
    }
    var w2;
    try {
      w2 = M.tokenWeight({ components: { aggregation: other.aggregation } }, counts);
    } catch (err) {
      w2 = NaN;
    }
    if (!isFinite(w2)) {
      out.push(para("Its weight needs the update's total token count, which this step's log does not hold.", "unipo-live-hint"));
      return out;
    }
    out.push(table([
      row("weight w (" + other.name + ")", "for a response of " + length + " tokens among N = " + n, w2, "other_weight"),
      row("ratio to this algorithm's", fmt(w2) + " / " + fmt(tk.weight[t]), tk.weight[t] ? w2 / tk.weight[t] : null, "weight_ratio"),
      row("w \u00b7 objective (" + other.name + ")", fmt(w2) + " \u00d7 " + fmtQ(ctx.b.objective[t]), w2 * ctx.b.objective[t], "other_weighted"),
    ]));
    return out;
  }

  /**
   * The Algorithm Explainer's card for one token, shown beside it (the Step Inspector's readout):
   * the token's objective (clip, KL, their sum), its aggregation weight and, when the page's
   * comparison puts another algorithm beside this one, that algorithm's weight for the same token.
   * One source for every number: recomputed from the token's logged inputs (checked against the log).
   * Returns {node, breakdown}.
   */
  // The rows the card beside a token keeps (the Explainer's cards above show every input).
  var CARD_ROWS = { unclipped: 1, clipped: 1, surrogate: 1, kl: 1, kl_term: 1, objective: 1, weight: 1, weighted: 1,
    response_contribution: 1, other_weight: 1, other_weighted: 1 };

  V.explainToken = function (cfg, step, group, response, t, algorithm) {
    var ctx = { cfg: cfg, step: step, group: group, response: response, tokens: response.tokens, t: t,
                b: M.breakdown(cfg, response.tokens) };
    var body = el("tbody");
    function part(title, slot, fill) {
      var nodes;
      try {
        nodes = fill(ctx);
      } catch (err) {
        nodes = [para("These numbers could not be computed: " + err.message, "unipo-live-warn")];
      }
      body.appendChild(el("tr", { class: "unipo-token-card-sub", "data-live": slot }, [el("th", { colspan: "3", scope: "rowgroup", text: title })]));
      nodes.forEach(function (node) {
        var rows = node.querySelectorAll ? node.querySelectorAll("tr") : [];
        if (!rows.length) {
          // a sentence of this part (which branch of the clip won, how the other aggregates)
          body.appendChild(el("tr", { class: "unipo-token-card-note" }, [el("td", { colspan: "3" }, [node])]));
          return;
        }
        var kept = Array.prototype.filter.call(rows, function (tr) {
          var key = tr.querySelector(".unipo-num-value[data-key]");
          return key && CARD_ROWS[key.getAttribute("data-key")];
        });
        // Two equal branches of the clip (nothing clipped): the surrogate's row says it alone.
        var value = function (k) {
          var n = kept.map(function (tr) { return tr.querySelector('.unipo-num-value[data-key="' + k + '"]'); }).filter(Boolean)[0];
          return n ? n.getAttribute("data-value") : null;
        };
        if (value("unclipped") !== null && value("unclipped") === value("clipped")) {
          var product = kept.filter(function (tr) { return tr.querySelector('[data-key="unclipped"]'); })[0];
          var how = product && product.querySelector(".unipo-how");
          kept = kept.filter(function (tr) { return !tr.querySelector('[data-key="unclipped"], [data-key="clipped"]'); });
          kept.forEach(function (tr) {
            var cell = tr.querySelector('[data-key="surrogate"]') && tr.querySelector(".unipo-how");
            if (cell && how) cell.textContent = "\u03c1\u00b7\u00c2 = " + how.textContent + ", clipped or not";
          });
        }
        kept.forEach(function (tr) { body.appendChild(tr); });
      });
    }
    part("Clipped surrogate \u2113", "clip", liveClip);
    if (kindOf(cfg, "kl") !== "none") part("KL penalty", "kl", liveKl);
    part("Token objective", "objective", liveObjective);
    part("Aggregation", "aggregation", liveAggregation);
    var other = comparisonFor(algorithm);
    if (other) part("Beside " + other.name + ", the other algorithm of this page's comparison", "comparison", function (c) { return compareAggregation(c, other); });
    // the recomputation's check, short: a tick (its words in the tooltip); a mismatch keeps its words
    Array.prototype.forEach.call(body.querySelectorAll(".unipo-num-note"), function (note) {
      if (note.textContent.indexOf("\u2713") < 0) return;
      note.title = "Recomputed from the token's logged inputs: equals the log";
      note.textContent = " \u2713";
    });
    var children = [el("div", { class: "unipo-table-wrap" }, [el("table", { class: "unipo-live-table unipo-token-card-table" }, [body])])];
    if (body.querySelector("[data-tiny]")) children.push(para(V.NOISE_NOTE, "unipo-live-hint unipo-noise-note"));
    var card = el("details", { class: "unipo-token-card", open: true, "data-comparison": other ? other.id : null }, [
      el("summary", { text: "Algorithm Explainer: how this token's numbers are computed" }),
      el("div", { class: "unipo-token-card-body" }, children)]);
    return { node: card, breakdown: ctx.b };
  };

  /* ============================================================ comparison */

  /** As compare.py sentence_html (and diff.diff_sentence for its aria-label). */
  function diffSentence(nameA, nameB, pair, slots, styles) {
    var counts = { unchanged: 0, modified: 0, added: 0, removed: 0 };
    slots.forEach(function (s) { counts[pair[s].status] += 1; });
    var order = ["modified", "added", "removed", "unchanged"].filter(function (s) { return counts[s]; });
    var label = "From " + nameA + " to " + nameB + ": " +
      order.map(function (s) { return counts[s] + " " + s; }).join(", ") + " (of the " + slots.length + " slots).";
    var children = ["From " + nameA + " to " + nameB + ": "];
    order.forEach(function (s, i) {
      if (i) children.push(" ");
      children.push(el("span", { class: "unipo-diff-" + s }, [
        el("span", { class: "unipo-diff-badge", text: styles[s].symbol + " " + counts[s] + " " + styles[s].label })]));
    });
    return el("p", { class: "unipo-compare-sentence", "aria-label": label }, children);
  }

  function fillStatuses(tex, pair) {
    return tex.replace(/UNIPODIFF-([a-z_]+)/g, function (_, slot) {
      return "unipo-diff-" + (pair[slot] ? pair[slot].status : "unchanged");
    });
  }

  function badge(styles, status) {
    return el("span", { class: "unipo-diff-badge", text: styles[status].symbol + " " + styles[status].label });
  }

  function displayMath(tex) {
    return el("div", { class: "arithmatex", text: "\\[" + tex + "\\]" });
  }

  /** The same markup as unipo_build.views.compare.compare_html, built from the embedded data. */
  function renderCompare(data, a, b) {
    var A = data.specs[a], B = data.specs[b], pair = data.pairs[a + "|" + b], styles = data.styles;
    var legend = el("ul", { class: "unipo-diff-legend", "aria-label": "Legend of the comparison" },
      data.statuses.map(function (s) {
        return el("li", { class: "unipo-diff-legend-item unipo-diff-" + s }, [badge(styles, s), " ",
          el("span", { class: "unipo-diff-meaning", text: styles[s].meaning })]);
      }));
    var formulas = el("div", { class: "unipo-compare-formulas" }, [["a", "First", A], ["b", "Second", B]].map(function (x) {
      return el("div", { class: "unipo-compare-formula", "data-side": x[0] }, [
        el("p", { class: "unipo-compare-formula-head" }, [el("span", { class: "unipo-diff-side-label", text: x[1] }), " ",
          el("strong", { text: x[2].name })]),
        displayMath(fillStatuses(x[2].formula, pair)),
      ]);
    }));
    var words = data.param_words || {};
    var rows = [], same = [], sameSlots = [];
    data.slots.forEach(function (slot) {
      var d = pair[slot];
      var unchanged = d.status === "unchanged";
      var head = el(unchanged ? "p" : "summary", { class: "unipo-diff-row-head" }, [badge(styles, d.status), " ",
        el("span", { class: "unipo-slot-name", text: data.slot_labels[slot] })]);
      if (!unchanged) {
        // As compare.py change_text: what the slot was and what it is.
        var was = A.slots[slot].kind_label, is = B.slots[slot].kind_label;
        var change = d.status === "added" ? is : d.status === "removed" ? was + " \u2192 nothing" : was + " \u2192 " + is;
        head.append(" ", el("span", { class: "unipo-diff-change", text: change }));
      }
      if (d.status === "modified") {
        var what = d.changed.length === 1 && d.changed[0] === "kind" ? "component"
          : d.changed.map(function (c) { return words[c] || c.replace(/_/g, " "); }).join(", ");
        head.appendChild(el("span", { class: "unipo-diff-changed", text: "changed: " + what }));
      }
      var which = d.status === "unchanged"
        ? [["both", A, a === b ? A.name : A.name + " and " + B.name]]
        : [["a", A, A.name], ["b", B, B.name]];
      var sides = el("div", { class: "unipo-diff-sides" }, which.map(function (x) {
        var comp = x[1].slots[slot];
        return el("div", { class: "unipo-diff-side", "data-side": x[0] }, [
          el("p", { class: "unipo-diff-side-head" }, [el("span", { class: "unipo-diff-algo", text: x[2] }), " ",
            el("span", { class: "unipo-kind", text: comp.kind_label })]),
          comp.tex ? displayMath(comp.tex) : el("p", { class: "unipo-diff-none", text: "(nothing)" }),
        ]);
      }));
      var children = [head, sides];
      var why = B.slots[slot].explanation;
      if (!unchanged && why) {
        children.push(el("p", { class: "unipo-diff-why" }, [el("span", { class: "unipo-diff-algo", text: B.name }), " " + why]));
      }
      if (!unchanged) children = [el("details", { class: "unipo-diff-detail" }, children)];
      var row = el("li", { class: "unipo-diff-row unipo-diff-" + d.status, "data-slot": slot, "data-status": d.status }, children);
      if (d.status === "unchanged") {
        same.push(row);
        sameSlots.push(slot);
      } else {
        rows.push(row);
      }
    });
    // As compare.py unchanged_html: the unchanged slots folded into one line.
    var folded = same.length ? el("details", { class: "unipo-diff-same" }, [
      el("summary", null, [el("span", { class: "unipo-diff-unchanged" }, [badge(styles, "unchanged")]), " ",
        el("span", { class: "unipo-diff-same-names", text: sameSlots.map(function (s) { return data.slot_labels[s]; }).join(", ") }), " ",
        el("span", { class: "unipo-diff-same-hint", text: "(open for their formulas)" })]),
      el("ol", { class: "unipo-diff-rows" }, same),
    ]) : null;
    return el("div", { class: "unipo-compare", "data-a": a, "data-b": b }, [
      legend, diffSentence(A.name, B.name, pair, data.slots, styles),
      formulas, el("ol", { class: "unipo-diff-rows" }, rows), folded,
    ]);
  }

  function initSelector(container) {
    if (container.__unipo) return;
    var data = readData(container);
    if (!data) return;
    container.__unipo = data;
    var id = container.id.replace(/^unipo-/, "");
    var selA = container.querySelector('select[data-side="a"]');
    var selB = container.querySelector('select[data-side="b"]');
    var target = container.querySelector(".unipo-compare-target");
    var defaults = { a: selA.value, b: selB.value };
    var shown = defaults.a + "|" + defaults.b; // the server rendered the default pair
    function update() {
      if (selA.value + "|" + selB.value !== shown) {
        shown = selA.value + "|" + selB.value;
        var block = renderCompare(data, selA.value, selB.value);
        target.replaceChildren(block);
        if (window.UNIPO && window.UNIPO.render) window.UNIPO.render(target);
      }
      container.setAttribute("data-pair", shown);
      document.dispatchEvent(new CustomEvent("unipo:compare", { detail: { a: selA.value, b: selB.value, selector: container.id } }));
    }
    function save() {
      var p = selA.value === defaults.a && selB.value === defaults.b ? {} : { a: selA.value, b: selB.value };
      window.UNIPO.state.set(id, p, true);
    }
    /** The pair a URL names (unknown algorithms: the defaults, and one line saying so). */
    function restore(params) {
      params = params || {};
      var bad = [];
      ["a", "b"].forEach(function (side) {
        var sel = side === "a" ? selA : selB;
        var want = params[side];
        if (want !== undefined && data.specs[want]) sel.value = want;
        else {
          if (want !== undefined) bad.push("\u201c" + want + "\u201d");
          sel.value = defaults[side];
        }
      });
      window.UNIPO.state.note(id, bad.length ? "The link names the algorithm " + bad.join(" and ") +
        ", which this site does not have; the comparison shows its default instead." : null);
      update();
      // A guided path opens one slot's row (open=<slot>): its two formulas side by side.
      if (params.open) {
        var row = target.querySelector('.unipo-diff-row[data-slot="' + CSS.escape(params.open) + '"] details');
        if (row) row.open = true;
      }
    }
    selA.addEventListener("change", function () { update(); save(); });
    selB.addEventListener("change", function () { update(); save(); });
    var swap = container.querySelector(".unipo-compare-swap");
    if (swap) {
      swap.addEventListener("click", function () {
        var a = selA.value;
        selA.value = selB.value;
        selB.value = a;
        update();
        save();
      });
    }
    window.UNIPO.state.watch(id, restore);
    var initial = window.UNIPO.state.get(id);
    if (initial) {
      var fold = container.closest("details");
      if (fold) fold.open = true; // a chapter keeps its comparison folded: a link to it opens it
      restore(initial);
      if (window.UNIPO.state.isFirst(id)) container.scrollIntoView({ block: "start" });
    } else {
      container.setAttribute("data-pair", shown);
    }
  }

  /* ============================================================ wiring */

  if (!V.explainerListening) {
    V.explainerListening = true;
    document.addEventListener("unipo:token", function (event) {
      var detail = event.detail || {};
      Array.prototype.forEach.call(document.querySelectorAll(".unipo-explainer"), function (container) {
        if (!container.__unipo || container.getAttribute("data-algorithm") !== detail.algorithm) return;
        showToken(container, detail);
      });
    });
    // The token the Explainer showed is no longer selected (deselected, another group, Back):
    // the cards return to their hint instead of showing it.
    document.addEventListener("unipo:token-cleared", function (event) {
      var detail = event.detail || {};
      Array.prototype.forEach.call(document.querySelectorAll(".unipo-explainer"), function (container) {
        if (!container.__unipo || container.getAttribute("data-algorithm") !== detail.algorithm) return;
        if (!container.hasAttribute("data-token")) return;
        container.__unipo.request = {};
        container.removeAttribute("data-token");
        container.removeAttribute("data-live-ready");
        setLive(container, function (name) {
          return name === "where" ? [para("No token is selected. Select one in a Step Inspector: its numbers show beside it and here.", "unipo-live-hint")] : [];
        });
      });
    });
    // The page's comparison changed: a selected token's card shows the new pair.
    document.addEventListener("unipo:compare", function () {
      (V.inspectors || []).forEach(function (inspector) {
        if (inspector.selected && document.contains(inspector.container)) inspector.showReadout(inspector.selected);
      });
    });
  }

  function renderAll(root) {
    Array.prototype.forEach.call(root.querySelectorAll(".unipo-explainer"), initExplainer);
    Array.prototype.forEach.call(root.querySelectorAll(".unipo-compare-selector"), initSelector);
  }
  V.renderExplainers = renderAll;

  if (global.UNIPO && typeof global.UNIPO.register === "function") {
    global.UNIPO.register("explainer", renderAll);
  } else {
    console.error("UNIPO: unipo.js must load before explainer.js");
  }
})(typeof window !== "undefined" ? window : globalThis);
