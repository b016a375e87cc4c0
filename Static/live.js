// Live updates for back-office pages, on top of pages that work without JavaScript.
// An element with data-live-partition="agency=Gabon" (several: space-separated) gets told
// when that partition changes: it shows "N new changes — refresh" and the link reloads.
(function () {
  "use strict";
  var el = document.querySelector("[data-live-partition]");
  if (!el || !window.EventSource) return;
  var partitions = el.getAttribute("data-live-partition").split(" ").filter(Boolean);
  if (!partitions.length) return;
  var query = partitions.map(function (p) { return "partition=" + encodeURIComponent(p); }).join("&");
  var count = 0;
  var banner = document.createElement("p");
  banner.className = "notice live-banner";
  banner.setAttribute("role", "status");
  banner.hidden = true;
  var link = document.createElement("a");
  link.href = window.location.href;
  banner.appendChild(link);
  el.insertBefore(banner, el.firstChild);
  var source = new EventSource("/api/v1/sync/events?" + query);
  source.addEventListener("change", function () {
    count += 1;
    link.textContent = count === 1 ? "1 new change — refresh" : count + " new changes — refresh";
    banner.hidden = false;
  });
})();
