/*
 * UNIPO views: the Step Inspector's token colours. The one side that draws them (and the
 * objective playground's heat-map fit): the build sends only data. Its reference is
 * unipo_build/site/views/inspector/token_scale.py, which the build uses for the quantities it
 * sends and the tests as the oracle (tests/browser/test_inspector.py holds the two equal).
 *
 * Signed quantities (token objective, advantage, log of the ratio) take the diverging ramp,
 * centred on zero and symmetric; one-signed ones (entropy, probability, a KL that is never
 * negative) take the sequential ramp from the step's smallest value to its largest. Nonzero
 * values are drawn at least MIN_TINT from the neutral end. Dark pages use the dark ramps.
 * Defines UNIPOViews.scale; in node, module.exports is the same object.
 */
(function (global) {
  "use strict";

  function rgb(hex) {
    return [parseInt(hex.slice(1, 3), 16), parseInt(hex.slice(3, 5), 16), parseInt(hex.slice(5, 7), 16)];
  }

  function hex2(n) {
    return (n < 16 ? "0" : "") + n.toString(16);
  }

  /** As token_scale.ramp_colour: piecewise-linear RGB between the anchors, u in 0..1. */
  function rampColour(anchors, u) {
    u = Math.max(0, Math.min(1, u));
    var at = u * (anchors.length - 1);
    var lo = Math.min(Math.floor(at), anchors.length - 2);
    var frac = at - lo;
    var a = rgb(anchors[lo]), b = rgb(anchors[lo + 1]);
    return "#" + [0, 1, 2].map(function (i) { return hex2(Math.floor(a[i] + (b[i] - a[i]) * frac + 0.5)); }).join("");
  }

  /** The number the scale colours (token_scale.coloured_value). */
  function colouredValue(q, value) {
    if (q.transform === "log") return value > 0 ? Math.log(value) : -Infinity;
    if (q.transform === "exp") return Math.exp(value);
    return value;
  }

  /** The value shown to a reader for a coloured value (the inverse of the transform, for ratios). */
  function shownValue(q, value) {
    return q.transform === "log" ? Math.exp(value) : value;
  }

  /** As token_scale.scale_for. */
  function scaleFor(q, values) {
    var lo = Infinity, hi = -Infinity;
    for (var i = 0; i < values.length; i++) {
      var v = values[i];
      if (!isFinite(v)) continue;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    if (lo === Infinity) return { kind: q.kind === "signed" ? "diverging" : "sequential", lo: 0, hi: 0, half: 0 };
    if (q.kind === "signed" || (lo < 0 && hi > 0)) return { kind: "diverging", lo: lo, hi: hi, half: Math.max(Math.abs(lo), Math.abs(hi)) };
    return { kind: "sequential", lo: lo, hi: hi, half: hi - lo };
  }

  /** As token_scale.position. */
  function position(scale, value, minTint) {
    if (scale.kind === "diverging") {
      if (value === 0 || scale.half === 0 || Number.isNaN(value)) return 0;
      var t = Math.max(-1, Math.min(1, value / scale.half));
      return (t < 0 ? -1 : 1) * Math.max(Math.abs(t), minTint);
    }
    if (scale.half === 0) return scale.hi !== 0 ? 1 : 0;
    var u = Math.max(0, Math.min(1, (value - scale.lo) / scale.half));
    return minTint + (1 - minTint) * u;
  }

  /** As token_scale.colour: ramps {diverging, diverging_dark, sequential, sequential_dark, min_tint}. */
  function colourOf(ramps, scale, value, dark) {
    var t = position(scale, value, ramps.min_tint);
    if (scale.kind === "diverging") return rampColour(dark ? ramps.diverging_dark : ramps.diverging, (t + 1) / 2);
    return rampColour(dark ? ramps.sequential_dark : ramps.sequential, t);
  }

  function luminance(hex) {
    var c = rgb(hex).map(function (x) {
      var s = x / 255;
      return s <= 0.04045 ? s / 12.92 : Math.pow((s + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  }

  /** Black or white, whichever contrasts more with the background (token_scale.text_colour). */
  function textColour(bg) {
    var lum = luminance(bg);
    return (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) ? "#000000" : "#ffffff";
  }

  /** The legend's gradient stops, from the data's smallest value to its largest (token_scale.legend_stops). */
  function legendStops(ramps, scale, dark, n) {
    n = n || 9;
    if (scale.lo === scale.hi) return [[scale.lo, colourOf(ramps, scale, scale.lo, dark)]];
    var out = [];
    for (var k = 0; k < n; k++) {
      var v = scale.lo + (scale.hi - scale.lo) * k / (n - 1);
      out.push([v, colourOf(ramps, scale, v, dark)]);
    }
    return out;
  }

  /** A chart's continuous diverging colour scale fitted to its data (the objective playground's heat
   *  map, playgrounds.js fitColours): domain from the smallest value to the largest with 0 among them,
   *  range the symmetric ramp's colours there (neutral exactly at 0), ticks the legend's values. No
   *  minimum tint: a surface is continuous. The one fit: the build writes the spec unfitted
   *  (playgrounds/charts.py UNFITTED_SCALE). */
  function chartScale(ramps, values, dark, n) {
    n = n || 9;
    var scale = scaleFor({ kind: "signed" }, values);
    var noTint = { diverging: ramps.diverging, diverging_dark: ramps.diverging_dark, sequential: ramps.sequential,
      sequential_dark: ramps.sequential_dark, min_tint: 0 };
    var domain;
    if (scale.lo === scale.hi) {
      domain = scale.lo === 0 ? [scale.lo - 1, scale.lo + 1] : [Math.min(0, scale.lo), Math.max(0, scale.lo)];
    } else {
      domain = [];
      for (var k = 0; k < n; k++) domain.push(scale.lo + (scale.hi - scale.lo) * k / (n - 1));
      if (scale.lo < 0 && scale.hi > 0 && domain.indexOf(0) < 0) {
        domain.push(0);
        domain.sort(function (a, b) { return a - b; });
      }
    }
    return {
      domain: domain,
      range: domain.map(function (v) { return colourOf(noTint, scale, v, dark); }),
      ticks: scale.lo < 0 && scale.hi > 0 ? [scale.lo, 0, scale.hi] : [scale.lo, scale.hi],
    };
  }

  var api = {
    chartScale: chartScale,
    rampColour: rampColour, colouredValue: colouredValue, shownValue: shownValue, scaleFor: scaleFor,
    position: position, colourOf: colourOf, textColour: textColour, legendStops: legendStops,
  };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  if (typeof document !== "undefined") {
    var V = (global.UNIPOViews = global.UNIPOViews || {});
    V.scale = api;
  }
})(typeof self !== "undefined" ? self : this);
