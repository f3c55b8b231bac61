// Vibe's console: a page with a live part (id "live") follows its event
// stream (body[data-live]) and puts each new version of that part in
// place. Nothing else runs here; the forms' array rows are schemaform.js.
(function () {
  "use strict";
  var url = document.body && document.body.getAttribute("data-live");
  var live = document.getElementById("live");
  if (!url || !live || !window.EventSource) return;
  function key() {
    var k = live.querySelector("[data-key]");
    return k ? k.getAttribute("data-key") : "";
  }
  var stream = new EventSource(url);
  stream.addEventListener("page", function (e) {
    if (live.innerHTML === e.data) return;
    var before = key();
    // Keep open what the person opened.
    var open = [];
    live.querySelectorAll("details").forEach(function (d, i) { if (d.open) open.push(i); });
    live.innerHTML = e.data; // drawn and escaped by the server's templates
    var details = live.querySelectorAll("details");
    open.forEach(function (i) { if (details[i]) details[i].open = true; });
    // A process that starts or stops waiting for a person: the answer
    // form, outside the live part, comes or goes with a reload.
    var after = key();
    if (before !== after && (before.indexOf("waiting") >= 0 || after.indexOf("waiting") >= 0)) location.reload();
  });
})();
