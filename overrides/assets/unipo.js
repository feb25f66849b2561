/*
 * UNIPO render entry point.
 *
 * Runs once per page: on the first load (DOMContentLoaded, through Material's document$) and
 * after every instant navigation (document$ emits again). Each pass
 *   - renders the formulas that pymdownx.arithmatex left as \( .. \) and \[ .. \] with KaTeX,
 *   - draws the Vega-Lite charts written by unipo_build.render.vega_embed
 *     (<div class="unipo-vega" data-spec-id=ID> + <template class="unipo-data" id=ID>JSON),
 *   - runs the renderers that view scripts registered with UNIPO.register(name, fn).
 * Everything is idempotent: rendered elements carry data-unipo-rendered.
 * Charts follow Material's colour scheme and are drawn again when the reader toggles it.
 */
(function () {
  "use strict";

  if (window.UNIPO && window.UNIPO.__entry) return;

  var renderers = [];
  var processedRoots = new WeakSet();
  var currentRoot = null;
  var views = new WeakMap(); // chart element -> Vega view
  var directSpecs = new WeakMap(); // chart element -> spec given to UNIPO.embed
  var generations = new WeakMap(); // chart element -> number of the latest embed call

  // The project's own classes, which the build wraps around parts of a formula (a slot, a diff
  // status, a highlight): "unipo-" and lower-case letters, digits and dashes.
  var OWN_CLASS = /^unipo-[a-z0-9-]+$/;

  var KATEX_OPTIONS = {
    throwOnError: false,
    // Trust one command only: \htmlClass, and only when every class it adds is one of the
    // project's own. \href, \url, \includegraphics, \htmlId, \htmlData and \htmlStyle are refused
    // (KaTeX then shows them as an error in the formula's colour, never as a link or an image).
    trust: function (ctx) {
      if (ctx.command !== "\\htmlClass") return false;
      var classes = String(ctx.class || "").split(/\s+/).filter(Boolean);
      return classes.length > 0 && classes.every(function (c) { return OWN_CLASS.test(c); });
    },
    strict: function (errorCode) {
      return errorCode === "htmlExtension" ? "ignore" : "warn";
    },
    // No rule or box larger than a page, no runaway macro expansion.
    maxSize: 100,
    maxExpand: 1000,
  };

  function pageRoot() {
    return document.querySelector('[data-md-component="content"]') || document.body;
  }

  function scheme() {
    return (document.body && document.body.getAttribute("data-md-color-scheme")) || "default";
  }

  /* ---------------------------------------------------------------- formulas */

  function renderMath(root) {
    if (!window.katex) {
      console.error("UNIPO: KaTeX is not loaded; formulas stay as TeX source.");
      return;
    }
    var nodes = (root || pageRoot()).querySelectorAll(".arithmatex:not([data-unipo-rendered])");
    Array.prototype.forEach.call(nodes, function (el) {
      var tex = el.textContent.trim();
      var display = el.tagName !== "SPAN";
      if (tex.slice(0, 2) === "\\[" && tex.slice(-2) === "\\]") {
        display = true;
        tex = tex.slice(2, -2);
      } else if (tex.slice(0, 2) === "\\(" && tex.slice(-2) === "\\)") {
        display = false;
        tex = tex.slice(2, -2);
      }
      var options = Object.assign({ displayMode: display }, KATEX_OPTIONS);
      window.katex.render(tex, el, options);
      el.setAttribute("data-unipo-rendered", "katex");
    });
  }

  /* ------------------------------------------------------------------ charts */

  function cssVar(style, name, fallback) {
    var value = style.getPropertyValue(name).trim();
    return value || fallback;
  }

  // A Vega config that takes its colours and font from Material's current scheme.
  function chartConfig() {
    var style = getComputedStyle(document.body);
    var fg = cssVar(style, "--md-default-fg-color", "rgba(0,0,0,0.87)");
    var light = cssVar(style, "--md-default-fg-color--light", "rgba(0,0,0,0.54)");
    var lighter = cssVar(style, "--md-default-fg-color--lighter", "rgba(0,0,0,0.32)");
    var lightest = cssVar(style, "--md-default-fg-color--lightest", "rgba(0,0,0,0.07)");
    var font = style.fontFamily || "sans-serif";
    var axis = {
      domainColor: lighter,
      tickColor: lighter,
      gridColor: lightest,
      labelColor: light,
      titleColor: fg,
      labelFont: font,
      titleFont: font,
      labelFontSize: 12,
      titleFontSize: 12,
      titleFontWeight: "normal",
    };
    return {
      background: "transparent",
      font: font,
      view: { stroke: lightest },
      axis: axis,
      legend: { labelColor: fg, titleColor: fg, labelFont: font, titleFont: font, labelFontSize: 12 },
      title: { color: fg, subtitleColor: light, font: font },
      header: { labelColor: fg, titleColor: fg, labelFont: font, titleFont: font },
      text: { color: fg },
      rule: { color: fg },
    };
  }

  // Data and images may only come from this site (DESIGN: nothing from another host).
  var loader = null;
  function sameOriginLoader() {
    if (loader) return loader;
    loader = window.vega.loader();
    var sanitize = loader.sanitize;
    loader.sanitize = function (uri, options) {
      return sanitize.call(loader, uri, options).then(function (result) {
        var url = new URL(result.href, document.baseURI);
        if (url.origin !== window.location.origin && url.protocol !== "data:") {
          throw new Error("UNIPO: refusing to load " + url.href + " from another host");
        }
        return result;
      });
    };
    return loader;
  }

  // Data written by unipo_build.render.json_data: JSON in <template class="unipo-data" id=ID>.
  // (A <script type="application/json"> would not survive Material's instant navigation,
  // which re-creates scripts without their attributes.)
  // Each call parses afresh, so callers may change what they get.
  function readData(id) {
    var node = id ? document.getElementById(id) : null;
    if (!node) throw new Error("no data element with id " + JSON.stringify(id));
    var text = node.tagName === "TEMPLATE" ? node.content.textContent : node.textContent;
    return JSON.parse(text);
  }

  function specFor(el) {
    if (directSpecs.has(el)) return directSpecs.get(el);
    return readData(el.getAttribute("data-spec-id"));
  }

  function embed(el) {
    if (!window.vegaEmbed || !window.vega) {
      console.error("UNIPO: Vega is not loaded; charts are not drawn.");
      return Promise.resolve();
    }
    var generation = (generations.get(el) || 0) + 1;
    generations.set(el, generation);
    var wanted = scheme();
    var spec;
    try {
      spec = specFor(el);
    } catch (err) {
      el.setAttribute("data-unipo-rendered", "error");
      console.error("UNIPO: chart " + el.getAttribute("data-spec-id") + ": " + err.message);
      return Promise.resolve();
    }
    el.setAttribute("data-unipo-rendered", "pending");
    if (!window.vegaInterpreter) {
      el.setAttribute("data-unipo-rendered", "error");
      console.error("UNIPO: vega-interpreter is not loaded; charts are not drawn.");
      return Promise.resolve();
    }
    var options = {
      actions: false,
      renderer: "svg",
      defaultStyle: false,
      config: chartConfig(),
      loader: sameOriginLoader(),
      // The site's Content-Security-Policy allows no eval: Vega interprets its expressions
      // (ast: true) with vega-interpreter instead of compiling them to functions.
      ast: true,
      expr: window.vegaInterpreter.expressionInterpreter,
      // vega-tooltip's own <style> element would be refused by the policy: unipo.css styles it.
      tooltip: { theme: wanted === "slate" ? "dark" : "light", disableDefaultStyle: true },
    };
    return window.vegaEmbed(el, spec, options).then(
      function (result) {
        if (generations.get(el) !== generation) {
          result.view.finalize(); // a newer embed (scheme toggled again) replaced this one
          return;
        }
        var old = views.get(el);
        if (old && old !== result.view) old.finalize();
        views.set(el, result.view);
        el.setAttribute("data-unipo-rendered", wanted);
      },
      function (err) {
        if (generations.get(el) !== generation) return;
        el.setAttribute("data-unipo-rendered", "error");
        el.textContent = "This chart could not be drawn: " + err.message;
        console.error("UNIPO: chart " + el.getAttribute("data-spec-id") + " failed:", err);
      }
    );
  }

  function renderCharts(root) {
    var nodes = (root || pageRoot()).querySelectorAll(".unipo-vega:not([data-unipo-rendered])");
    return Promise.all(Array.prototype.map.call(nodes, embed));
  }

  function redrawChartsForScheme() {
    var wanted = scheme();
    var nodes = document.querySelectorAll(".unipo-vega[data-unipo-rendered]");
    Array.prototype.forEach.call(nodes, function (el) {
      var state = el.getAttribute("data-unipo-rendered");
      if (state !== wanted && state !== "error") embed(el);
    });
  }

  /* --------------------------------------------------------------- renderers */

  function runRenderer(entry, root) {
    try {
      entry.fn(root);
    } catch (err) {
      console.error("UNIPO: renderer '" + entry.name + "' failed:", err);
    }
  }

  function renderPage() {
    var root = pageRoot();
    if (processedRoots.has(root)) return; // this page has had its pass
    processedRoots.add(root);
    currentRoot = root;
    renderMath(root);
    renderCharts(root);
    renderers.forEach(function (entry) {
      runRenderer(entry, root);
    });
    document.dispatchEvent(new CustomEvent("unipo:rendered", { detail: { root: root } }));
  }

  window.UNIPO = {
    __entry: true,
    /**
     * Register a per-page renderer: fn(root) runs on every page (root: the page's content
     * element), after formulas and charts. It must be idempotent. Registering a name again
     * replaces the earlier function. A renderer registered after the page pass runs at once.
     */
    register: function (name, fn) {
      if (typeof name !== "string" || !name) throw new TypeError("UNIPO.register: name must be a non-empty string");
      if (typeof fn !== "function") throw new TypeError("UNIPO.register: fn must be a function");
      var entry = { name: name, fn: fn };
      var index = renderers.findIndex(function (r) { return r.name === name; });
      if (index >= 0) renderers[index] = entry;
      else renderers.push(entry);
      if (currentRoot && document.contains(currentRoot)) runRenderer(entry, currentRoot);
    },
    /** Render formulas and charts inside an element a view has just filled. */
    render: function (root) {
      renderMath(root);
      return renderCharts(root);
    },
    renderMath: renderMath,
    /** The parsed JSON of a data element written by unipo_build.render.json_data. */
    data: readData,
    /** Draw `spec` (a Vega-Lite spec object) into `el`; it follows scheme toggles like the others. */
    embed: function (el, spec) {
      el.classList.add("unipo-vega");
      directSpecs.set(el, spec);
      return embed(el);
    },
    /** The Vega view drawn in a chart element, once drawn. */
    view: function (el) {
      return views.get(el) || null;
    },
    scheme: scheme,
    chartConfig: chartConfig,
    katexOptions: function () {
      return Object.assign({}, KATEX_OPTIONS);
    },
  };

  function start() {
    var lastScheme = scheme();
    new MutationObserver(function () {
      var now = scheme();
      if (now === lastScheme) return;
      lastScheme = now;
      redrawChartsForScheme();
      document.dispatchEvent(new CustomEvent("unipo:schemechange", { detail: { scheme: now } }));
    }).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });

    // Material's document$ replays the current page and emits after each instant navigation;
    // without Material's bundle, render the page once.
    if (window.document$ && typeof window.document$.subscribe === "function") {
      window.document$.subscribe(renderPage);
    } else {
      renderPage();
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start, { once: true });
  } else {
    start();
  }
})();
