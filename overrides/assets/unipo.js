/*
 * UNIPO render entry point.
 *
 * Runs once per page: on the first load (DOMContentLoaded, through Material's document$) and
 * after every instant navigation (document$ emits again). Each pass
 *   - renders the formulas that pymdownx.arithmatex left as \( .. \) and \[ .. \] with KaTeX,
 *   - draws the Vega-Lite charts written by unipo_build.site.render.vega_embed
 *     (<div class="unipo-vega" data-spec-id=ID> + <template class="unipo-data" id=ID>JSON),
 *   - runs the renderers that view scripts registered with UNIPO.register(name, fn).
 * Everything is idempotent: rendered elements carry data-unipo-rendered.
 * Charts follow Material's colour scheme and are drawn again when the reader toggles it.
 */
(function () {
  "use strict";

  if (window.UNIPO && window.UNIPO.__entry) return;

  // The page's browser data (unipo_build/site/browser.py browser_data, written before this script
  // by overrides/main.html): every event name the scripts dispatch or hear (UNIPO.events) and how
  // a step's token file is named (UNIPO.stepFile). No script writes one of these names itself.
  var BROWSER = readData("unipo-browser");
  var EVENTS = BROWSER.events;

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

  /** Hidden in a closed <details>: inside one, and not in that one's <summary>, which shows. */
  function folded(el) {
    for (var d = el.closest("details:not([open])"); d; d = d.parentElement && d.parentElement.closest("details:not([open])")) {
      var summary = el.closest("summary");
      if (!summary || summary.parentElement !== d) return true;
    }
    return false;
  }

  function renderMath(root) {
    if (!window.katex) {
      console.error("UNIPO: KaTeX is not loaded; formulas stay as TeX source.");
      return;
    }
    var nodes = (root || pageRoot()).querySelectorAll(".arithmatex:not([data-unipo-rendered])");
    Array.prototype.forEach.call(nodes, function (el) {
      // Inside a closed <details> a formula is typeset when the reader opens it (a chapter's
      // cards and folded rows hold thousands of KaTeX nodes nobody sees until then); one far
      // below or above the viewport when it comes within a screen of it. A chapter's formulas
      // are some 7,000 DOM nodes: typesetting them all at load slows every later layout.
      if (folded(el)) {
        el.setAttribute("data-unipo-rendered", "deferred");
        return;
      }
      if (nearby && !nearViewport(el)) {
        el.setAttribute("data-unipo-rendered", "deferred");
        nearby.observe(el);
        return;
      }
      typeset(el);
    });
  }

  var MARGIN = 0.5; // screens above and below the viewport typeset at once (the observer's margin)
  function nearViewport(el) {
    if (!el.getClientRects().length) return false; // not laid out (a hidden tab): when it shows
    var rect = el.getBoundingClientRect();
    var h = window.innerHeight || 800;
    return rect.bottom >= -MARGIN * h && rect.top <= (1 + MARGIN) * h;
  }

  var nearby = window.IntersectionObserver ? new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) {
      if (!entry.isIntersecting) return;
      var el = entry.target;
      nearby.unobserve(el);
      if (el.getAttribute("data-unipo-rendered") !== "deferred" || !window.katex) return;
      if (folded(el)) return; // typeset when opened
      typeset(el);
    });
  }, { rootMargin: MARGIN * 100 + "% 0px" }) : null;

  function typeset(el) {
    var tex = el.textContent.trim();
    var display = el.tagName !== "SPAN";
    if (tex.slice(0, 2) === "\\[" && tex.slice(-2) === "\\]") {
      display = true;
      tex = tex.slice(2, -2);
    } else if (tex.slice(0, 2) === "\\(" && tex.slice(-2) === "\\)") {
      display = false;
      tex = tex.slice(2, -2);
    }
    window.katex.render(tex, el, Object.assign({ displayMode: display }, KATEX_OPTIONS));
    el.setAttribute("data-unipo-rendered", "katex");
    // A view that decorates its formulas (the explainer's clickable parts) hears when one is ready.
    el.dispatchEvent(new CustomEvent(EVENTS.typeset, { bubbles: true }));
  }

  /** Typeset the formulas and draw the charts deferred inside ``root`` (a <details> just opened; the
   * page, to print). */
  function renderDeferred(root) {
    var inner = function (el) { return root.tagName === "DETAILS" && folded(el); }; // a closed one inside
    if (window.katex) {
      Array.prototype.forEach.call(root.querySelectorAll('.arithmatex[data-unipo-rendered="deferred"]'), function (el) {
        if (!inner(el)) typeset(el);
      });
    }
    Array.prototype.forEach.call(root.querySelectorAll('.unipo-vega[data-unipo-rendered="deferred"]'), function (el) {
      if (!inner(el)) embed(el);
    });
  }

  // A fold whose body the build wrote in a <template class="unipo-fold-body"> (a long list few readers
  // open: the anatomy figure's other groups) has no DOM until it opens; then the body is put in its
  // place and drawn as the page was (formulas, charts, the views' renderers).
  function openFoldBodies(root) {
    var bodies = root.querySelectorAll(root.tagName === "DETAILS" ? ":scope > template.unipo-fold-body"
                                                                 : "template.unipo-fold-body");
    Array.prototype.forEach.call(bodies, function (t) {
      var parent = t.parentElement;
      t.replaceWith(document.importNode(t.content, true));
      renderMath(parent);
      renderCharts(parent);
      renderers.forEach(function (entry) { runRenderer(entry, parent); });
    });
  }

  document.addEventListener("toggle", function (event) {
    if (event.target.tagName !== "DETAILS" || !event.target.open) return;
    openFoldBodies(event.target);
    renderDeferred(event.target);
  }, true);
  window.addEventListener("beforeprint", function () {
    openFoldBodies(document);
    renderDeferred(document);
  });

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

  // Data written by unipo_build.site.render.json_data: JSON in <template class="unipo-data" id=ID>.
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
    var meta = spec.usermeta || {};
    var options = {
      actions: false,
      // SVG, unless a chart of thousands of marks asks for a canvas (usermeta.renderer)
      renderer: meta.renderer === "canvas" ? "canvas" : "svg",
      // usermeta.rangeSignals {domain signal: range signal}: the scale whose domain is the first
      // parameter takes its range from the second, which a view script updates (Vega-Lite
      // cannot take a range from a parameter).
      patch: meta.rangeSignals ? function (vg) {
        (vg.scales || []).forEach(function (scale) {
          var domain = scale.domain && scale.domain.signal;
          if (domain && meta.rangeSignals[domain]) scale.range = { signal: meta.rangeSignals[domain] };
        });
        return vg;
      } : undefined,
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
        labelChart(el, spec);
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

  /** A formula's words for a label: its MathML's text when typeset, else its TeX without delimiters. */
  function plainText(node) {
    var copy = node.cloneNode(true);
    Array.prototype.forEach.call(copy.querySelectorAll(".katex-html, annotation, .headerlink"), function (n) { n.remove(); });
    return copy.textContent.replace(/\\[()[\]]/g, "").replace(/\s+/g, " ").trim();
  }

  var LABEL_MAX = 400;

  /**
   * Every chart says what it shows to a screen reader: vega-embed names its box by the spec's
   * ``description``, else "Vega visualization". A spec without one is named by the box's
   * data-label, else its figure's caption (up to LABEL_MAX characters, cut at a word), else the
   * spec's title, else "Chart".
   */
  function labelChart(el, spec) {
    if (spec && typeof spec.description === "string" && spec.description.trim()) return;
    var label = el.getAttribute("data-label");
    if (!label) {
      var figure = el.closest("figure");
      var caption = figure && figure.querySelector("figcaption");
      label = caption ? plainText(caption) : "";
    }
    if (!label && spec && spec.title) label = typeof spec.title === "string" ? spec.title : String(spec.title.text || "");
    label = label || "Chart";
    if (label.length > LABEL_MAX) label = label.slice(0, label.lastIndexOf(" ", LABEL_MAX)) + "\u2026";
    el.setAttribute("aria-label", label);
  }

  // A chart inside a closed fold is drawn when the fold opens (renderDeferred), as its formulas are
  // typeset then: a page's folds held some 700 DOM nodes of charts nobody had opened, drawn at a
  // width of nothing.
  function renderCharts(root) {
    var nodes = (root || pageRoot()).querySelectorAll(".unipo-vega:not([data-unipo-rendered])");
    return Promise.all(Array.prototype.map.call(nodes, function (el) {
      if (folded(el)) {
        el.setAttribute("data-unipo-rendered", "deferred");
        return Promise.resolve();
      }
      return embed(el);
    }));
  }

  function redrawChartsForScheme() {
    var wanted = scheme();
    var nodes = document.querySelectorAll(".unipo-vega[data-unipo-rendered]");
    Array.prototype.forEach.call(nodes, function (el) {
      var state = el.getAttribute("data-unipo-rendered");
      if (state !== wanted && state !== "error" && state !== "deferred") embed(el);
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
    shownPath = location.pathname + location.search;
    noteArrivals(); // before the views start and write their state back
    currentRoot = root;
    renderMath(root);
    renderCharts(root);
    renderers.forEach(function (entry) {
      runRenderer(entry, root);
    });
    document.dispatchEvent(new CustomEvent(EVENTS.rendered, { detail: { root: root } }));
  }

  /* ------------------------------------------------- same-page links, view state */

  // Material's instant navigation handles every link into the site, same-page anchors included,
  // and its first location change after a page load always fetches the page again (its location
  // stream starts empty): a table-of-contents entry or a heading's permalink would swap the
  // content and reset every view. Links to another part of this page, and history moves within
  // it, are therefore kept from Material (listeners registered before its bundle, which is
  // loaded after this file) and left to the browser's own fragment navigation, which scrolls
  // (Material's :target scroll margins apply) and keeps the page.
  //
  // Views keep what the reader chose in the URL hash, so a link can be shared and the back button
  // steps back through it: "#insp-1a2b3c4d:step=12,group=3;explorer-9f8e7d6c:metrics=reward/mean".
  // One entry per view (its element id without "unipo-"), the view touched last first; a hash
  // that is a plain anchor ("#the-training-run") carries no state and changes no view.

  var shownPath = location.pathname + location.search; // the page whose content is shown
  var watchers = []; // {id, fn}

  function samePage(url) {
    return url.origin === location.origin && url.pathname + url.search === shownPath;
  }

  function decodePart(text) {
    try {
      return decodeURIComponent(text);
    } catch (err) {
      return text;
    }
  }

  function encodePart(text) {
    return encodeURIComponent(String(text)).replace(/%2F/g, "/");
  }

  /** The view states in a hash: [{id, params}], in order (an empty list for a plain anchor). */
  function parseHash(hash) {
    var text = String(hash || "").replace(/^#/, "");
    if (!/^[a-z][a-z0-9-]*:/.test(text)) return [];
    return text.split(";").map(function (entry) {
      var at = entry.indexOf(":");
      if (at < 1) return null;
      var params = {};
      entry.slice(at + 1).split(",").forEach(function (pair) {
        if (!pair) return;
        var eq = pair.indexOf("=");
        var key = decodePart(eq < 0 ? pair : pair.slice(0, eq));
        params[key] = eq < 0 ? "" : pair.slice(eq + 1).split("+").map(decodePart).join("+");
      });
      return { id: entry.slice(0, at), params: params };
    }).filter(Boolean);
  }

  function formatHash(entries) {
    var text = entries.filter(function (e) { return Object.keys(e.params).length; }).map(function (e) {
      return e.id + ":" + Object.keys(e.params).map(function (key) {
        var value = String(e.params[key]).split("+").map(encodePart).join("+");
        return encodePart(key) + "=" + value;
      }).join(",");
    }).join(";");
    return text ? "#" + text : "";
  }

  var state = {
    /** The params the current URL holds for view ``id`` (strings), or null. */
    get: function (id) {
      var found = parseHash(location.hash).filter(function (e) { return e.id === id; })[0];
      return found ? found.params : null;
    },
    /** Whether ``id`` is the view the URL names first (the one a shared link is about). */
    isFirst: function (id) {
      var entries = parseHash(location.hash);
      return entries.length > 0 && entries[0].id === id;
    },
    /**
     * Record view ``id``'s state (an object of strings; empty or null: the view is at its
     * defaults). ``push``: a new history entry (the back button returns to the state before).
     */
    set: function (id, params, push) {
      var entries = parseHash(location.hash).filter(function (e) { return e.id !== id; });
      var clean = {};
      Object.keys(params || {}).forEach(function (key) {
        var value = params[key];
        if (value !== null && value !== undefined && value !== "") clean[key] = String(value);
      });
      if (Object.keys(clean).length) entries.unshift({ id: id, params: clean });
      // the first state a view writes after arriving from another set is where it landed
      if (arrivals[id] && !arrivals[id].landed) arrivals[id].landed = clean;
      var hash = formatHash(entries);
      if (hash === location.hash || (!hash && !location.hash)) return;
      var url = location.pathname + location.search + hash;
      if (push) {
        // The entry the reader leaves keeps where the page was scrolled: Back returns there
        // once the views have restored that entry's state (popstate below).
        history.replaceState(Object.assign({}, history.state, { unipoScroll: window.scrollY }), "", location.href);
        history.pushState({ unipoScroll: null }, "", url);
      } else {
        history.replaceState(history.state, "", url);
      }
    },
    /**
     * Say on view ``id``'s note line that the URL named something the page does not have
     * (``text``: one line), or clear it (no text). The view's element carries the line
     * (.unipo-state-note, made on first use: right after the element ``where``, else first).
     */
    note: function (id, text, where) {
      var view = document.getElementById("unipo-" + id);
      if (!view && !(where && where.parentNode)) return;
      var line = (view || where.parentNode).querySelector('.unipo-state-note[data-for="' + id + '"]');
      if (!text) {
        if (line) line.remove();
        return;
      }
      if (!line) {
        line = document.createElement("p");
        line.className = "unipo-state-note";
        line.setAttribute("data-for", id);
        line.setAttribute("role", "status");
        if (where && where.parentNode) where.parentNode.insertBefore(line, where.nextSibling);
        else view.insertBefore(line, view.firstChild);
      }
      line.textContent = text;
    },
    /**
     * Open views at the states ``entries`` ([{id, params}]) as one new history entry (a guided
     * path's link): the views restore it as after Back, and the page scrolls to the first one's
     * element ``focus`` (a selector inside it, e.g. the selected token) or its top.
     */
    go: function (entries, focus) {
      var kept = parseHash(location.hash).filter(function (e) {
        return !entries.some(function (n) { return n.id === e.id; });
      });
      var hash = formatHash(entries.concat(kept));
      history.replaceState(Object.assign({}, history.state, { unipoScroll: window.scrollY }), "", location.href);
      history.pushState({ unipoScroll: null }, "", location.pathname + location.search + hash);
      return notifyWatchers().then(function () {
        var view = entries.length ? document.getElementById("unipo-" + entries[0].id) : null;
        if (!view) return;
        var target = (focus && view.querySelector(focus)) || view;
        target.scrollIntoView({ block: target === view ? "start" : "center" });
        if (target !== view && target.focus) target.focus({ preventScroll: true });
      });
    },
    /** fn(params or null) when the reader moves through this page's history (back, forward);
     * ``element``: the view's element when it has no id "unipo-" + ``id``. */
    watch: function (id, fn, element) {
      watchers = watchers.filter(alive);
      watchers.push({ id: id, fn: fn, element: element || null });
    },
    parse: parseHash,
    format: formatHash,
    /** Whether the page is being brought to the place the reader had on the other run set's page
     * (the set switch): a view restoring its state then leaves the scrolling alone. */
    placeHeld: function () {
      return placeHeld;
    },
    /** The label of run set ``id`` as the header's switch names it (else the id). */
    setLabel: function (id) {
      var link = document.querySelector('.unipo-sets a[data-unipo-set="' + String(id).replace(/["\\]/g, "") + '"] .unipo-sets__label');
      return link ? link.textContent.trim() : String(id);
    },
  };

  /** A watcher's view is on the shown page: its element (given, or "unipo-" + its id). */
  function alive(w) {
    return w.element ? document.contains(w.element) : !!document.getElementById("unipo-" + w.id);
  }

  function notifyWatchers() {
    var entries = parseHash(location.hash);
    // A plain anchor (or a hash that names no view) leaves every view as it is; the page's
    // first entry (no hash) returns every view to its defaults.
    if (!entries.length && location.hash) return Promise.resolve();
    var done = [];
    watchers.slice().forEach(function (w) {
      if (!alive(w)) return;
      var found = entries.filter(function (e) { return e.id === w.id; })[0];
      try {
        done.push(Promise.resolve(w.fn(found ? found.params : null)).catch(function (err) {
          console.error("UNIPO: view " + w.id + " could not restore its state:", err);
        }));
      } catch (err) {
        console.error("UNIPO: view " + w.id + " could not restore its state:", err);
      }
    });
    return Promise.all(done);
  }

  document.body.addEventListener("click", function (event) {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    var link = event.target && event.target.closest ? event.target.closest("a[href]") : null;
    if (!link || link.target || link.hasAttribute("download")) return;
    var url = new URL(link.getAttribute("href"), location.href);
    if (!url.hash || !samePage(url)) return;
    // The browser follows the link itself (fragment navigation: it scrolls and keeps the page).
    event.stopImmediatePropagation();
    if (url.hash === location.hash) {
      event.preventDefault();
      var target = document.getElementById(decodePart(url.hash.slice(1)));
      if (target) {
        openTabOf(target);
        target.scrollIntoView();
      }
    }
  });

  window.addEventListener("popstate", function (event) {
    if (location.pathname + location.search !== shownPath) return; // another page: Material's
    event.stopImmediatePropagation();
    var scroll = event.state && typeof event.state.unipoScroll === "number" ? event.state.unipoScroll : null;
    notifyWatchers().then(function () {
      // The views have laid out that entry's state again (a token's numbers, an opened group):
      // back to where the reader was when they left it.
      if (scroll !== null) window.scrollTo(0, scroll);
    });
  });

  window.UNIPO = {
    __entry: true,
    /** The browser events by key (open_step, token, token_cleared, compare, typeset, rendered, scheme_change). */
    events: EVENTS,
    /** How a step's token file is named: {prefix, digits, suffix} (runlog.token_file_name). */
    stepFile: BROWSER.step_file,
    /** The views' state in the URL hash (see above). */
    state: state,
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
    /** What a guided path's links of a kind open (see registerPathView). */
    pathView: function (kind, find, also) {
      registerPathView(kind, find, also);
    },
    /** Render formulas and charts inside an element a view has just filled. */
    render: function (root) {
      renderMath(root);
      return renderCharts(root);
    },
    renderMath: renderMath,
    /** Typeset every formula and draw every chart deferred on the page (printing, tests that read
     * every formula). */
    renderAll: function () {
      openFoldBodies(document);
      renderDeferred(document);
    },
    /** The parsed JSON of a data element written by unipo_build.site.render.json_data. */
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

  /* --------------------------------------------------------- guided paths' links */

  // A guided path (unipo_build/site/pages/objectives/guided.py) writes links that open a view of the page at a
  // state: <a class="unipo-path-link" data-path-view=KIND data-path-run=RUN data-path-moment=NAME
  // data-path-params="k=v,k=v" data-path-focus=SELECTOR>; each view's script says what a KIND opens
  // (UNIPO.pathView), so this file names no view. Each link gets the real URL of that state (it can be
  // copied and shared) and, clicked, goes there as one history entry (UNIPO.state.go).
  var pathViews = {}; // kind -> {find: fn(link, byRun, root), also: fn(view, params) -> more entries}

  function pathView(link) {
    var kind = pathViews[link.getAttribute("data-path-view")];
    if (!kind) return null;
    var run = link.getAttribute("data-path-run");
    var root = pageRoot();
    function byRun(selector) {
      return Array.prototype.filter.call(root.querySelectorAll(selector), function (n) {
        return !run || n.getAttribute("data-run") === run;
      });
    }
    return kind.find(link, byRun, root) || null;
  }

  function pathParams(link) {
    var params = {};
    String(link.getAttribute("data-path-params") || "").split(",").forEach(function (pair) {
      var eq = pair.indexOf("=");
      if (eq > 0) params[pair.slice(0, eq)] = pair.slice(eq + 1);
    });
    return params;
  }

  function wirePathLink(link) {
    var view = pathView(link);
    if (!view || !view.id) {
      link.setAttribute("data-path-ready", "missing");
      link.removeAttribute("href");
      link.setAttribute("aria-disabled", "true");
      link.title = "The view this step opens is not on this page.";
      return;
    }
    if (link.getAttribute("data-path-ready") === "missing") ["aria-disabled", "title"].forEach(link.removeAttribute, link);
    var params = pathParams(link);
    var entries = [{ id: view.id.replace(/^unipo-/, ""), params: params }];
    // A view may open another with it (its pathView's `also`: a step opened in the view beside it too).
    var also = pathViews[link.getAttribute("data-path-view")].also;
    if (also) entries = entries.concat(also(view, params) || []);
    link.setAttribute("href", formatHash(entries));
    link.setAttribute("data-path-ready", "1"); // a link is wired once (a missing one may be wired later)
    link.addEventListener("click", function (event) {
      if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
      event.preventDefault();
      event.stopImmediatePropagation();
      state.go(entries, link.getAttribute("data-path-focus"));
    });
  }

  function wirePathLinks(root) {
    Array.prototype.forEach.call(root.querySelectorAll(".unipo-path-link:not([data-path-ready])"), wirePathLink);
  }

  // A view's script says what a guided path's link of `kind` opens: find(link, byRun, root) returns the element
  // (byRun(selector): those showing the link's run); also(view, params), if given, more views to open with it
  // ([{id, params}]). Links of that kind on the page that found nothing are wired again.
  function registerPathView(kind, find, also) {
    if (typeof kind !== "string" || !kind || typeof find !== "function") throw new TypeError("UNIPO.pathView: a kind and a function");
    pathViews[kind] = { find: find, also: typeof also === "function" ? also : null };
    if (!currentRoot || !document.contains(currentRoot)) return;
    Array.prototype.forEach.call(currentRoot.querySelectorAll('.unipo-path-link[data-path-ready="missing"]'),
      function (link) { if (link.getAttribute("data-path-view") === kind) wirePathLink(link); });
  }

  renderers.push({ name: "path-links", fn: wirePathLinks });

  /* ----------------------------------------------------------- content tabs */

  // A link to an element inside a content tab that is not shown (a kind of the components
  // reference, from an algorithm's page or a search result) opens that tab, and any tab around
  // it, then scrolls to it: the browser cannot scroll to what is not laid out. The tab is opened
  // as Material's own click would, less the linking of same-named tabs and its scrolling
  // (data-md-switching, which Material's linked tabs skip).
  function openTabOf(target) {
    var opened = false;
    var block = target && target.closest ? target.closest(".tabbed-block") : null;
    for (; block; block = block.parentElement && block.parentElement.closest(".tabbed-block")) {
      var set = block.closest(".tabbed-set");
      var blocks = Array.prototype.filter.call(block.parentElement.children, function (c) {
        return c.classList.contains("tabbed-block");
      });
      var input = set ? set.querySelectorAll(":scope > input")[blocks.indexOf(block)] : null;
      if (!input || input.checked) continue;
      var label = set.querySelector('label[for="' + input.id + '"]');
      if (label) label.setAttribute("data-md-switching", "");
      input.checked = true;
      input.dispatchEvent(new Event("change"));
      opened = true;
    }
    return opened;
  }

  function showHashTarget() {
    if (!location.hash || parseHash(location.hash).length) return; // a view's state, not an anchor
    var target = document.getElementById(decodePart(location.hash.slice(1)));
    if (target && openTabOf(target)) target.scrollIntoView();
  }

  window.addEventListener("hashchange", showHashTarget);
  renderers.push({ name: "hash-tabs", fn: showHashTarget });

  /* Sideways scrolling (the scroll cue's focus and names, formulas set to fit): unipo-scroll.js,
   * loaded after this file, registers its renderer with UNIPO.register. */

  /* ---------------------------------------------------------------- run sets */

  // The set switch (overrides/partials/alternate.html) and a further set's banner link to the
  // same page in another set. The reader's place is the query and the hash (the step, token and
  // rings chosen in the views), so a link, when followed, is that set's root plus the current
  // address relative to the current set's root. Each link's root is read once from its href,
  // resolved against the page it was written for (data-unipo-page): the header's links on the
  // first load (instant navigation keeps the header and changes the address), the banner's
  // after each navigation (Material writes a swapped-in element's href out in full).
  var setRoots = {}; // set id -> absolute URL of its root
  var shownSet = null;

  function learnSetLinks(root) {
    Array.prototype.forEach.call(root.querySelectorAll("a[data-unipo-set]:not([data-unipo-root])"), function (a) {
      var page = a.getAttribute("data-unipo-page") || "";
      var href = a.href.split("#")[0].split("?")[0];
      if (href.slice(href.length - page.length) !== page) return;
      var base = href.slice(0, href.length - page.length);
      a.setAttribute("data-unipo-root", base);
      var id = a.getAttribute("data-unipo-set");
      if (!setRoots[id]) setRoots[id] = base;
      if (a.getAttribute("aria-current") === "page") shownSet = id;
    });
  }

  /**
   * The hash as set ``target`` should read it. Each set trained its own runs for its own number
   * of steps, so a view's step means "this far into training": every entry naming a step (or a
   * magnified stretch) gets the run's last step (of=) and this set's id (from=), and the view
   * there maps it to the same fraction of its own run; an inspector showing a teaching moment
   * names it (moment=), and the other set opens its own moment of that name; an inspector's open
   * group carries its prompt's fingerprint (prompt=, inspector.js data-prompt), so the other set
   * can say when its group of that number is another prompt. The view there writes its state back
   * without them. A view that came from ``target`` and is still where it landed goes back with the
   * state it came with (arrivals), so a round trip returns to the step it left. A plain anchor
   * passes as it is.
   */
  function crossSetHash(hash, target) {
    var entries = parseHash(hash);
    if (!entries.length) return hash;
    entries.forEach(function (e) {
      var back = arrivals[e.id];
      if (back && back.from === target && back.landed && samePlace(e.params, back.landed)) {
        PLACE_PARAMS.forEach(function (k) { delete e.params[k]; });
        Object.assign(e.params, back.params);
        return;
      }
      var view = document.getElementById("unipo-" + e.id);
      if (!view || !view.hasAttribute("data-last-step")) return;
      if (e.params.step === undefined && e.params.around === undefined) return;
      e.params.of = view.getAttribute("data-last-step");
      e.params.from = shownSet;
      var moment = view.getAttribute("data-at-moment");
      if (moment && e.params.step === view.getAttribute("data-step")) e.params.moment = moment;
      var prompt = view.getAttribute("data-prompt");
      if (prompt && e.params.step === view.getAttribute("data-step")) e.params.prompt = prompt;
    });
    return formatHash(entries);
  }

  // Where a view is in its run: what a round trip must bring back.
  var PLACE_PARAMS = ["step", "around", "group", "token", "moment"];

  function samePlace(a, b) {
    return PLACE_PARAMS.every(function (k) { return (a[k] === undefined ? "" : String(a[k])) === (b[k] === undefined ? "" : String(b[k])); });
  }

  // The views whose state came from another set's page (their entries named of= and from=):
  // {id: {from: that set, params: the state as that set wrote it, landed: the state the view
  // wrote back here (state.set), null until it has}}. Read once per page, before its views start.
  var arrivals = {};

  function noteArrivals() {
    arrivals = {};
    parseHash(location.hash).forEach(function (e) {
      if (e.params.of === undefined || !e.params.from) return;
      var params = {};
      PLACE_PARAMS.forEach(function (k) { if (e.params[k] !== undefined) params[k] = e.params[k]; });
      arrivals[e.id] = { from: e.params.from, params: params, landed: null };
    });
  }

  function followSetLinks() {
    var here = location.href;
    var mine = shownSet && setRoots[shownSet];
    if (!mine || here.indexOf(mine) !== 0) return;
    var path = here.slice(mine.length).split("#")[0];
    Array.prototype.forEach.call(document.querySelectorAll("a[data-unipo-root]"), function (a) {
      a.href = a.getAttribute("data-unipo-root") + path + crossSetHash(location.hash, a.getAttribute("data-unipo-set"));
    });
  }

  /* The reader's place on the page, kept across the switch: the section in view (the last
   * heading above the top of the viewport, under the header) and how far into it the reader has
   * scrolled. The other set's page is another build of the same page, with views of other sizes:
   * it opens at the same heading, that far into the section (at most its length). Kept for the
   * one page load that follows the switch, in this tab (sessionStorage: both sets share the
   * origin). */
  var PLACE_KEY = "unipo:set-place";
  var placeHeld = false; // a place is being restored: the views do not scroll to their own state

  function headerBottom() {
    var header = document.querySelector(".md-header");
    return header ? Math.max(0, header.getBoundingClientRect().bottom) : 0;
  }

  function pageHeadings() {
    return Array.prototype.filter.call(pageRoot().querySelectorAll("article h1[id], article h2[id], article h3[id], article h4[id]"),
      function (h) { return h.getClientRects().length > 0; });
  }

  function readPlace() {
    var top = headerBottom();
    var found = null;
    pageHeadings().forEach(function (h) {
      if (h.getBoundingClientRect().top <= top + 1) found = h;
    });
    if (!found || window.scrollY < 1) return null;
    return { id: found.id, offset: Math.round(top - found.getBoundingClientRect().top) };
  }

  function savePlace(link) {
    var place = readPlace();
    try {
      if (!place) sessionStorage.removeItem(PLACE_KEY);
      else sessionStorage.setItem(PLACE_KEY, JSON.stringify({ page: link.href.split("#")[0], id: place.id,
                                                              offset: place.offset, at: Date.now() }));
    } catch (err) { /* storage off: the switch opens the page as a link would */ }
  }

  function takePlace() {
    var raw = null;
    try {
      raw = sessionStorage.getItem(PLACE_KEY);
      sessionStorage.removeItem(PLACE_KEY);
    } catch (err) {
      return null;
    }
    var place = null;
    try { place = raw && JSON.parse(raw); } catch (err) { return null; }
    if (!place || place.page !== location.href.split("#")[0] || !(Date.now() - place.at < 60000)) return null;
    return place;
  }

  function goToPlace(place) {
    var heading = document.getElementById(place.id);
    if (!heading) return false;
    var headings = pageHeadings();
    var next = headings[headings.indexOf(heading) + 1];
    var top = heading.getBoundingClientRect().top + window.scrollY;
    var length = next ? next.getBoundingClientRect().top + window.scrollY - top : Infinity;
    var offset = Math.max(0, Math.min(place.offset, length - 1));
    window.scrollTo(0, Math.max(0, top - headerBottom() + offset));
    return true;
  }

  /** Restore the place the switch kept: now, and again once the page's first pass is drawn (its
   * charts and formulas change heights above); the reader's own scrolling ends it. */
  function restorePlace() {
    var place = takePlace();
    if (!place || !document.getElementById(place.id)) return;
    placeHeld = true;
    document.documentElement.setAttribute("data-unipo-place", place.id);
    var stop = function () { placeHeld = false; };
    ["wheel", "touchstart", "keydown", "pointerdown"].forEach(function (type) {
      window.addEventListener(type, stop, { once: true, passive: true });
    });
    var again = function (n) {
      if (!placeHeld) return;
      goToPlace(place);
      if (n > 0) setTimeout(function () { again(n - 1); }, 250);
      else placeHeld = false;
    };
    goToPlace(place);
    document.addEventListener(EVENTS.rendered, function () { again(8); }, { once: true });
  }

  function wireSetLinks() {
    learnSetLinks(document);
    if (!shownSet) return;
    followSetLinks();
    // The views write the reader's choices into the hash with replaceState, which fires no
    // event: the links are brought up to date whenever the reader is about to follow one.
    ["pointerover", "focusin", "pointerdown", "click"].forEach(function (type) {
      document.addEventListener(type, function (event) {
        var link = event.target && event.target.closest ? event.target.closest("a[data-unipo-root]") : null;
        if (!link) return;
        followSetLinks();
        if (type === "click" && link.getAttribute("aria-current") !== "page") savePlace(link);
      }, true);
    });
    window.addEventListener("hashchange", followSetLinks);
    window.addEventListener("popstate", followSetLinks);
  }

  function start() {
    wireSetLinks();
    restorePlace();
    var lastScheme = scheme();
    new MutationObserver(function () {
      var now = scheme();
      if (now === lastScheme) return;
      lastScheme = now;
      redrawChartsForScheme();
      document.dispatchEvent(new CustomEvent(EVENTS.scheme_change, { detail: { scheme: now } }));
    }).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });

    // Material's document$ replays the current page and emits after each instant navigation;
    // without Material's bundle, render the page once.
    if (window.document$ && typeof window.document$.subscribe === "function") {
      window.document$.subscribe(function (doc) {
        learnSetLinks(document);
        followSetLinks();
        renderPage(doc);
      });
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
