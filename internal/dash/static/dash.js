// berth dash: keep the page's content live without a reload. The server
// says over server-sent events which pages changed; this page fetches its
// own content again when it is among them, and once more whenever the
// stream reconnects (the server or the cluster restarted meanwhile).
"use strict";
(function () {
  const page = document.body.dataset.page;
  const main = document.getElementById("main");
  const live = document.getElementById("live");
  let fetching = false, again = false;

  function state(text, on) {
    live.textContent = text;
    live.className = "live " + (on ? "on" : "off");
  }

  async function refresh() {
    if (fetching) { again = true; return; }
    fetching = true;
    try {
      const r = await fetch(location.pathname + location.search, { headers: { "X-Berth-Fragment": "1" }, cache: "no-store" });
      if (r.ok) {
        const html = await r.text();
        // Keep an open <details> open across the swap.
        const open = [...main.querySelectorAll("details[open]")].map(d => d.closest("[data-pod],[data-workload]")).filter(Boolean)
          .map(e => e.dataset.pod || e.dataset.workload);
        main.innerHTML = html;
        for (const key of open) {
          const e = main.querySelector(`[data-pod="${CSS.escape(key)}"],[data-workload="${CSS.escape(key)}"]`);
          if (e && e.querySelector("details")) e.querySelector("details").open = true;
        }
        main.dataset.updated = String(Date.now());
      }
    } catch (e) {
      // The server is away; the stream's reconnection fetches again.
    } finally {
      fetching = false;
      if (again) { again = false; refresh(); }
    }
  }

  let opened = false;
  const es = new EventSource("/events");
  es.onopen = () => {
    state("live", true);
    if (opened) refresh();
    opened = true;
  };
  es.onerror = () => state("reconnecting…", false);
  es.addEventListener("changed", (e) => {
    const pages = e.data.split(" ");
    if (pages.includes("all") || pages.includes(page)) refresh();
  });
})();
