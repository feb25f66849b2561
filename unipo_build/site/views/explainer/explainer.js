/*
 * UNIPO views: the Algorithm Explainer and the card beside a selected token (view code only; the
 * comparisons, which the card reads the page's selector from, are drawn by views/compare/compare.js).
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

  function paramOf(cfg, slot, name, fallback) {
    var p = cfg.components[slot].params || {};
    return p[name] === undefined || p[name] === null ? fallback : p[name];
  }

  /* ============================================================ the explainer */

  var SLOT_LABELS = {
    advantage: "Advantage", ratio: "Importance ratio", clip: "Clip", kl: "KL penalty",
    aggregation: "Aggregation", filter: "Sampling filter", shaping: "Reward shaping", correction: "Rollout correction",
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

  /* ====================================================== a kind's explainer data */

  /*
   * What a block says about its slot's kind comes from the kind's registry entry
   * (unipo_build/core/registry.py, explain(...)), sent with the configuration as
   * cfg.components[slot].explain: rows and sentences whose texts are templates ("{expression}")
   * and whose values are expressions over the token's log and what the math port recomputes from
   * it (core/registry.py lists the names). This code evaluates them; it never asks for a kind by name.
   */

  var TOKEN_RE = /\s*(?:(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)|('(?:[^'\\]|\\.)*')|([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)|(==|!=|<=|>=|&&|\|\||[-+*\/<>!?:(),]))/y;

  function tokenize(src) {
    var out = [];
    TOKEN_RE.lastIndex = 0;
    while (TOKEN_RE.lastIndex < src.length) {
      if (/^\s*$/.test(src.slice(TOKEN_RE.lastIndex))) break;
      var at = TOKEN_RE.lastIndex;
      var m = TOKEN_RE.exec(src);
      if (!m || TOKEN_RE.lastIndex === at) throw new Error("cannot read the expression " + src);
      if (m[1] !== undefined) out.push({ t: "num", v: Number(m[1]) });
      else if (m[2] !== undefined) out.push({ t: "str", v: m[2].slice(1, -1).replace(/\\(.)/g, "$1") });
      else if (m[3] !== undefined) out.push({ t: "name", v: m[3] });
      else out.push({ t: "op", v: m[4] });
    }
    return out;
  }

  function absent(x) {
    return x === null || x === undefined || (typeof x === "number" && isNaN(x));
  }

  /** The value of ``src`` in ``scope`` (a function of a dotted name). Arithmetic on a missing value is null. */
  function evaluate(src, scope) {
    var toks = tokenize(src), i = 0;
    function peek(v) { return toks[i] && toks[i].t === "op" && toks[i].v === v; }
    function take(v) {
      if (!peek(v)) throw new Error("expected " + v + " in " + src);
      i++;
    }
    function arith(op, a, b) {
      if (absent(a) || absent(b)) return null;
      return op === "+" ? a + b : op === "-" ? a - b : op === "*" ? a * b : a / b;
    }
    function compare(op, a, b) {
      if (op === "==") return a === b;
      if (op === "!=") return a !== b;
      if (absent(a) || absent(b)) return false;
      return op === "<" ? a < b : op === "<=" ? a <= b : op === ">" ? a > b : a >= b;
    }
    function primary() {
      var tok = toks[i++];
      if (!tok) throw new Error("the expression ends too soon: " + src);
      if (tok.t === "num" || tok.t === "str") return tok.v;
      if (tok.t === "op" && tok.v === "(") {
        var v = ternary();
        take(")");
        return v;
      }
      if (tok.t === "op" && tok.v === "-") { var x = primary(); return absent(x) ? null : -x; }
      if (tok.t === "op" && tok.v === "!") return !primary();
      if (tok.t !== "name") throw new Error("unexpected " + tok.v + " in " + src);
      if (tok.v === "null") return null;
      if (tok.v === "true" || tok.v === "false") return tok.v === "true";
      if (peek("(")) {
        i++;
        var args = [];
        while (!peek(")")) {
          args.push(ternary());
          if (!peek(")")) take(",");
        }
        take(")");
        var fn = Object.prototype.hasOwnProperty.call(FUNCTIONS, tok.v) ? FUNCTIONS[tok.v] : null;
        if (!fn) throw new Error("unknown function " + tok.v + " in " + src);
        return fn.apply(scope, args);
      }
      return scope(tok.v);
    }
    function product() {
      var v = primary();
      while (peek("*") || peek("/")) { var op = toks[i++].v; v = arith(op, v, primary()); }
      return v;
    }
    function total() {
      var v = product();
      while (peek("+") || peek("-")) { var op = toks[i++].v; v = arith(op, v, product()); }
      return v;
    }
    function comparison() {
      var v = total();
      if (peek("==") || peek("!=") || peek("<") || peek("<=") || peek(">") || peek(">=")) {
        var op = toks[i++].v;
        v = compare(op, v, total());
      }
      return v;
    }
    function conjunction() {
      var v = comparison();
      while (peek("&&")) { i++; var w = comparison(); v = v && w; }
      return v;
    }
    function disjunction() {
      var v = conjunction();
      while (peek("||")) { i++; var w = conjunction(); v = v || w; }
      return v;
    }
    function ternary() {
      var c = disjunction();
      if (!peek("?")) return c;
      i++;
      var a = ternary();
      take(":");
      var b = ternary();
      return c ? a : b;
    }
    var value = ternary();
    if (i < toks.length) throw new Error("unexpected " + toks[i].v + " in " + src);
    return value;
  }

  function listOf(xs) {
    return absent(xs) ? [] : Array.prototype.slice.call(xs);
  }

  function extreme(pick, args) {
    var xs = args.length === 1 && typeof args[0] === "object" ? listOf(args[0]) : Array.prototype.slice.call(args);
    if (xs.some(absent)) return null;
    return pick.apply(null, xs);
  }

  /** The functions an expression may call (registry.EXPLAIN_FUNCTIONS); ``this`` is the scope. */
  var FUNCTIONS = {
    mean: function (xs) { return mean(listOf(xs)); },
    std: function (xs, ddof) { return std(listOf(xs), ddof); },
    min: function () { return extreme(Math.min, arguments); },
    max: function () { return extreme(Math.max, arguments); },
    sum: function (xs) { return sum(listOf(xs)); },
    round: function (x) { return absent(x) || !isFinite(x) ? null : Math.round(x); },
    count: function (xs) { return listOf(xs).length; },
    has: function (x) { return !absent(x); },
    raw: function (x) { return absent(x) ? "\u2013" : String(x); },
    fmtq: function (x) { return fmtQ(x); },
    nums: function (xs) { return listOf(xs).map(function (x) { return fmt(x); }).join(", "); },
    join: function (xs, template, sep) {
      var outer = this;
      return listOf(xs).map(function (item) {
        return fill(template, function (name) {
          var v = pathOf(item, name.split("."));
          return v === undefined ? outer(name) : v;
        });
      }).join(sep === undefined ? ", " : sep);
    },
  };

  function pathOf(obj, parts) {
    var v = obj;
    for (var k = 0; k < parts.length; k++) {
      if (v === null || v === undefined || typeof v !== "object" || !Object.prototype.hasOwnProperty.call(v, parts[k])) return undefined;
      v = v[parts[k]];
    }
    return v;
  }

  /** A template with its "{expression}" placeholders filled (a number as the site writes numbers). */
  function fill(template, scope) {
    var out = "", i = 0;
    while (i < template.length) {
      var open = template.indexOf("{", i);
      if (open < 0) { out += template.slice(i); break; }
      out += template.slice(i, open);
      var depth = 1, j = open + 1, quote = false;
      for (; j < template.length && depth; j++) {
        var c = template[j];
        if (quote) quote = !(c === "'" && template[j - 1] !== "\\");
        else if (c === "'") quote = true;
        else if (c === "{") depth++;
        else if (c === "}") depth--;
      }
      if (depth) throw new Error("a '{' without its '}' in " + template);
      var v = evaluate(template.slice(open + 1, j - 1), scope);
      out += typeof v === "string" ? v : fmt(v);
      i = j;
    }
    return out;
  }

  /** A text of the data: a template, or cases (the first whose condition holds). */
  function textOf(text, scope) {
    if (text === undefined || text === null) return "";
    if (typeof text === "string") return fill(text, scope);
    for (var k = 0; k < text.length; k++) {
      if (text[k].when === undefined || evaluate(text[k].when, scope)) return fill(text[k].text, scope);
    }
    return "";
  }

  /** The slot's explainer data, or an error naming the kind the site cannot explain. */
  function explainOf(cfg, slot) {
    var comp = cfg.components[slot];
    if (!comp.explain) throw new Error("this site has no explainer data for the " + slot + " kind \u201c" + comp.kind + "\u201d");
    return comp.explain;
  }

  /** The names an expression reads for the token of ``ctx`` in ``slot`` (core/registry.py lists them). */
  function scopeOf(ctx, slot, extra) {
    var cfg = ctx.cfg, tk = ctx.tokens, t = ctx.t, b = ctx.b;
    var data = cfg.components[slot].explain || {};
    var params = cfg.components[slot].params || {};
    var cache = {};
    function rewards() { return groupRewards(ctx.group); }
    var computed = {
      "calc.advantage": function () { return M.groupAdvantages(cfg, rewards())[ctx.group.responses.indexOf(ctx.response)]; },
      "calc.weight": function () { return M.tokenWeight(cfg, extra && extra.counts); },
      "calc.shaping": function () {
        var comp = cfg.components.shaping;
        var fn = comp.fn && M.FUNCTIONS[comp.fn];
        return fn ? fn(ctx.response.length, withDefaults(comp)) : null;
      },
      "group.rewards": rewards,
      "group.size": function () { return ctx.group.responses.length; },
      "group.n_correct": function () { return ctx.group.responses.filter(function (r) { return r.correct; }).length; },
      "update.responses": function () { return sum(ctx.step.groups.map(function (g) { return g.size; })); },
      "update.groups": function () { return ctx.step.groups.length; },
      length: function () { return sum(tk.mask); },
      ratio_symbol: function () { return cfg.components.ratio.symbol || "\u03c1"; },
    };
    // the roots of a dotted name (registry.EXPLAIN_ROOTS), each given the name's other parts
    var roots = {
      token: function (parts) { return tk[parts[0]] ? tk[parts[0]][t] : null; },
      calc: function (parts) { return Array.isArray(b[parts[0]]) ? b[parts[0]][t] : b[parts[0]]; },
      params: function (parts) {
        var v = params[parts[0]];
        return absent(v) ? (data.defaults || {})[parts[0]] : v;
      },
      counts: function (parts) { return extra && extra.counts ? extra.counts[parts[0]] : null; },
      response: function (parts) { return pathOf(ctx.response, parts); },
      group: function (parts) { return pathOf(ctx.group, parts); },
      step: function (parts) { return pathOf(ctx.step, parts); },
    };
    return function scope(name) {
      if (Object.prototype.hasOwnProperty.call(cache, name)) return cache[name];
      var parts = name.split(".");
      var v;
      if (Object.prototype.hasOwnProperty.call(computed, name)) v = computed[name]();
      else if (Object.prototype.hasOwnProperty.call(roots, parts[0])) v = roots[parts[0]](parts.slice(1));
      else throw new Error("unknown name " + name);
      cache[name] = v === undefined ? null : v;
      return cache[name];
    };
  }

  /** A component's parameters with its kind's defaults where the log leaves one out. */
  function withDefaults(comp) {
    var out = {}, defaults = (comp.explain || {}).defaults || {}, params = comp.params || {};
    Object.keys(defaults).forEach(function (k) { out[k] = defaults[k]; });
    Object.keys(params).forEach(function (k) { if (!absent(params[k])) out[k] = params[k]; });
    return out;
  }

  /** An aggregation's counts: N, the response's length, and those its kind's data reads from the log. */
  function countsOf(ctx) {
    var counts = { responses: sum(ctx.step.groups.map(function (g) { return g.size; })), length: sum(ctx.tokens.mask),
                   truncated: !!(ctx.response && ctx.response.truncated) };
    var wanted = explainOf(ctx.cfg, "aggregation").counts || {};
    var scope = scopeOf(ctx, "aggregation", { counts: counts });
    Object.keys(wanted).forEach(function (name) {
      var v = evaluate(wanted[name], scope);
      if (!absent(v) && isFinite(v)) counts[name] = v;
    });
    return counts;
  }

  /** The kind's items for this token, in order: table rows ({row}) and sentences ({say}). */
  function kindItems(ctx, slot, extra) {
    var scope = scopeOf(ctx, slot, extra);
    var out = [];
    explainOf(ctx.cfg, slot).items.forEach(function (item) {
      if (item.when !== undefined && !evaluate(item.when, scope)) return;
      if (item.say !== undefined) {
        out.push({ say: textOf(item.say, scope), cls: item["class"] || null });
        return;
      }
      var value = item.value !== undefined ? evaluate(item.value, scope) : textOf(item.text, scope);
      var logged = item.check !== undefined ? evaluate(item.check, scope) : null;
      out.push({ row: row(textOf(item.row, scope), textOf(item.how, scope), value, item.key || null,
                          item.check !== undefined && typeof value === "number" ? checkText(value, logged) : "") });
    });
    return out;
  }

  /** Items as the page shows them: consecutive rows in one table, each sentence a paragraph. */
  function nodesOf(items) {
    var nodes = [], rows = null;
    items.forEach(function (item) {
      if (item.row) {
        if (!rows) { rows = []; nodes.push(rows); }
        rows.push(item.row);
      } else {
        rows = null;
        nodes.push(para(item.say, item.cls));
      }
    });
    return nodes.map(function (n) { return Array.isArray(n) ? table(n) : n; });
  }

  // The template engine alone (tests/test_views_explainer.py runs it in node beside core/registry.py's check).
  V.explainTemplates = { evaluate: evaluate, fill: fill, textOf: textOf };

  /** A slot's rows for one token as plain data ({label, how, value, key}, shown rows only, sentences
   * left out), from its kind's registry data: the Step Inspector's one-line sum reads the clip's here. */
  V.kindRows = function (cfg, step, group, response, t, slot) {
    var ctx = { cfg: cfg, step: step, group: group, response: response, tokens: response.tokens, t: t,
                b: M.breakdown(cfg, response.tokens) };
    var scope = scopeOf(ctx, slot);
    return explainOf(cfg, slot).items.filter(function (item) {
      return item.say === undefined && (item.when === undefined || evaluate(item.when, scope));
    }).map(function (item) {
      return { label: textOf(item.row, scope), how: textOf(item.how, scope), key: item.key || null,
               value: item.value !== undefined ? evaluate(item.value, scope) : textOf(item.text, scope) };
    });
  };

  function liveRatio(ctx) {
    var tk = ctx.tokens, t = ctx.t;
    var items = kindItems(ctx, "ratio");
    if (tk.sample_logp) {
      // Mixed-precision runs log the log-prob the token was sampled with beside the training pass's:
      // the second ratio, and the truncated importance-sampling weight min(1, it).
      var mismatch = Math.exp(tk.old_logp[t] - tk.sample_logp[t]);
      items.push({ row: row("log \u03c0sample(token)", "the log-prob it was sampled with (the decoding pass)", tk.sample_logp[t], "sample_logp") });
      items.push({ row: row("sampling ratio", "\u03c0old / \u03c0sample = exp(log \u03c0old \u2212 log \u03c0sample): training pass against sampling pass", mismatch, "sample_ratio") });
      items.push({ row: row("truncated IS weight", "min(1, \u03c0old / \u03c0sample)", Math.min(1, mismatch), "tis_weight") });
    }
    return nodesOf(items);
  }

  function groupRewards(group) {
    return group.responses.map(function (r) { return r.reward; });
  }

  function liveAdvantage(ctx) {
    var unrecorded = groupRewards(ctx.group).some(function (x) { return x === null || x === undefined; });
    if (ctx.cfg.components.advantage.group_baseline && unrecorded) {
      // An imported log without rewards (prime-rl's token export): nothing to recompute the advantage from.
      return nodesOf([
        { say: "The log does not record this group's rewards, so the advantage cannot be recomputed here: it is the trainer's own." },
        { row: row("advantage \u00c2", "as logged", ctx.tokens.advantage[ctx.t], "advantage") }]);
    }
    return nodesOf(kindItems(ctx, "advantage"));
  }

  function liveClip(ctx) {
    // The clip acts on the algorithm's own ratio (ratio_symbol: a token's ρ, or GSPO's sequence ratio sᵢ).
    return nodesOf(kindItems(ctx, "clip"));
  }

  function liveKl(ctx) {
    return nodesOf(kindItems(ctx, "kl"));
  }

  function liveObjective(ctx) {
    var cfg = ctx.cfg, tk = ctx.tokens, t = ctx.t, b = ctx.b;
    var inLoss = cfg.components.kl.kl_place === "loss";
    var how = inLoss
      ? "\u2113 \u2212 \u03b2\u00b7D = " + fmtQ(b.surrogate[t]) + " \u2212 " + fmt(paramOf(cfg, "kl", "beta")) + " \u00d7 " + fmtQ(b.kl[t])
      : "\u2113 = " + fmtQ(b.surrogate[t]);
    var out = [];
    var logged = tk.objective ? tk.objective[t] : null; // a log without per-token objectives: nothing to check against
    out.push(table([row("token objective", how, b.objective[t], "objective", checkText(b.objective[t], logged))]));
    return out;
  }

  function liveAggregation(ctx) {
    var tk = ctx.tokens, t = ctx.t, b = ctx.b, step = ctx.step;
    var counts = countsOf(ctx);
    var logged = tk.weight[t];
    var items = [
      { row: row("N", "responses in this update (" + step.groups.length + " groups)", counts.responses, "n_responses") },
      { row: row("|o\u1d62|", "this response's length", counts.length, "length") },
    ].concat(kindItems(ctx, "aggregation", { counts: counts }));
    items.push({ row: row("w \u00b7 objective", fmt(logged) + " \u00d7 " + fmtQ(b.objective[t]), logged * b.objective[t], "weighted") });
    var contribution = 0;
    var objectives = tk.objective || b.objective; // the recomputed ones where the log has none
    for (var i = 0; i < tk.weight.length; i++) contribution += tk.weight[i] * objectives[i];
    items.push({ row: row("this response", "\u03a3\u209c w \u00b7 objective", contribution, "response_contribution", checkText(contribution, ctx.response.contribution)) });
    if (ctx.group.contribution !== null && ctx.group.contribution !== undefined) {
      items.push({ row: row("its group", "sum over the group's responses", ctx.group.contribution, "group_contribution") });
    }
    items.push({ row: row("step objective J", "sum over every group of the update", step.objective, "step_objective") });
    return nodesOf(items);
  }

  function liveFilter(ctx) {
    return nodesOf(kindItems(ctx, "filter"));
  }

  function liveShaping(ctx) {
    return nodesOf(kindItems(ctx, "shaping"));
  }

  function liveCorrection(ctx) {
    return nodesOf(kindItems(ctx, "correction"));
  }

  var LIVE = {
    ratio: liveRatio, advantage: liveAdvantage, clip: liveClip, kl: liveKl, objective: liveObjective,
    aggregation: liveAggregation, filter: liveFilter, shaping: liveShaping, correction: liveCorrection,
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
    if (formula) formula.addEventListener(V.events.typeset, decorate);
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
                 label: data.specs[other].slots.aggregation.kind_label,
                 status: V.comparePair(data, algorithm, other).aggregation }; // compare.js: the pair, every slot
      }
    }
    return null;
  }

  /** What the other algorithm's aggregation would weigh this same token with. */
  function compareAggregation(ctx, other) {
    var tk = ctx.tokens, t = ctx.t;
    var counts = countsOf(ctx); // N, the length, and the counts this algorithm's aggregation reads from the log
    var n = counts.responses, length = counts.length;
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
    if (cfg.components.kl.kl_place) part("KL penalty", "kl", liveKl);
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

  /* ============================================================ wiring */

  if (!V.explainerListening) {
    V.explainerListening = true;
    document.addEventListener(V.events.token, function (event) {
      var detail = event.detail || {};
      Array.prototype.forEach.call(document.querySelectorAll(".unipo-explainer"), function (container) {
        if (!container.__unipo || container.getAttribute("data-algorithm") !== detail.algorithm) return;
        showToken(container, detail);
      });
    });
    // The token the Explainer showed is no longer selected (deselected, another group, Back):
    // the cards return to their hint instead of showing it.
    document.addEventListener(V.events.token_cleared, function (event) {
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
    document.addEventListener(V.events.compare, function () {
      (V.inspectors || []).forEach(function (inspector) {
        if (inspector.selected && document.contains(inspector.container)) inspector.showReadout(inspector.selected);
      });
    });
  }

  function renderAll(root) {
    Array.prototype.forEach.call(root.querySelectorAll(".unipo-explainer"), initExplainer);
  }
  V.renderExplainers = renderAll;

  if (global.UNIPO && typeof global.UNIPO.register === "function") {
    global.UNIPO.register("explainer", renderAll);
  } else {
    console.error("UNIPO: unipo.js must load before explainer.js");
  }
})(typeof window !== "undefined" ? window : globalThis);
