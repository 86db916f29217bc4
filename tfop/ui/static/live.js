// Live updates: an element with data-live="URL" is replaced by each `update` the server sends on that
// server-sent-event stream. The server renders the HTML (escaped there); a `denied` event ends the stream.
"use strict";

// Relative times: each <time data-rel> and <span data-since> is written again every second from its moment, against
// the server's clock (main's data-now, and each update's), in the words clock_text.py uses.
var clockOffset = 0;
function setServerNow(iso) {
  var server = Date.parse(iso);
  if (!isNaN(server)) { clockOffset = server - Date.now(); }
}
function ageText(seconds) {
  var total = Math.max(0, Math.floor(seconds));
  var days = Math.floor(total / 86400), hours = Math.floor(total % 86400 / 3600);
  var minutes = Math.floor(total % 3600 / 60), secs = total % 60;
  if (days) { return days + "d" + (hours ? hours + "h" : ""); }
  if (hours) { return hours + "h" + (minutes ? minutes + "m" : ""); }
  if (minutes) { return minutes + "m" + (secs ? secs + "s" : ""); }
  return secs + "s";
}
function writeTimes(root) {
  var now = Date.now() + clockOffset;
  root.querySelectorAll("time[data-rel]").forEach(function (element) {
    var seconds = (now - Date.parse(element.getAttribute("datetime"))) / 1000;
    var text = seconds >= 0 ? ageText(seconds) + " ago" : "in " + ageText(-seconds);
    if (element.textContent !== text) { element.textContent = text; }
  });
  root.querySelectorAll("[data-since]").forEach(function (element) {
    var text = ageText((now - Date.parse(element.dataset.since)) / 1000);
    if (element.textContent !== text) { element.textContent = text; }
  });
}
var main = document.querySelector("main[data-now]");
if (main) { setServerNow(main.dataset.now); }
writeTimes(document);
setInterval(function () { writeTimes(document); }, 1000);
document.querySelectorAll("[data-live]").forEach(function (element) {
  var source = new EventSource(element.dataset.live);
  source.addEventListener("update", function (event) {
    element.innerHTML = event.data;
    writeTimes(element);
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
