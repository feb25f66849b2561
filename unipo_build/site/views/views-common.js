/*
 * UNIPO views: what the Step Inspector and the Algorithm Explainer share, loaded before either
 * (the build puts it on the pages that use them). window.UNIPOViews holds the number format
 * (the port of unipo_build.core.numbers' fmt_num, fmt_signed, fmt_objective and fmt_metric), the
 * step files' loader, element helpers and the state the views share (the runs on the page, the
 * inspectors). The math is unipo-math.js. In node, module.exports is the number format
 * (tests/test_numbers.py runs it on a table of values against the Python).
 */
(function (global) {
  "use strict";

  /* ============================================================ number format */

  var MINUS = "\u2212";
  var SUPERSCRIPT = { "-": "\u207b", "0": "\u2070", "1": "\u00b9", "2": "\u00b2", "3": "\u00b3", "4": "\u2074",
    "5": "\u2075", "6": "\u2076", "7": "\u2077", "8": "\u2078", "9": "\u2079" };
  /** Below this, a logged objective or contribution is float32 rounding noise (numbers.NOISE). */
  var NOISE = 1e-7;

  function grouped(digits) {
    return digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }

  /**
   * A number for a reader, as unipo_build.core.numbers.fmt_num: integers with thousands separators,
   * others to ``digits`` significant digits (default 4), tiny ones as 2.49 × 10⁻⁵, a true minus.
   */
  function fmt(value, digits) {
    digits = digits || 4;
    if (value === null || value === undefined || Number.isNaN(value)) return "\u2013";
    if (!isFinite(value)) return value > 0 ? "inf" : MINUS + "inf";
    if (value === 0) return "0";
    var sign = value < 0 ? MINUS : "";
    var a = Math.abs(value);
    if (Number.isInteger(value) && a < 1e15) return sign + grouped(String(a));
    if (a < 1e-3) {
      var parts = a.toExponential(Math.max(1, digits) - 1).split("e");
      var mantissa = parts[0].indexOf(".") >= 0 ? parts[0].replace(/0+$/, "").replace(/\.$/, "") : parts[0];
      var exponent = String(Number(parts[1])).split("").map(function (c) { return SUPERSCRIPT[c]; }).join("");
      return sign + mantissa + " \u00d7 10" + exponent;
    }
    var text = String(Number(a.toPrecision(Math.max(1, digits))));
    var dot = text.indexOf(".");
    var whole = dot < 0 ? text : text.slice(0, dot);
    return sign + (whole.length > 3 ? grouped(whole) : whole) + (dot < 0 ? "" : text.slice(dot));
  }

  function fmtSigned(value, digits) {
    var text = fmt(value, digits);
    return value > 0 && text !== "0" ? "+" + text : text;
  }

  /** An objective or a contribution (numbers.fmt_objective): "≈ 0" when it is rounding noise. */
  function fmtObjective(value, signed) {
    if (value === null || value === undefined) return "\u2013";
    if (Math.abs(value) < NOISE) return "\u2248 0";
    return signed ? fmtSigned(value, 4) : fmt(value, 4);
  }

  /**
   * A logged metric for a chip, a read-out or a legend (numbers.fmt_metric): 3 significant digits,
   * never fewer than the whole part has (1,379, not 1,380); a fraction as a percentage when its
   * unit starts with "%".
   */
  function fmtMetric(value, unit) {
    if (value === null || value === undefined || !isFinite(value)) return "\u2013";
    var percent = !!unit && unit.charAt(0) === "%";
    var x = percent ? 100 * value : value;
    var digits = x ? Math.max(3, Math.floor(Math.log10(Math.abs(x))) + 1) : 3;
    return fmt(x, digits) + (percent ? "%" : "");
  }

  /**
   * A quantity computed from logged float32 log-probabilities (an objective, a KL, a weighted
   * term): a magnitude below NOISE is rounding, not a value, and reads "0" (callers add the note
   * NOISE_NOTE once per readout when ``tiny`` is true for a value shown).
   */
  function tiny(value) {
    return typeof value === "number" && value !== 0 && Math.abs(value) < NOISE;
  }
  function fmtQuantity(value, signed) {
    if (tiny(value)) return "0*";
    return signed ? fmtSigned(value) : fmt(value);
  }
  var NOISE_NOTE = "0* is a value below 10\u207b\u2077 in size: the log keeps float32 numbers, whose rounding is about that large, so it is zero up to rounding.";

  if (typeof module !== "undefined" && module.exports) {
    module.exports = { fmt: fmt, fmtSigned: fmtSigned, fmtObjective: fmtObjective, fmtMetric: fmtMetric,
      fmtQuantity: fmtQuantity, tiny: tiny };
  }
  if (typeof document === "undefined") return; // node: the number format only

  /* ================================================================ shared state */

  var V = (global.UNIPOViews = global.UNIPOViews || {});
  if (V.__common) return; // loaded again by an instant navigation: keep the state
  V.__common = true;
  V.math = global.UNIPO_MATH;
  V.fmt = fmt;
  V.fmtSigned = fmtSigned;
  V.fmtObjective = fmtObjective;
  V.fmtMetric = fmtMetric;
  V.fmtQuantity = fmtQuantity;
  V.tiny = tiny;
  V.NOISE = NOISE;
  V.NOISE_NOTE = NOISE_NOTE;
  V.events = global.UNIPO.events; // the event names (unipo.js: the page's browser data)
  V.runs = V.runs || {}; // run id -> {config, siteRoot, stepPath, algorithm}
  V.stepCache = V.stepCache || new Map(); // absolute URL -> Promise of the step JSON

  /** The step JSON at ``url`` (relative to the page), fetched once per page load. */
  V.loadStep = function (url) {
    var absolute = new URL(url, document.baseURI).href;
    if (!V.stepCache.has(absolute)) {
      var promise = fetch(absolute, { credentials: "same-origin" }).then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status + " for " + url);
        return response.json();
      });
      promise.catch(function () { V.stepCache.delete(absolute); });
      V.stepCache.set(absolute, promise);
    }
    return V.stepCache.get(absolute);
  };

  /** A step's token file: the run's folder (its inspector data) and the name runlog.token_file_name
   * gives (the page's browser data, UNIPO.stepFile). */
  V.stepUrl = function (info, step) {
    var file = global.UNIPO.stepFile;
    return info.siteRoot + info.stepPath + file.prefix + String(step).padStart(file.digits, "0") + file.suffix;
  };

  /** A token's text inside a sentence: between FIRST STRONG ISOLATE and POP DIRECTIONAL ISOLATE,
   * so a direction override in the token (U+202E) ends with it (as unipo_build/site/render.py isolate). */
  V.isolate = function (text) {
    return "\u2068" + text + "\u2069";
  };

  /** A token named in a sentence or a heading, as every view writes it (site/browser.py
   * token_label): between quotes, a space as \u00b7, a line break as \u21b5, a tab as \u2192, no text
   * as \u2205, inside isolates. */
  V.tokenLabel = function (text) {
    var shown = String(text).replace(/ /g, "\u00b7").replace(/\n/g, "\u21b5").replace(/\t/g, "\u2192") || "\u2205";
    return "\u201c" + V.isolate(shown) + "\u201d";
  };

  /** createElement with attributes, classes and children (strings become text nodes). */
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (name) {
        var value = attrs[name];
        if (value === null || value === undefined || value === false) return;
        if (name === "class") node.className = value;
        else if (name === "text") node.textContent = value;
        else node.setAttribute(name, value === true ? "" : String(value));
      });
    }
    (children || []).forEach(function (child) {
      if (child === null || child === undefined || child === false) return;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }
  V.el = el;

  /** The JSON a view wrote with render.json_data: <template class="unipo-data" id="<container id>-data">. */
  function readData(container) {
    var id = container.id ? container.id + "-data" : null;
    if (!id || !document.getElementById(id)) return null;
    return global.UNIPO.data(id);
  }
  V.readData = readData;

  function findToken(detail, group, response) {
    for (var p = 0; p < detail.prompts.length; p++) {
      var g = detail.prompts[p];
      if (g.index !== group || g.filtered) continue;
      for (var r = 0; r < g.responses.length; r++) {
        if (g.responses[r].index === response) return { group: g, response: g.responses[r] };
      }
    }
    return null;
  }
  V.findToken = findToken;
})(typeof self !== "undefined" ? self : this);
