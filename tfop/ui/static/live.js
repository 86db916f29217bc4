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

// A followed log: each `lines` event's data is lines of text, appended as text (never parsed as markup). The
// stream is closed on `end`, `denied` or an error, rather than reopened, which would repeat the tail.
document.querySelectorAll("[data-follow]").forEach(function (element) {
  var source = new EventSource(element.dataset.follow);
  var state = document.getElementById("follow-state");
  var stop = function (text) {
    source.close();
    if (state) { state.textContent = text; }
  };
  source.addEventListener("lines", function (event) {
    element.appendChild(document.createTextNode(event.data + "\n"));
    element.dataset.lines = String(Number(element.dataset.lines || "0") + event.data.split("\n").length);
    element.scrollTop = element.scrollHeight;
  });
  source.addEventListener("end", function (event) { stop(event.data ? "ended: " + event.data : "ended"); });
  source.addEventListener("denied", function () { stop("stopped: you may no longer read this log"); });
  source.addEventListener("error", function () { stop("stopped: the connection was lost"); });
});
