/*
 * UNIPO views: the comparison of two algorithms, slot by slot (loaded after explainer.js, in the same
 * bundles: page_state.VIEW_SCRIPTS). One renderer draws every comparison: the compare macro's fixed
 * ones, unipo explain's run pages and the selector of a chapter or the Compare page, whose pair the
 * Explainer's card beside a token reads (explainer.js comparisonFor). Each reads its data from the
 * <template class="unipo-data" id="<view id>-data"> the build wrote next to it (views/compare/compare.py).
 * Security: text from a spec or a log only ever reaches the page through textContent (or as the TeX
 * source of a formula, which KaTeX renders trusting only \htmlClass with the project's own classes: unipo.js).
 */
(function (global) {
  "use strict";

  var V = global.UNIPOViews;
  if (!V || !V.el) {
    console.error("UNIPO: views-common.js must load before compare.js");
    return;
  }
  if (V.__compare) return; // loaded again by an instant navigation, or by a second bundle: already set up
  V.__compare = true;
  var el = V.el;
  var readData = V.readData;

  /* A pair read the other way: what A added, B removes (what changed in a slot is the same both ways). */
  var MIRRORED = { added: "removed", removed: "added" };

  /**
   * Pair ``a|b`` of a comparison's data, every slot as {status, changed}: as listed, or ``b|a`` read the
   * other way; a slot neither lists is unchanged. The selector sends each pair once, without its unchanged
   * slots (compare.py selector_pairs; compare.py pair_of reads the data the same way).
   */
  function comparePair(data, a, b) {
    var listed = data.pairs[a + "|" + b], other = data.pairs[b + "|" + a];
    var out = {};
    data.slots.forEach(function (slot) {
      if (listed && listed[slot]) out[slot] = listed[slot];
      else if (!listed && other && other[slot]) {
        out[slot] = { status: MIRRORED[other[slot].status] || other[slot].status, changed: other[slot].changed };
      } else out[slot] = { status: "unchanged", changed: [] };
    });
    return out;
  }
  V.comparePair = comparePair;

  /** The summary sentence, each count as its status's badge (its aria-label: diff.diff_sentence's words). */
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

  /**
   * The comparison of sides ``a`` and ``b`` of ``data`` (compare.py compare_data, compare_run_data or
   * selector_data): the one renderer of every comparison. ``data.ids`` maps a side's key to the id
   * it shows (a fixed comparison keys its sides "a" and "b"); ``data.gaps``: slot -> what a run's
   * trainer ran there that no kind expresses, one line each under the second name.
   */
  function renderCompare(data, a, b) {
    var A = data.specs[a], B = data.specs[b], pair = comparePair(data, a, b), styles = data.styles;
    var ids = data.ids || {}, idA = ids[a] || a, idB = ids[b] || b, gaps = data.gaps || {};
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
        // What the slot was and what it is.
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
        ? [["both", A, idA === idB ? A.name : A.name + " and " + B.name]]
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
      if (!unchanged) {
        (gaps[slot] || []).forEach(function (line) {
          children.push(el("p", { class: "unipo-diff-gap" }, [el("span", { class: "unipo-diff-algo", text: B.name }), " " + line]));
        });
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
    // The unchanged slots folded into one line that opens to their rows.
    var folded = same.length ? el("details", { class: "unipo-diff-same" }, [
      el("summary", null, [el("span", { class: "unipo-diff-unchanged" }, [badge(styles, "unchanged")]), " ",
        el("span", { class: "unipo-diff-same-names", text: sameSlots.map(function (s) { return data.slot_labels[s]; }).join(", ") }), " ",
        el("span", { class: "unipo-diff-same-hint", text: "(open for their formulas)" })]),
      el("ol", { class: "unipo-diff-rows" }, same),
    ]) : null;
    return el("div", { class: "unipo-compare", "data-a": idA, "data-b": idB }, [
      legend, diffSentence(A.name, B.name, pair, data.slots, styles),
      formulas, el("ol", { class: "unipo-diff-rows" }, rows), folded,
    ]);
  }

  /** Draw ``data``'s pair ``a|b`` into ``target`` and typeset its formulas. */
  function drawCompare(target, data, a, b) {
    target.replaceChildren(renderCompare(data, a, b));
    if (window.UNIPO && window.UNIPO.render) window.UNIPO.render(target);
  }

  /** A fixed comparison (the compare macro, unipo explain's run pages): drawn once, on load. */
  function initCompareView(container) {
    if (container.__unipo) return;
    var data = readData(container);
    var target = container.querySelector(".unipo-compare-target");
    if (!data || !target) return;
    container.__unipo = data;
    drawCompare(target, data, "a", "b");
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
    var shown = null; // the pair drawn in the target (the opening pair is drawn below, on load)
    function update() {
      if (selA.value + "|" + selB.value !== shown) {
        shown = selA.value + "|" + selB.value;
        drawCompare(target, data, selA.value, selB.value);
      }
      container.setAttribute("data-pair", shown);
      document.dispatchEvent(new CustomEvent(V.events.compare, { detail: { a: selA.value, b: selB.value, selector: container.id } }));
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
      shown = defaults.a + "|" + defaults.b;
      drawCompare(target, data, defaults.a, defaults.b);
      container.setAttribute("data-pair", shown);
    }
  }

  function renderAll(root) {
    Array.prototype.forEach.call(root.querySelectorAll(".unipo-compare-selector"), initSelector);
    Array.prototype.forEach.call(root.querySelectorAll(".unipo-compare-view"), initCompareView);
  }
  V.renderComparisons = renderAll;

  if (global.UNIPO && typeof global.UNIPO.register === "function") {
    global.UNIPO.register("compare", renderAll);
    // A guided path's "compare" link (unipo.js UNIPO.pathView) opens the page's comparison selector.
    global.UNIPO.pathView("compare", function (link, byRun, root) { return root.querySelector(".unipo-compare-selector"); });
  } else {
    console.error("UNIPO: unipo.js must load before compare.js");
  }
})(typeof window !== "undefined" ? window : globalThis);
