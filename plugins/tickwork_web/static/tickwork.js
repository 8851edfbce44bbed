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
        // Ticked rows of the selection survive the refresh (by value: the rows may move).
        var ticked = {};
        box.querySelectorAll("input[data-keep]:checked").forEach(function (input) { ticked[input.value] = true; });
        box.innerHTML = html;
        box.querySelectorAll("input[data-keep]").forEach(function (input) { input.checked = !!ticked[input.value]; });
        updateSelection();
        box.classList.remove("stale");
        box.dataset.refreshedAt = new Date().toISOString();
      })
      .catch(function () { box.classList.add("stale"); });
  }

  // The schedules list's selection: a count, buttons enabled only with something ticked, and
  // a "select all" box. The checkboxes belong to form#selection through their form attribute.
  function updateSelection() {
    var form = document.getElementById("selection");
    if (!form) { return; }
    var count = document.querySelectorAll("input[data-keep]:checked").length;
    var shown = document.getElementById("selected-count");
    if (shown) { shown.textContent = String(count); }
    form.querySelectorAll("button[data-bulk]").forEach(function (button) { button.disabled = count === 0; });
  }

  function start() {
    document.addEventListener("change", function (event) {
      var target = event.target;
      if (target && target.id === "pick-all") {
        document.querySelectorAll("input[data-keep]").forEach(function (input) { input.checked = target.checked; });
      }
      if (target && (target.id === "pick-all" || target.hasAttribute("data-keep"))) { updateSelection(); }
    });
    var selection = document.getElementById("selection");
    if (selection) {
      selection.addEventListener("submit", function (event) {
        var button = event.submitter;
        if (button && button.value === "remove" && !window.confirm(selection.dataset.confirmRemove)) {
          event.preventDefault();
        }
      });
      updateSelection();
    }
    document.querySelectorAll("[data-refresh]").forEach(function (box) {
      var seconds = parseFloat(box.dataset.refresh) || 5;
      window.setInterval(function () {
        if (!document.hidden) { refresh(box); }
      }, seconds * 1000);
    });
    // Delegated: the row forms of the live part are replaced at every refresh.
    document.addEventListener("submit", function (event) {
      var form = event.target;
      if (form && form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
        event.preventDefault();
      }
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
