/*
 * UNIPO's one math port in the browser: unipo_build/core/components.py and the per-token terms of
 * unipo_build/objective.token_terms, function for function.
 *
 * Every function is named after its Python original (camelCase) and computes the same thing in
 * the same order of arithmetic; FUNCTIONS maps the Python names to them. The build sends each
 * resolved component with the name of its function (registry Kind.fn, objective.browser_config),
 * so breakdown() dispatches on those names and on the registered properties (clip bounds, where
 * the KL sits), never on a component kind: a new kind that reuses a function needs nothing here,
 * a kind with a new function needs its port here (the parity tests fail until it has one).
 *
 * Used by the Algorithm Explainer (explainer.js), the Step Inspector's view helpers and the
 * playgrounds' simulations (playgrounds-sim.js). tests/test_math_js_parity.py runs this file in
 * node and holds it equal to the Python to 1e-9. Pure: no DOM. Loaded in a page it defines
 * window.UNIPO_MATH; in node it is module.exports.
 */
(function (root, factory) {
  "use strict";
  var api = factory();
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.UNIPO_MATH = root.UNIPO_MATH || api;
})(typeof self !== "undefined" ? self : this, function () {
  "use strict";

  function sum(xs) {
    var s = 0;
    for (var i = 0; i < xs.length; i++) s += xs[i];
    return s;
  }

  function mean(xs) {
    return sum(xs) / xs.length;
  }

  /** std with ``ddof`` (0: population, n; 1: sample, n - 1), as numpy/torch with correction=ddof. */
  function std(xs, ddof) {
    var m = mean(xs);
    var s = 0;
    for (var i = 0; i < xs.length; i++) s += (xs[i] - m) * (xs[i] - m);
    return Math.sqrt(s / (xs.length - ddof));
  }

  /* ---------------------------------------------------------------- advantages */

  /** group_zscore_advantage for one group: (r - mean) / (std + eps); exactly 0 if all rewards are equal. */
  function groupZscoreAdvantage(rewards, stdDdof, eps) {
    stdDdof = stdDdof === undefined ? 1 : stdDdof;
    eps = eps === undefined ? 1e-6 : eps;
    var xs = Array.prototype.slice.call(rewards);
    var hi = Math.max.apply(null, xs);
    var lo = Math.min.apply(null, xs);
    if (hi === lo) return xs.map(function () { return 0; });
    var m = mean(xs);
    var s = std(xs, stdDdof);
    return xs.map(function (r) { return (r - m) / (s + eps); });
  }

  /** group_mean_advantage: r - mean(r). */
  function groupMeanAdvantage(rewards) {
    var m = mean(rewards);
    return Array.prototype.map.call(rewards, function (r) { return r - m; });
  }

  /**
   * group_mean_batch_std_advantage for one group, given the batch's reward std (the group alone does not
   * hold it): (r - mean of the group) / (batchStd + eps); exactly 0 if the group's rewards are all equal.
   */
  function groupMeanBatchStdAdvantage(rewards, batchStd, eps) {
    if (batchStd === null || batchStd === undefined) {
      throw new Error("group_mean_batch_std divides by the std of every reward in the batch, which one group does not hold");
    }
    eps = eps === undefined ? 1e-4 : eps;
    var xs = Array.prototype.slice.call(rewards);
    if (Math.max.apply(null, xs) === Math.min.apply(null, xs)) return xs.map(function () { return 0; });
    var m = mean(xs);
    return xs.map(function (r) { return (r - m) / (batchStd + eps); });
  }

  /** leave_one_out_advantage: r_i - mean of the other G - 1 rewards. */
  function leaveOneOutAdvantage(rewards) {
    var g = rewards.length;
    if (g < 2) throw new Error("leave-one-out needs at least 2 responses per group");
    var total = sum(rewards);
    return Array.prototype.map.call(rewards, function (r) { return r - (total - r) / (g - 1); });
  }

  /* -------------------------------------------------------------------- ratios */

  /** token_ratio: exp(logp - old_logp), in log space. */
  function tokenRatio(logp, oldLogp) {
    return logp.map(function (l, t) { return Math.exp(l - oldLogp[t]); });
  }

  /** sequence_ratio: exp(mean_t (logp - old_logp)) on every real token, 0 on padding. */
  function sequenceRatio(logp, oldLogp, mask) {
    var length = sum(mask);
    var s = 0;
    for (var t = 0; t < logp.length; t++) s += (logp[t] - oldLogp[t]) * mask[t];
    var value = Math.exp(s / Math.max(length, 1));
    return mask.map(function (m) { return value * m; });
  }

  /** self_ratio: pi / sg[pi], whose value is exp(0) = 1. */
  function selfRatio(logp) {
    return logp.map(function (l) { return Math.exp(l - l); });
  }

  /* ---------------------------------------------------------------------- clip */

  /**
   * clipped_surrogate: min(rho A, clip(rho, 1 - eps_low, 1 + eps_high) A) and the side that
   * clipped (1 high, -1 low, 0 none). Both eps null: rho A, nothing clipped.
   */
  function clippedSurrogate(ratio, advantage, epsLow, epsHigh) {
    var n = ratio.length;
    var surrogate = new Array(n);
    var side = new Array(n);
    if ((epsLow === null || epsLow === undefined) && (epsHigh === null || epsHigh === undefined)) {
      for (var i = 0; i < n; i++) {
        surrogate[i] = ratio[i] * advantage[i];
        side[i] = 0;
      }
      return { surrogate: surrogate, side: side };
    }
    var low = 1.0 - epsLow;
    var high = 1.0 + epsHigh;
    for (var t = 0; t < n; t++) {
      var unclipped = ratio[t] * advantage[t];
      var clipped = Math.min(Math.max(ratio[t], low), high) * advantage[t];
      surrogate[t] = Math.min(unclipped, clipped);
      side[t] = advantage[t] > 0 && ratio[t] > high ? 1 : advantage[t] < 0 && ratio[t] < low ? -1 : 0;
    }
    return { surrogate: surrogate, side: side };
  }

  /**
   * dual_clip_surrogate: PPO's surrogate and, for a negative advantage, max(that, c A); the side
   * is 1 where the floor c A won (A < 0 and rho > c).
   */
  function dualClipSurrogate(ratio, advantage, epsLow, epsHigh, c) {
    var out = clippedSurrogate(ratio, advantage, epsLow, epsHigh);
    for (var t = 0; t < ratio.length; t++) {
      var floor = c * advantage[t];
      if (advantage[t] < 0 && out.surrogate[t] < floor) {
        out.surrogate[t] = floor;
        out.side[t] += 1;
      }
    }
    return out;
  }

  /**
   * cispo_surrogate: the clipped IS weight w = clip(rho, 1 - eps_low, 1 + eps_high) (no lower
   * bound when eps_low is null) times A; PPO's sides (1: A > 0 above the cap, -1: A < 0 below the floor).
   */
  function cispoSurrogate(ratio, advantage, epsLow, epsHigh) {
    var hasLow = epsLow !== null && epsLow !== undefined;
    var surrogate = new Array(ratio.length);
    var side = new Array(ratio.length);
    for (var t = 0; t < ratio.length; t++) {
      var w = Math.min(hasLow ? Math.max(ratio[t], 1.0 - epsLow) : ratio[t], 1.0 + epsHigh);
      surrogate[t] = w * advantage[t];
      side[t] = advantage[t] > 0 && ratio[t] > 1.0 + epsHigh ? 1 : hasLow && advantage[t] < 0 && ratio[t] < 1.0 - epsLow ? -1 : 0;
    }
    return { surrogate: surrogate, side: side };
  }

  /** sapo_surrogate: (4 / tau) sigmoid(tau (rho - 1)) A, tau_pos for A > 0, tau_neg otherwise. */
  function sapoSurrogate(ratio, advantage, tauPos, tauNeg) {
    var surrogate = new Array(ratio.length);
    var side = new Array(ratio.length);
    for (var t = 0; t < ratio.length; t++) {
      var tau = advantage[t] > 0 ? tauPos : tauNeg;
      surrogate[t] = (4.0 / tau) / (1.0 + Math.exp(-tau * (ratio[t] - 1.0))) * advantage[t];
      side[t] = 0;
    }
    return { surrogate: surrogate, side: side };
  }

  /**
   * dppo_mask_surrogate (DPPO's mask, prime-rl's default loss): the change of the token's probability,
   * exp(old_logp) * rho - exp(old_logp) (dppo_probability_change); A > 0 and a change above delta_high, or
   * A < 0 and one below -delta_low, masks the token (term 0, side 1 or -1); every other token's term is rho A.
   */
  function dppoMaskSurrogate(ratio, advantage, oldLogp, deltaLow, deltaHigh) {
    var n = ratio.length;
    var surrogate = new Array(n);
    var side = new Array(n);
    var change = new Array(n);
    for (var t = 0; t < n; t++) {
      var old = Math.exp(oldLogp[t]);
      change[t] = old * ratio[t] - old;
      var high = advantage[t] > 0 && change[t] > deltaHigh;
      var low = advantage[t] < 0 && change[t] < -deltaLow;
      surrogate[t] = high || low ? 0 : ratio[t] * advantage[t];
      side[t] = high ? 1 : low ? -1 : 0;
    }
    return { surrogate: surrogate, side: side, prob_change: change };
  }

  /**
   * geo_mean_surrogate (GMPO): each token's log-ratio clipped in log space by the sign of its advantage,
   * c = A > 0 ? min(log rho, eps_high) : A < 0 ? max(log rho, -eps_low) : 0; every real token's term is
   * A exp(mean of c over the response's real tokens). Sides as PPO's (1: A > 0 above, -1: A < 0 below).
   */
  function geoMeanSurrogate(ratio, advantage, mask, epsLow, epsHigh) {
    var n = ratio.length;
    var surrogate = new Array(n);
    var side = new Array(n);
    var total = 0;
    var length = 0;
    var delta = new Array(n);
    for (var t = 0; t < n; t++) {
      delta[t] = mask[t] > 0 ? Math.log(ratio[t]) : 0;
      var a = advantage[t];
      var c = a > 0 ? Math.min(delta[t], epsHigh) : a < 0 ? Math.max(delta[t], -epsLow) : 0;
      total += c * mask[t];
      length += mask[t];
    }
    var geo = Math.exp(total / Math.max(length, 1));
    for (var u = 0; u < n; u++) {
      surrogate[u] = advantage[u] * geo * mask[u];
      side[u] = mask[u] > 0 && advantage[u] > 0 && delta[u] > epsHigh ? 1
        : mask[u] > 0 && advantage[u] < 0 && delta[u] < -epsLow ? -1 : 0;
    }
    return { surrogate: surrogate, side: side };
  }

  /* --------------------------------------------------------- rollout correction */

  /**
   * rollout_correction_weight: the behaviour ratio w = exp(old_logp - sampler_logp) per token, or per
   * response (the product of its token ratios, or their geometric mean), truncated to [lower, cap]
   * or masked outside it (a kept token weighs w, its own ratio, or 1). Returns the weight, the side
   * (1 above the cap, -1 below the lower bound) and the tested ratio w itself, 0 on padding.
   */
  function rolloutCorrectionWeight(oldLogp, samplerLogp, mask, level, truncate, cap, lower, sequence, kept) {
    var n = oldLogp.length;
    var hasCap = cap !== null && cap !== undefined;
    var hasLower = lower !== null && lower !== undefined;
    var logToken = oldLogp.map(function (o, t) { return (o - samplerLogp[t]) * mask[t]; });
    var logW;
    if (level === "token") {
      logW = logToken;
    } else if (level === "sequence") {
      var total = sum(logToken);
      if (sequence === "geometric_mean") total = total / Math.max(sum(mask), 1);
      else if (sequence !== "product") throw new Error("unknown sequence ratio " + sequence + " (known: product, geometric_mean)");
      logW = logToken.map(function () { return total; });
    } else {
      throw new Error("unknown correction level " + level + " (known: token, sequence)");
    }
    var weight = new Array(n);
    var side = new Array(n);
    var ratio = new Array(n);
    for (var t = 0; t < n; t++) {
      var w = Math.exp(logW[t]);
      var high = hasCap && w > cap;
      var low = hasLower && w < lower;
      var value;
      if (truncate) {
        value = Math.min(hasLower ? Math.max(w, lower) : w, hasCap ? cap : Infinity);
      } else if (high || low) {
        value = 0;
      } else if (kept === "ratio") {
        value = w;
      } else if (kept === "token_ratio") {
        value = Math.exp(logToken[t]);
      } else if (kept === "one") {
        value = 1;
      } else {
        throw new Error("unknown kept weight " + kept + " (known: ratio, token_ratio, one)");
      }
      weight[t] = value * mask[t];
      side[t] = ((high ? 1 : 0) - (low ? 1 : 0)) * mask[t];
      ratio[t] = w * mask[t];
    }
    return { weight: weight, side: side, ratio: ratio };
  }

  /** truncated_is_weight: w clipped to [lower, cap] (no lower bound when lower is null). */
  function truncatedIsWeight(oldLogp, samplerLogp, mask, level, cap, lower, sequence) {
    return rolloutCorrectionWeight(oldLogp, samplerLogp, mask, level, true, cap, lower, sequence, "ratio");
  }

  /** masked_is_weight: weight 0 where w leaves [lower, cap], the kept weight elsewhere. */
  function maskedIsWeight(oldLogp, samplerLogp, mask, level, cap, lower, sequence, kept) {
    return rolloutCorrectionWeight(oldLogp, samplerLogp, mask, level, false, cap, lower, sequence, kept);
  }

  /* ------------------------------------------------------------------------ KL */

  var KL_ESTIMATORS = ["k1", "k2", "k3"];

  /** kl_estimate with log r = ref_logp - logp: k1 = -log r, k2 = (log r)^2 / 2, k3 = expm1(log r) - log r. */
  function klEstimate(logp, refLogp, estimator) {
    return logp.map(function (l, t) {
      var logR = refLogp[t] - l;
      if (estimator === "k1") return -logR;
      if (estimator === "k2") return 0.5 * logR * logR;
      if (estimator === "k3") return Math.expm1(logR) - logR;
      throw new Error("unknown KL estimator " + estimator + " (known: " + KL_ESTIMATORS.join(", ") + ")");
    });
  }

  /* --------------------------------------------------------------- aggregation */

  /*
   * The weight of one real token, as the (B, T) functions of core/components.py give it: N responses
   * in the update, the response's length, the update's total token count, the constant L.
   */
  function seqMeanTokenMeanWeights(n) {
    return 1 / (Math.max(n.length, 1) * n.responses);
  }

  function tokenMeanWeights(n) {
    return 1 / n.tokens;
  }

  function constantNormalizerWeights(n, normalizer) {
    if (!(normalizer > 0)) throw new Error("constant_normalizer needs a positive normalizer L");
    return 1 / (n.responses * normalizer);
  }

  function seqMeanTokenSumWeights(n) {
    return 1 / n.responses;
  }

  /* ------------------------------------------------------ filter and shaping */

  /** dynamic_sampling_keep for one group of 0/1 correctness flags: 0 < #correct < G. */
  function dynamicSamplingKeep(correct) {
    var k = sum(correct.map(function (c) { return c ? 1 : 0; }));
    return k > 0 && k < correct.length;
  }

  /** mask_truncated_keep for one response: whether its tokens stay in the loss (it finished within the budget). */
  function maskTruncatedKeep(truncated) {
    return !truncated;
  }

  /** overlong_penalty for one length (penalty: the floor at L_max; 1 when not given, as the paper). */
  function overlongPenalty(length, maxLength, cacheLength, penalty) {
    var scale = penalty === undefined || penalty === null ? 1 : penalty;
    var start = maxLength - cacheLength;
    if (length <= start) return 0;
    if (length <= maxLength) return scale * (start - length) / cacheLength;
    return -scale;
  }

  /** The Python function names of core/components.py and their ports. */
  var FUNCTIONS = {
    group_zscore_advantage: function (rewards, p) { return groupZscoreAdvantage(rewards, p.std_ddof, p.eps); },
    group_mean_advantage: function (rewards) { return groupMeanAdvantage(rewards); },
    // the batch's std is not in one group: the caller passes it (groupAdvantages alone cannot)
    group_mean_batch_std_advantage: function (rewards, p, batchStd) { return groupMeanBatchStdAdvantage(rewards, batchStd, p.eps); },
    leave_one_out_advantage: function (rewards) { return leaveOneOutAdvantage(rewards); },
    token_ratio: function (logp, oldLogp) { return tokenRatio(logp, oldLogp); },
    sequence_ratio: sequenceRatio,
    self_ratio: function (logp) { return selfRatio(logp); },
    // the clip slot's surrogates: (ratio, advantage, eps_low, eps_high, params, mask, old_logp)
    clipped_surrogate: clippedSurrogate,
    dual_clip_surrogate: function (r, a, lo, hi, p) { return dualClipSurrogate(r, a, lo, hi, p.c); },
    cispo_surrogate: function (r, a, lo, hi, p) { return cispoSurrogate(r, a, p.eps_low, p.eps_high); },
    sapo_surrogate: function (r, a, lo, hi, p) { return sapoSurrogate(r, a, p.tau_pos, p.tau_neg); },
    geo_mean_surrogate: function (r, a, lo, hi, p, mask) { return geoMeanSurrogate(r, a, mask, p.eps_low, p.eps_high); },
    dppo_mask_surrogate: function (r, a, lo, hi, p, mask, o) { return dppoMaskSurrogate(r, a, o, p.delta_low, p.delta_high); },
    kl_estimate: klEstimate,
    // the correction slot's weights: (old_logp, sampler_logp, mask, params)
    truncated_is_weight: function (o, s, m, p) { return truncatedIsWeight(o, s, m, p.level, p.cap, p.lower, p.sequence); },
    masked_is_weight: function (o, s, m, p) { return maskedIsWeight(o, s, m, p.level, p.cap, p.lower, p.sequence, p.kept); },
    seq_mean_token_mean_weights: function (n) { return seqMeanTokenMeanWeights(n); },
    token_mean_weights: function (n) { return tokenMeanWeights(n); },
    // one over M times the micro-batch's tokens: the log holds it only as the token's weight (counts.tokens)
    micro_token_mean_weights: function (n) { return tokenMeanWeights(n); },
    constant_normalizer_weights: function (n, p) { return constantNormalizerWeights(n, p.normalizer); },
    seq_mean_token_sum_weights: function (n) { return seqMeanTokenSumWeights(n); },
    dynamic_sampling_keep: dynamicSamplingKeep,
    mask_truncated_keep: maskTruncatedKeep,
    overlong_penalty: function (length, p) { return overlongPenalty(length, p.max_length, p.cache_length, p.penalty); },
  };

  function slotOf(cfg, slot) {
    return cfg.components[slot];
  }

  function fnOf(cfg, slot) {
    var name = slotOf(cfg, slot).fn;
    var fn = FUNCTIONS[name];
    if (!fn) throw new Error("unipo-math.js has no port of components." + name + " (slot " + slot + ")");
    return fn;
  }

  /** The advantages of one group from its rewards, for a group-baseline advantage; null otherwise. */
  function groupAdvantages(cfg, rewards) {
    var comp = slotOf(cfg, "advantage");
    if (!comp.group_baseline) return null;
    return fnOf(cfg, "advantage")(rewards, comp.params || {});
  }

  /**
   * The weight of one real token in the step objective (see the weight functions above); 0 for a response
   * a filter masks out of the loss (objective.weights: counts.truncated under a filter with response_keep).
   */
  function tokenWeight(cfg, counts) {
    var filter = cfg.components.filter;
    if (filter && filter.response_keep && counts && counts.truncated && !FUNCTIONS[filter.fn](true)) return 0;
    return fnOf(cfg, "aggregation")(counts, slotOf(cfg, "aggregation").params || {});
  }

  /**
   * recompute.breakdown / objective.token_terms for one logged response: ratio, surrogate, clip
   * side, KL, the rollout correction's weight and per-token objective from the logged inputs (logp,
   * old_logp, sample_logp, ref_logp, advantage, and the rollout KL when the KL sits in the reward).
   */
  function breakdown(cfg, tokens) {
    var mask = tokens.mask;
    var rho = fnOf(cfg, "ratio")(tokens.logp, tokens.old_logp, mask);
    var bounds = slotOf(cfg, "clip").bounds || [null, null];
    var clipped = fnOf(cfg, "clip")(rho, tokens.advantage, bounds[0], bounds[1], slotOf(cfg, "clip").params || {}, mask,
                                    tokens.old_logp);
    var surrogate = clipped.surrogate.map(function (s, t) { return s * mask[t]; });
    var side = clipped.side.map(function (s, t) { return s * mask[t]; });
    var kl = null;
    var objective = surrogate.slice();
    // the correction slot (absent in a configuration written before it existed: no correction)
    var corrSlot = cfg.components.correction;
    var correction = null;
    if (corrSlot && corrSlot.fn) {
      if (!tokens.sample_logp) throw new Error("the rollout correction weighs each token by exp(old_logp - sample_logp): sample_logp is required");
      correction = fnOf(cfg, "correction")(tokens.old_logp, tokens.sample_logp, mask, corrSlot.params || {});
      objective = surrogate.map(function (s, t) { return correction.weight[t] * s; });
    }
    var klSlot = slotOf(cfg, "kl");
    if (klSlot.kl_place === "loss") {
      if (!tokens.ref_logp) throw new Error("the KL sits in the loss: ref_logp is required");
      var beta = klSlot.params.beta;
      kl = klEstimate(tokens.logp, tokens.ref_logp, klSlot.params.estimator).map(function (k, t) { return k * mask[t]; });
      objective = objective.map(function (s, t) { return s - beta * kl[t]; });
    } else if (klSlot.kl_place === "reward") {
      kl = tokens.kl ? tokens.kl.slice() : null;
    }
    return {
      ratio: rho.map(function (r, t) { return r * mask[t]; }),
      surrogate: surrogate,
      clip_side: side,
      kl: kl,
      objective: objective,
      eps_low: bounds[0],
      eps_high: bounds[1],
      // a clip that reads the token's probability (DPPO's mask): how far it moved, else null
      prob_change: clipped.prob_change ? clipped.prob_change.map(function (c, t) { return c * mask[t]; }) : null,
      correction: correction ? correction.weight : null,
      correction_side: correction ? correction.side : null,
      correction_ratio: correction ? correction.ratio : null,
    };
  }

  return {
    sum: sum,
    mean: mean,
    std: std,
    groupZscoreAdvantage: groupZscoreAdvantage,
    groupMeanAdvantage: groupMeanAdvantage,
    groupMeanBatchStdAdvantage: groupMeanBatchStdAdvantage,
    leaveOneOutAdvantage: leaveOneOutAdvantage,
    geoMeanSurrogate: geoMeanSurrogate,
    dppoMaskSurrogate: dppoMaskSurrogate,
    tokenRatio: tokenRatio,
    sequenceRatio: sequenceRatio,
    selfRatio: selfRatio,
    clippedSurrogate: clippedSurrogate,
    KL_ESTIMATORS: KL_ESTIMATORS,
    klEstimate: klEstimate,
    rolloutCorrectionWeight: rolloutCorrectionWeight,
    truncatedIsWeight: truncatedIsWeight,
    maskedIsWeight: maskedIsWeight,
    seqMeanTokenMeanWeights: seqMeanTokenMeanWeights,
    tokenMeanWeights: tokenMeanWeights,
    constantNormalizerWeights: constantNormalizerWeights,
    seqMeanTokenSumWeights: seqMeanTokenSumWeights,
    dynamicSamplingKeep: dynamicSamplingKeep,
    maskTruncatedKeep: maskTruncatedKeep,
    overlongPenalty: overlongPenalty,
    FUNCTIONS: FUNCTIONS,
    groupAdvantages: groupAdvantages,
    tokenWeight: tokenWeight,
    breakdown: breakdown,
  };
});
