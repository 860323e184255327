// The console's only script: it follows /events (Server-Sent Events) and
// writes the live counters into the page with textContent (never as
// markup), and reloads the charts now and then.
(function () {
  "use strict";
  function set(agent, field, value) {
    var els = document.querySelectorAll("[data-live-agent][data-live-field='" + field + "']");
    for (var i = 0; i < els.length; i++) {
      if (els[i].getAttribute("data-live-agent") === agent) {
        els[i].textContent = String(value);
      }
    }
  }
  function refreshCharts() {
    var imgs = document.querySelectorAll("img[data-chart]");
    for (var i = 0; i < imgs.length; i++) {
      var base = imgs[i].getAttribute("data-chart");
      imgs[i].src = base + (base.indexOf("?") < 0 ? "?" : "&") + "t=" + Date.now();
    }
  }
  if (!document.querySelector("[data-live-agent]") && !document.querySelector("img[data-chart]")) {
    return;
  }
  var lastCharts = 0;
  var es = new EventSource("/events");
  es.onmessage = function (ev) {
    var u;
    try { u = JSON.parse(ev.data); } catch (e) { return; }
    var agents = u.agents || {};
    Object.keys(agents).forEach(function (id) {
      var a = agents[id];
      set(id, "requests", a.requests);
      set(id, "errors", a.errors);
      if (a.last) { set(id, "last", a.ago); }
    });
    var live = document.getElementById("live-status");
    if (live) { live.textContent = "live"; }
    if (Date.now() - lastCharts > 10000) {
      lastCharts = Date.now();
      refreshCharts();
    }
  };
  es.onerror = function () {
    var live = document.getElementById("live-status");
    if (live) { live.textContent = "reconnecting"; }
  };
})();
