/*
 * UNIPO playgrounds: the simulations that run in the reader's browser.
 *
 * A line-for-line port of unipo_build/site/playgrounds/{rng,objective_1d,multi_reward}.py; the
 * component math (group z-score, ...) is the site's one port, unipo-math.js (loaded first).
 * The numpy modules are the reference; tests/test_playground_js_parity.py runs this file
 * in node on fixed inputs and requires the same trajectories to 1e-9. Constants (presets,
 * step sizes, grids) are not repeated here: the page passes them in as `cfg`, written at
 * build time from the Python modules. Keep the order of random draws and of arithmetic as
 * in Python when editing either side.
 *
 * Pure functions only (no DOM): usable from a page (window.UNIPO_PLAYGROUNDS_SIM) and from
 * node (module.exports).
 */
(function (root, factory) {
  "use strict";
  var node = typeof module === "object" && module.exports;
  var api = factory(node ? require("../views/explainer/unipo-math.js") : root.UNIPO_MATH);
  if (node) module.exports = api;
  else root.UNIPO_PLAYGROUNDS_SIM = api;
})(typeof self !== "undefined" ? self : this, function (M) {
  "use strict";

  /* ------------------------------------------------------------------ rng.py */

  var TWO_32 = 4294967296;

  // mulberry32 draw number k (k >= 1) of a stream: its state after k steps is seed + k * C.
  function mulberry32At(seed, k) {
    var a = (seed + Math.imul(k, 0x6d2b79f5)) | 0;
    var t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / TWO_32;
  }

  function streamSeed(seed, stream) {
    return (seed ^ Math.imul(stream + 1, 0x9e3779b9)) >>> 0;
  }

  function Stream(seed) {
    this.seed = seed >>> 0;
    this.position = 0;
  }
  Stream.prototype.uniforms = function (n) {
    var out = new Float64Array(n);
    for (var i = 0; i < n; i++) out[i] = mulberry32At(this.seed, this.position + i + 1);
    this.position += n;
    return out;
  };
  Stream.prototype.normals = function (n) {
    var u = this.uniforms(2 * n);
    var out = new Float64Array(n);
    for (var i = 0; i < n; i++) out[i] = boxMuller(u[2 * i], u[2 * i + 1]);
    return out;
  };

  function boxMuller(u1, u2) {
    return Math.sqrt(-2.0 * Math.log(1.0 - u1)) * Math.cos(2.0 * Math.PI * u2);
  }

  /* ---------------------------------------------------------- small helpers */

  var mean = M.mean;

  function stdSample(xs, m) {
    if (xs.length < 2) return 0;
    var s = 0;
    for (var i = 0; i < xs.length; i++) s += (xs[i] - m) * (xs[i] - m);
    return Math.sqrt(s / (xs.length - 1));
  }

  // components.group_zscore_advantage for one group (std n-1, eps 1e-6; exactly 0 when every
  // reward is equal): the one math port's.
  function groupZscore(xs) {
    return Float64Array.from(M.groupZscoreAdvantage(xs, 1, 1e-6));
  }

  function sigmoid(x) {
    return 0.5 * (1.0 + Math.tanh(0.5 * x));
  }

  function median(xs) {
    var v = Array.prototype.slice.call(xs).sort(function (a, b) { return a - b; });
    var n = v.length;
    return n % 2 ? v[(n - 1) / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  }

  /* ------------------------------------------------------- objective_1d.py */

  var LOG_2PI = Math.log(2.0 * Math.PI);

  function reward(a, bumps) {
    var total = 0;
    for (var k = 0; k < bumps.length; k++) {
      var b = bumps[k];
      total += b.height * Math.exp(-((a - b.center) * (a - b.center)) / (2.0 * b.width * b.width));
    }
    return total;
  }

  function logNormalPdf(a, mu, sigma) {
    var z = (a - mu) / sigma;
    return -0.5 * z * z - Math.log(sigma) - 0.5 * LOG_2PI;
  }

  function expectedReward(mu, sigma, bumps) {
    var total = 0;
    for (var k = 0; k < bumps.length; k++) {
      var b = bumps[k];
      var v = b.width * b.width + sigma * sigma;
      total += b.height * b.width / Math.sqrt(v) * Math.exp(-((mu - b.center) * (mu - b.center)) / (2.0 * v));
    }
    return total;
  }

  function expectedRewardGrad(mu, logSigma, bumps) {
    var sigma = Math.exp(logSigma);
    var dMu = 0;
    var dS = 0;
    for (var k = 0; k < bumps.length; k++) {
      var b = bumps[k];
      var v = b.width * b.width + sigma * sigma;
      var d = mu - b.center;
      var f = b.height * b.width / Math.sqrt(v) * Math.exp(-(d * d) / (2.0 * v));
      dMu += -f * d / v;
      dS += f * sigma * sigma * (d * d / (v * v) - 1.0 / v);
    }
    return [dMu, dS];
  }

  function klToRef(mu, sigma, refSigma) {
    return Math.log(refSigma / sigma) + (sigma * sigma + mu * mu) / (2.0 * refSigma * refSigma) - 0.5;
  }

  function klGrad(mu, logSigma, refSigma) {
    var sigma = Math.exp(logSigma);
    return [mu / (refSigma * refSigma), (sigma * sigma) / (refSigma * refSigma) - 1.0];
  }

  function objective(mu, sigma, bumps, beta, refSigma) {
    return expectedReward(mu, sigma, bumps) - beta * klToRef(mu, sigma, refSigma);
  }

  function objectiveGrad(mu, logSigma, bumps, beta, refSigma) {
    var r = expectedRewardGrad(mu, logSigma, bumps);
    var k = klGrad(mu, logSigma, refSigma);
    return [r[0] - beta * k[0], r[1] - beta * k[1]];
  }

  function linspace(lo, hi, n) {
    var out = new Float64Array(n);
    var step = (hi - lo) / (n - 1);
    for (var i = 0; i < n; i++) out[i] = lo + i * step;
    out[n - 1] = hi;
    return out;
  }

  // pi* = pi_ref exp(r / beta) / Z: mean, std and log Z by the trapezoid rule in log space.
  function piStar(bumps, beta, cfg) {
    var g = cfg.piStarGrid;
    var grid = linspace(g[0], g[1], g[2]);
    var n = grid.length;
    var logW = new Float64Array(n);
    var top = -Infinity;
    for (var i = 0; i < n; i++) {
      logW[i] = logNormalPdf(grid[i], 0.0, cfg.refSigma) + reward(grid[i], bumps) / beta;
      if (logW[i] > top) top = logW[i];
    }
    var dx = grid[1] - grid[0];
    var z = 0;
    var m1 = 0;
    for (i = 0; i < n; i++) {
      var w = Math.exp(logW[i] - top) * (i === 0 || i === n - 1 ? dx / 2.0 : dx);
      z += w;
      m1 += w * grid[i];
    }
    var meanA = m1 / z;
    var v = 0;
    for (i = 0; i < n; i++) {
      var w2 = Math.exp(logW[i] - top) * (i === 0 || i === n - 1 ? dx / 2.0 : dx);
      v += w2 * (grid[i] - meanA) * (grid[i] - meanA);
    }
    return { mean: meanA, std: Math.sqrt(v / z), logZ: Math.log(z) + top };
  }

  function presetBumps(cfg, settings) {
    var preset = cfg.presets[settings.preset];
    if (!preset) throw new Error("unknown reward preset " + settings.preset);
    return preset.bumps;
  }

  function clampLogSigma(s, cfg) {
    return Math.min(Math.max(s, cfg.logSigmaMin), cfg.logSigmaMax);
  }

  function Trajectory(method) {
    this.method = method;
    this.mu = [];
    this.logSigma = [];
    this.objective = [];
    this.value = [];
    this.clipFraction = [];
  }
  Trajectory.prototype.record = function (mu, s, bumps, beta, refSigma) {
    this.mu.push(mu);
    this.logSigma.push(s);
    this.objective.push(objective(mu, Math.exp(s), bumps, beta, refSigma));
  };

  function score(a, mu, logSigma) {
    var sigma2 = Math.exp(2.0 * logSigma);
    var d = a - mu;
    return [d / sigma2, d * d / sigma2 - 1.0];
  }

  function startMu(settings, cfg) {
    return settings.startMu === undefined ? cfg.startMu : settings.startMu;
  }

  function startSigma(settings, cfg) {
    return settings.startSigma === undefined ? cfg.startSigma : settings.startSigma;
  }

  function lr(cfg, settings, method) {
    return cfg.learningRates[method] * (settings.lrScale === undefined ? 1.0 : settings.lrScale);
  }

  function runExact(settings, cfg) {
    var bumps = presetBumps(cfg, settings);
    var beta = settings.beta;
    var eta = lr(cfg, settings, "exact");
    var mu = startMu(settings, cfg);
    var s = Math.log(startSigma(settings, cfg));
    var traj = new Trajectory("exact");
    traj.record(mu, s, bumps, beta, cfg.refSigma);
    for (var step = 0; step < settings.steps; step++) {
      var g = objectiveGrad(mu, s, bumps, beta, cfg.refSigma);
      mu = mu + eta * g[0];
      s = clampLogSigma(s + eta * g[1], cfg);
      traj.record(mu, s, bumps, beta, cfg.refSigma);
    }
    return traj;
  }

  function runPg(settings, cfg, stream) {
    var bumps = presetBumps(cfg, settings);
    var beta = settings.beta;
    var eta = lr(cfg, settings, "pg");
    var n = settings.nSamples;
    var mu = startMu(settings, cfg);
    var s = Math.log(startSigma(settings, cfg));
    var traj = new Trajectory("pg");
    traj.record(mu, s, bumps, beta, cfg.refSigma);
    for (var step = 0; step < settings.steps; step++) {
      var z = stream.normals(n);
      var sigma = Math.exp(s);
      var a = new Float64Array(n);
      var r = new Float64Array(n);
      for (var i = 0; i < n; i++) {
        a[i] = mu + sigma * z[i];
        r[i] = reward(a[i], bumps);
      }
      var rBar = mean(r);
      var gMu = 0;
      var gS = 0;
      for (i = 0; i < n; i++) {
        var sc = score(a[i], mu, s);
        gMu += (r[i] - rBar) * sc[0];
        gS += (r[i] - rBar) * sc[1];
      }
      var k = klGrad(mu, s, cfg.refSigma);
      gMu = gMu / n - beta * k[0];
      gS = gS / n - beta * k[1];
      mu = mu + eta * gMu;
      s = clampLogSigma(s + eta * gS, cfg);
      traj.record(mu, s, bumps, beta, cfg.refSigma);
    }
    return traj;
  }

  // K epochs of the clipped surrogate on fixed samples (see _clipped_epochs in Python).
  function clippedEpochs(mu, s, a, adv, settings, cfg, eta) {
    var n = a.length;
    var sigmaOld = Math.exp(s);
    var oldLogp = new Float64Array(n);
    for (var i = 0; i < n; i++) oldLogp[i] = logNormalPdf(a[i], mu, sigmaOld);
    var clipped = 0;
    var low = 1.0 - settings.eps;
    var high = 1.0 + settings.eps;
    for (var epoch = 0; epoch < settings.epochs; epoch++) {
      var sigma = Math.exp(s);
      var gMu = 0;
      var gS = 0;
      for (i = 0; i < n; i++) {
        var ratio = Math.exp(logNormalPdf(a[i], mu, sigma) - oldLogp[i]);
        var isClipped = (adv[i] > 0 && ratio > high) || (adv[i] < 0 && ratio < low);
        if (isClipped) {
          clipped += 1;
          continue;
        }
        var sc = score(a[i], mu, s);
        gMu += ratio * adv[i] * sc[0];
        gS += ratio * adv[i] * sc[1];
      }
      var k = klGrad(mu, s, cfg.refSigma);
      gMu = gMu / n - settings.beta * k[0];
      gS = gS / n - settings.beta * k[1];
      mu = mu + eta * gMu;
      s = clampLogSigma(s + eta * gS, cfg);
    }
    return { mu: mu, s: s, clipFraction: clipped / (settings.epochs * n) };
  }

  function runPpo(settings, cfg, stream) {
    var bumps = presetBumps(cfg, settings);
    var beta = settings.beta;
    var n = settings.nSamples;
    var mu = startMu(settings, cfg);
    var s = Math.log(startSigma(settings, cfg));
    var value = 0.0;
    var traj = new Trajectory("ppo");
    traj.record(mu, s, bumps, beta, cfg.refSigma);
    traj.value.push(value);
    for (var step = 0; step < settings.steps; step++) {
      var z = stream.normals(n);
      var sigma = Math.exp(s);
      var a = new Float64Array(n);
      var r = new Float64Array(n);
      var adv = new Float64Array(n);
      for (var i = 0; i < n; i++) {
        a[i] = mu + sigma * z[i];
        r[i] = reward(a[i], bumps);
        adv[i] = r[i] - value;
      }
      var out = clippedEpochs(mu, s, a, adv, settings, cfg, lr(cfg, settings, "ppo"));
      mu = out.mu;
      s = out.s;
      value = value + cfg.valueLearningRate * (mean(r) - value);
      traj.record(mu, s, bumps, beta, cfg.refSigma);
      traj.value.push(value);
      traj.clipFraction.push(out.clipFraction);
    }
    return traj;
  }

  function runGrpo(settings, cfg, stream) {
    var bumps = presetBumps(cfg, settings);
    var beta = settings.beta;
    var g = settings.groupSize;
    var mu = startMu(settings, cfg);
    var s = Math.log(startSigma(settings, cfg));
    var traj = new Trajectory("grpo");
    traj.record(mu, s, bumps, beta, cfg.refSigma);
    for (var step = 0; step < settings.steps; step++) {
      var z = stream.normals(g);
      var sigma = Math.exp(s);
      var a = new Float64Array(g);
      var r = new Float64Array(g);
      for (var i = 0; i < g; i++) {
        a[i] = mu + sigma * z[i];
        r[i] = reward(a[i], bumps);
      }
      var out = clippedEpochs(mu, s, a, groupZscore(r), settings, cfg, lr(cfg, settings, "grpo"));
      mu = out.mu;
      s = out.s;
      traj.record(mu, s, bumps, beta, cfg.refSigma);
      traj.clipFraction.push(out.clipFraction);
    }
    return traj;
  }

  function runDpo(settings, cfg, stream) {
    var bumps = presetBumps(cfg, settings);
    var beta = settings.beta;
    var n = settings.nSamples;
    var eta = lr(cfg, settings, "dpo") / (beta * beta);
    var ref = cfg.refSigma;
    var mu = startMu(settings, cfg);
    var s = Math.log(startSigma(settings, cfg));
    var traj = new Trajectory("dpo");
    traj.record(mu, s, bumps, beta, ref);
    for (var step = 0; step < settings.steps; step++) {
      var u = stream.uniforms(5 * n);
      var sigma = Math.exp(s);
      var gMu = 0;
      var gS = 0;
      for (var i = 0; i < n; i++) {
        var x = ref * boxMuller(u[5 * i], u[5 * i + 1]);
        var y = ref * boxMuller(u[5 * i + 2], u[5 * i + 3]);
        var xWins = u[5 * i + 4] < sigmoid(reward(x, bumps) - reward(y, bumps));
        var win = xWins ? x : y;
        var lose = xWins ? y : x;
        var lrW = logNormalPdf(win, mu, sigma) - logNormalPdf(win, 0.0, ref);
        var lrL = logNormalPdf(lose, mu, sigma) - logNormalPdf(lose, 0.0, ref);
        var h = beta * (lrW - lrL);
        var weight = sigmoid(-h) * beta;
        var sw = score(win, mu, s);
        var sl = score(lose, mu, s);
        gMu += weight * (sw[0] - sl[0]);
        gS += weight * (sw[1] - sl[1]);
      }
      mu = mu + eta * (gMu / n);
      s = clampLogSigma(s + eta * (gS / n), cfg);
      traj.record(mu, s, bumps, beta, ref);
    }
    return traj;
  }

  function runDro(settings, cfg, stream) {
    var bumps = presetBumps(cfg, settings);
    var beta = settings.beta;
    var n = settings.nSamples;
    var eta = lr(cfg, settings, "dro") / (beta * beta);
    var ref = cfg.refSigma;
    var mu = startMu(settings, cfg);
    var s = Math.log(startSigma(settings, cfg));
    var value = 0.0;
    var traj = new Trajectory("dro");
    traj.record(mu, s, bumps, beta, ref);
    traj.value.push(value);
    for (var step = 0; step < settings.steps; step++) {
      var z = stream.normals(n);
      var sigma = Math.exp(s);
      var gMu = 0;
      var gS = 0;
      var deltaSum = 0;
      for (var i = 0; i < n; i++) {
        var a = ref * z[i];
        var logRatio = logNormalPdf(a, mu, sigma) - logNormalPdf(a, 0.0, ref);
        var delta = reward(a, bumps) - value - beta * logRatio;
        var sc = score(a, mu, s);
        gMu += delta * beta * sc[0];
        gS += delta * beta * sc[1];
        deltaSum += delta;
      }
      mu = mu + eta * (gMu / n);
      s = clampLogSigma(s + eta * (gS / n), cfg);
      value = value + cfg.valueLearningRate * (deltaSum / n);
      traj.record(mu, s, bumps, beta, ref);
      traj.value.push(value);
    }
    return traj;
  }

  var RUNNERS = { exact: runExact, pg: runPg, ppo: runPpo, grpo: runGrpo, dpo: runDpo, dro: runDro };

  function runMethod(method, settings, cfg, seed) {
    var index = cfg.methods.indexOf(method);
    if (index < 0) throw new Error("unknown method " + method);
    var stream = new Stream(streamSeed(seed === undefined ? settings.seed : seed, index));
    return RUNNERS[method](settings, cfg, stream);
  }

  // J(theta_t) over seeds seed .. seed + nSeeds - 1: median, min and max per step.
  function objectiveBand(method, settings, cfg, nSeeds) {
    var runs = [];
    for (var k = 0; k < nSeeds; k++) runs.push(runMethod(method, settings, cfg, settings.seed + k).objective);
    var steps = runs[0].length;
    var med = new Float64Array(steps);
    var lo = new Float64Array(steps);
    var hi = new Float64Array(steps);
    for (var t = 0; t < steps; t++) {
      var col = runs.map(function (run) { return run[t]; });
      med[t] = median(col);
      lo[t] = Math.min.apply(null, col);
      hi[t] = Math.max.apply(null, col);
    }
    return { method: method, median: med, low: lo, high: hi };
  }

  function surface(bumps, beta, cfg) {
    var mus = linspace(cfg.surfaceMu[0], cfg.surfaceMu[1], cfg.surfaceMu[2]);
    var sigmas = linspace(cfg.surfaceSigma[0], cfg.surfaceSigma[1], cfg.surfaceSigma[2]);
    var rows = [];
    for (var j = 0; j < sigmas.length; j++) {
      for (var i = 0; i < mus.length; i++) {
        rows.push({ mu: mus[i], sigma: sigmas[j], J: objective(mus[i], sigmas[j], bumps, beta, cfg.refSigma) });
      }
    }
    return rows;
  }

  /* ------------------------------------------------------- multi_reward.py */

  // rewards: array of groups; a group is an array of rollouts; a rollout an array of K values.
  function weightedTotals(group, weights) {
    return group.map(function (x) {
      var t = 0;
      for (var k = 0; k < x.length; k++) t += x[k] * weights[k];
      return t;
    });
  }

  function grpoAdvantages(rewards, weights) {
    return rewards.map(function (group) {
      return Array.from(groupZscore(weightedTotals(group, weights)));
    });
  }

  function gdpoSums(rewards, weights) {
    return rewards.map(function (group) {
      var K = group[0].length;
      var perReward = [];
      for (var k = 0; k < K; k++) perReward.push(groupZscore(group.map(function (x) { return x[k]; })));
      return group.map(function (_, i) {
        var t = 0;
        for (var k2 = 0; k2 < K; k2++) t += perReward[k2][i] * weights[k2];
        return t;
      });
    });
  }

  function gdpoAdvantages(rewards, weights, batchEps) {
    var sums = gdpoSums(rewards, weights);
    var flat = [].concat.apply([], sums);
    var m = mean(flat);
    var sd = stdSample(flat, m);
    var eps = batchEps === undefined ? 1e-4 : batchEps;
    return sums.map(function (group) {
      return group.map(function (x) { return (x - m) / (sd + eps); });
    });
  }

  // Rollouts of one group with different reward vectors but equal advantages (to 1e-9).
  function collapsedGroups(rewards, advantages) {
    var byValue = new Map();
    advantages.forEach(function (adv, i) {
      var key = Math.round(adv * 1e9) / 1e9;
      if (!byValue.has(key)) byValue.set(key, []);
      byValue.get(key).push(i);
    });
    var out = [];
    Array.from(byValue.keys()).sort(function (a, b) { return a - b; }).forEach(function (key) {
      var members = byValue.get(key);
      var vectors = new Set(members.map(function (i) { return rewards[i].join(","); }));
      if (vectors.size > 1) out.push(members);
    });
    return out;
  }

  function trainBernoulli(method, toy, cfg, seed) {
    var stream = new Stream(streamSeed(seed === undefined ? toy.seed : seed, cfg.toyMethods.indexOf(method)));
    var K = toy.initProbs.length;
    var logits = toy.initProbs.map(function (p) { return Math.log(p / (1.0 - p)); });
    var probs = logits.map(function (l) { return 1.0 / (1.0 + Math.exp(-l)); });
    var history = [probs];
    for (var epoch = 0; epoch < toy.epochs; epoch++) {
      var u = stream.uniforms(toy.nGroups * toy.groupSize * K);
      var batch = [];
      var c = 0;
      for (var g = 0; g < toy.nGroups; g++) {
        var group = [];
        for (var i = 0; i < toy.groupSize; i++) {
          var x = [];
          for (var k = 0; k < K; k++) x.push(u[c++] < probs[k] ? 1.0 : 0.0);
          group.push(x);
        }
        batch.push(group);
      }
      var adv = method === "grpo" ? grpoAdvantages(batch, toy.weights) : gdpoAdvantages(batch, toy.weights);
      var count = toy.nGroups * toy.groupSize;
      logits = logits.map(function (l, k3) {
        var grad = 0;
        for (var g2 = 0; g2 < toy.nGroups; g2++) {
          for (var i2 = 0; i2 < toy.groupSize; i2++) grad += adv[g2][i2] * (batch[g2][i2][k3] - probs[k3]);
        }
        return l + toy.lr * (grad / count);
      });
      probs = logits.map(function (l) { return 1.0 / (1.0 + Math.exp(-l)); });
      history.push(probs);
    }
    return history;
  }

  return {
    Stream: Stream,
    streamSeed: streamSeed,
    reward: reward,
    logNormalPdf: logNormalPdf,
    expectedReward: expectedReward,
    klToRef: klToRef,
    objective: objective,
    objectiveGrad: objectiveGrad,
    piStar: piStar,
    runMethod: runMethod,
    objectiveBand: objectiveBand,
    surface: surface,
    linspace: linspace,
    grpoAdvantages: grpoAdvantages,
    gdpoSums: gdpoSums,
    gdpoAdvantages: gdpoAdvantages,
    collapsedGroups: collapsedGroups,
    trainBernoulli: trainBernoulli,
  };
});
