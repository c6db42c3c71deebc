// MathJax 3 configuration for pymdownx.arithmatex in generic mode. Loaded before
// assets/mathjax/tex-svg-full.js, the one MathJax component the site vendors (TeX input,
// SVG output, every TeX extension): nothing else is fetched, no fonts, no CDN.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true
  },
  svg: { fontCache: "global" },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
    enableMenu: false             // the menu would load accessibility components on demand
  }
};

// Re-typeset after Material's instant navigation swaps the page, when it is enabled.
if (typeof document$ !== "undefined") {
  document$.subscribe(function () {
    if (window.MathJax && MathJax.typesetPromise) {
      MathJax.startup.output.clearCache();
      MathJax.typesetClear();
      MathJax.texReset();
      MathJax.typesetPromise();
    }
  });
}
