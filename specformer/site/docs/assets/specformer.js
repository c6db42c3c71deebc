// Claim pages: a results cell links to "#sf-row-N", an empty anchor placed just before
// the collapsible details of that row. Open those details when they are the target.
(function () {
  function openTarget() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var anchor = id ? document.getElementById(id) : null;
    if (!anchor || !anchor.classList.contains("sf-anchor")) return;
    var details = anchor.nextElementSibling;
    if (details && details.tagName === "DETAILS") {
      details.open = true;
      anchor.scrollIntoView();
    }
  }
  window.addEventListener("hashchange", openTarget);
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", openTarget);
  } else {
    openTarget();
  }
})();
