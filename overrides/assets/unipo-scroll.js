/*
 * UNIPO: boxes that scroll sideways (loaded after unipo.js, on every page; its renderer is registered
 * with UNIPO.register). Split from unipo.js (issue 46 item 5: a script of about 1,000 lines at most).
 */
(function () {
  "use strict";

  if (!window.UNIPO || !window.UNIPO.register) {
    console.error("UNIPO: unipo.js must load before unipo-scroll.js");
    return;
  }

  function pageRoot() {
    return document.querySelector('[data-md-component="content"]') || document.body;
  }

  // A box that scrolls sideways (a display formula, a table in Material's wrapper, a box marked
  // .unipo-scroll-cue) shows the shadow cue of unipo.css at the edge it continues past, and can be
  // scrolled from the keyboard: while its content is wider than it, it is in the tab order
  // (tabindex 0), a region named for what it holds, with a focus outline (unipo.css). Checked
  // when the page is drawn, when formulas are typeset, when a fold or tab opens, and on resize.
  var SCROLLERS = "div.arithmatex, .md-typeset__scrollwrap, .unipo-scroll-cue";

  function scrollerName(box) {
    if (box.matches("div.arithmatex")) return "Formula, scrolls sideways";
    var caption = box.querySelector("caption");
    var what = caption && caption.textContent.trim();
    if (box.querySelector("table")) return (what ? "Table: " + what : "Table") + ", scrolls sideways";
    return "Scrolls sideways";
  }

  function markScroller(box) {
    var wide = box.getClientRects().length > 0 && box.scrollWidth > box.clientWidth + 1;
    if (wide === box.hasAttribute("data-unipo-scrolls")) return;
    if (wide) {
      box.setAttribute("data-unipo-scrolls", "");
      if (!box.hasAttribute("tabindex")) box.setAttribute("tabindex", "0");
      if (!box.hasAttribute("role")) box.setAttribute("role", "region");
      if (!box.hasAttribute("aria-label") && !box.hasAttribute("aria-labelledby")) {
        box.setAttribute("aria-label", scrollerName(box));
        box.setAttribute("data-unipo-named", "");
      }
    } else {
      box.removeAttribute("data-unipo-scrolls");
      if (box.getAttribute("tabindex") === "0") box.removeAttribute("tabindex");
      if (box.getAttribute("role") === "region") box.removeAttribute("role");
      if (box.hasAttribute("data-unipo-named")) {
        box.removeAttribute("aria-label");
        box.removeAttribute("data-unipo-named");
      }
    }
  }

  // A display formula at most FIT_MIN times too wide for its box is set a little smaller so that it
  // fits (--unipo-fit, unipo.css) instead of scrolling; a wider one scrolls. Measured in batches:
  // every fit taken off, every width read, every fit set, then every box checked.
  var FIT_MIN = 0.82;

  function fitFormulas(root) {
    var formulas = Array.prototype.filter.call(root.querySelectorAll("div.arithmatex[data-unipo-rendered='katex']"),
      function (f) { return f.getClientRects().length > 0; });
    formulas.forEach(function (f) { f.style.removeProperty("--unipo-fit"); });
    var widths = formulas.map(function (f) {
      var style = getComputedStyle(f);
      var room = f.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
      var need = f.scrollWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
      return room > 0 && need > room + 1 ? room / need : 1;
    });
    formulas.forEach(function (f, i) {
      if (widths[i] < 1 && widths[i] >= FIT_MIN) f.style.setProperty("--unipo-fit", String(Math.floor(widths[i] * 1000) / 1000));
    });
  }

  var scrollersPending = null;
  function markScrollers() {
    if (scrollersPending) return;
    scrollersPending = setTimeout(function () {
      scrollersPending = null;
      var root = pageRoot();
      fitFormulas(root);
      Array.prototype.forEach.call(root.querySelectorAll(SCROLLERS), markScroller);
    }, 120);
  }

  window.UNIPO.register("scrollers", markScrollers);
  document.addEventListener(window.UNIPO.events.typeset, markScrollers);
  document.addEventListener("toggle", markScrollers, true);
  document.addEventListener("change", markScrollers, true);
  window.addEventListener("resize", markScrollers);
  // KaTeX's fonts load after the first formulas are typeset, and change their widths
  if (document.fonts) {
    document.fonts.addEventListener("loadingdone", markScrollers);
    document.fonts.ready.then(markScrollers);
  }
})();
