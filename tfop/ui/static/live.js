// Live updates: an element with data-live="URL" is replaced by each `update` the server sends on that
// server-sent-event stream. The server renders the HTML (escaped there); a `denied` event ends the stream.
"use strict";
document.querySelectorAll("[data-live]").forEach(function (element) {
  var source = new EventSource(element.dataset.live);
  source.addEventListener("update", function (event) {
    element.innerHTML = event.data;
    element.dataset.updates = String(Number(element.dataset.updates || "0") + 1);
  });
  source.addEventListener("denied", function () {
    source.close();
    element.classList.add("stale");
  });
});
