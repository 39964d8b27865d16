// The jobs page, live: every 1.5 s, the server renders the job lists again and this
// swaps them in (the fragment is the same escaped template the page was built with).
// Without JavaScript the page still shows the jobs as they were when it was loaded.
(function () {
  "use strict";
  var box = document.getElementById("jobs");
  if (!box) return;
  var source = box.getAttribute("data-source");
  var PERIOD_MS = 1500;
  function again() { window.setTimeout(tick, PERIOD_MS); }
  function tick() {
    if (document.hidden) { again(); return; }
    window.fetch(source, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { if (!r.ok) { throw new Error(String(r.status)); } return r.text(); })
      .then(function (html) {
        box.innerHTML = html;
        box.setAttribute("data-updated", String(Date.now()));
      })
      .catch(function () { /* the next round tries again */ })
      .then(again);
  }
  again();
})();
