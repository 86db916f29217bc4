// The page's live parts, kept by the server's `patch` events (tfop/ui/live_patch.py): each sets the pieces that
// changed (an element with an id, HTML the server escaped), removes those gone and puts a container's pieces in
// order, and nothing else, so that what the reader selected elsewhere stays selected. A badge says in words
// whether the page is live, reconnecting, or why it stopped (the job deleted, the user no longer allowed).
"use strict";

// Relative times: each <time data-rel> and <span data-since> is written again every second from its moment, against
// the server's clock (main's data-now, and each patch's), in the words clock_text.py uses.
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
function setText(element, text) {
  if (element.textContent !== text) { element.textContent = text; }
}
function writeTimes(root) {
  var now = Date.now() + clockOffset;
  root.querySelectorAll("time[data-rel]").forEach(function (element) {
    var seconds = (now - Date.parse(element.getAttribute("datetime"))) / 1000;
    setText(element, seconds >= 0 ? ageText(seconds) + " ago" : "in " + ageText(-seconds));
  });
  root.querySelectorAll("[data-since]").forEach(function (element) {
    setText(element, ageText((now - Date.parse(element.dataset.since)) / 1000));
  });
}
var main = document.querySelector("main[data-now]");
if (main) { setServerNow(main.dataset.now); }
writeTimes(document);
setInterval(function () { writeTimes(document); }, 1000);

function applyPatch(patch) {
  setServerNow(patch.now);
  patch.set.forEach(function (item) {
    var template = document.createElement("template");
    template.innerHTML = item[2];
    var fresh = template.content.firstElementChild;
    var old = document.getElementById(item[1]);
    if (!fresh) { return; }
    if (old) {
      old.replaceWith(fresh);
    } else if (item[0] && document.getElementById(item[0])) {
      document.getElementById(item[0]).appendChild(fresh);
    }
  });
  patch.remove.forEach(function (key) {
    var old = document.getElementById(key);
    if (old) { old.remove(); }
  });
  Object.keys(patch.order).forEach(function (parent) {
    var box = document.getElementById(parent);
    if (!box) { return; }
    var keys = patch.order[parent], wanted = new Set(keys);
    Array.from(box.children).forEach(function (child) { if (!wanted.has(child.id)) { child.remove(); } });
    keys.forEach(function (key, index) {
      var element = document.getElementById(key);
      if (element && box.children[index] !== element) { box.insertBefore(element, box.children[index] || null); }
    });
  });
  writeTimes(document);
}

var BADGE_WORDS = {
  live: "live",
  reconnecting: "reconnecting…",
  deleted: "deleted: this TFJob no longer exists",
  denied: "no longer allowed: you may no longer see this",
  "logged-out": "logged out: log in again to follow",
  stopped: "stopped: reload to follow again"
};
function setBadge(state) {
  var badge = document.getElementById("live-badge");
  if (!badge) { return; }
  badge.dataset.state = state;
  setText(badge, BADGE_WORDS[state]);
}
// A stream the browser gave up on (the server answered an error): ask the same URL once for its status, to say why.
function whyStopped(url) {
  var abort = new AbortController();
  fetch(url, {credentials: "same-origin", signal: abort.signal}).then(function (response) {
    abort.abort();
    setBadge({401: "logged-out", 403: "denied", 404: "deleted"}[response.status] || "stopped");
  }, function () { setBadge("stopped"); });
}

document.querySelectorAll("[data-live]").forEach(function (element) {
  var source = new EventSource(element.dataset.live);
  source.addEventListener("open", function () { setBadge("live"); });
  source.addEventListener("patch", function (event) {
    applyPatch(JSON.parse(event.data));
    element.classList.remove("stale");
    element.dataset.updates = String(Number(element.dataset.updates || "0") + 1);
    setBadge("live");
  });
  source.addEventListener("gone", function (event) {
    source.close();
    element.classList.add("stale");
    setBadge(event.data === "deleted" ? "deleted" : "denied");
  });
  source.addEventListener("error", function () {
    if (source.readyState === EventSource.CLOSED) {
      element.classList.add("stale");
      whyStopped(element.dataset.live);
    } else {
      setBadge("reconnecting");
    }
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
