// tickwork dashboard: refreshes each page's live part in place, no build step, no dependencies.
// An element with data-refresh="SECONDS" is replaced by the same URL fetched with ?fragment=1.
(function () {
  "use strict";

  function fragmentUrl() {
    var url = new URL(window.location.href);
    url.searchParams.delete("done");
    url.searchParams.set("fragment", "1");
    return url.toString();
  }

  function refresh(box) {
    // Do not replace what the reader has open or is selecting.
    if (box.querySelector("details[open]") || String(window.getSelection()).length > 0) {
      return Promise.resolve();
    }
    return fetch(fragmentUrl(), { headers: { "Accept": "text/html" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.text();
      })
      .then(function (html) {
        box.innerHTML = html;
        box.classList.remove("stale");
        box.dataset.refreshedAt = new Date().toISOString();
      })
      .catch(function () { box.classList.add("stale"); });
  }

  function start() {
    document.querySelectorAll("[data-refresh]").forEach(function (box) {
      var seconds = parseFloat(box.dataset.refresh) || 5;
      window.setInterval(function () {
        if (!document.hidden) { refresh(box); }
      }, seconds * 1000);
    });
    document.querySelectorAll("form[data-confirm]").forEach(function (form) {
      form.addEventListener("submit", function (event) {
        if (!window.confirm(form.dataset.confirm)) { event.preventDefault(); }
      });
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
