// schedlens web UI: the only script, hand-written, no build step. Every page works without it;
// it adds live updates of a run page, in-place zoom and pan (buttons, wheel, drag, keys) and
// auto-submits the filters. On a large run page it fetches the lanes the server left out once the
// page has drawn, draws them as they near the screen, takes them out again once they are far from
// it, and builds the pods table once the page has drawn. It also records when the page first drew
// with the lanes on screen (data-drawn-ms), which the browser test reads.
(function () {
  "use strict";

  // lanesOf holds each chunk's lanes (markup, by data-lanes), fetched from the chart's
  // data-lanes-url once the page has drawn; placeholders holds the placeholder of each chunk
  // drawn here, to put back once it is far.
  var lanesOf = {}, placeholders = {}, loading = null;
  // drawChunk draws a chunk's lanes in place of its placeholder; it reports whether it did.
  function drawChunk(g) {
    var m = lanesOf[g.dataset.lanes];
    if (m === undefined || !g.hasAttribute("data-pending")) return false;
    placeholders[g.dataset.lanes] = g.innerHTML;
    g.innerHTML = m;
    g.removeAttribute("data-pending");
    return true;
  }
  // loadLanes fetches the lanes of the chart's chunks (lanes.go's inertChunks: each chunk's
  // lanes as the text of a script of another type, neither run nor parsed into elements) once
  // per chart, then draws those near the screen; data-lanes-loaded counts the chunks fetched.
  function loadLanes() {
    var svg = document.getElementById("timeline"), url = svg && svg.dataset.lanesUrl;
    if (!url) return Promise.resolve();
    if (loading && loading.svg === svg) return loading.done;
    var done = fetch(url, { cache: "no-store" }).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.text();
    }).then(function (html) {
      if (document.getElementById("timeline") !== svg) return; // the view was swapped meanwhile
      var t = document.createElement("template"), n = 0;
      t.innerHTML = html;
      t.content.querySelectorAll('script[type="text/x-schedlens-lanes"]').forEach(function (s) {
        lanesOf[s.dataset.lanes] = s.textContent;
        n++;
      });
      document.documentElement.dataset.lanesLoadedMs = String(performance.now());
      document.documentElement.dataset.lanesLoaded = String(n);
      drawNear(window.innerHeight);
    }).catch(function (e) { status("lanes not loaded: " + e.message); });
    loading = { svg: svg, done: done };
    return done;
  }
  // undrawFar puts the placeholders back of the chunks drawn here that are more than far pixels
  // off the screen (but the focused one), so the page holds a few screens of lanes at most.
  function undrawFar(far) {
    var h = window.innerHeight;
    document.querySelectorAll("g.lane-chunk:not([data-pending])").forEach(function (g) {
      var p = placeholders[g.dataset.lanes];
      if (p === undefined || g.contains(document.activeElement)) return;
      var r = g.getBoundingClientRect();
      if (r.bottom < -far || r.top > h + far) {
        g.innerHTML = p;
        g.setAttribute("data-pending", "");
      }
    });
  }
  // drawNear draws the chunks within margin pixels of the screen (with draw false, it only
  // counts them).
  function drawNear(margin, draw) {
    var h = window.innerHeight, near = 0;
    document.querySelectorAll("g.lane-chunk[data-pending]").forEach(function (g) {
      var r = g.getBoundingClientRect();
      if (r.bottom >= -margin && r.top <= h + margin) {
        near++;
        if (draw !== false) drawChunk(g);
      }
    });
    return near;
  }
  // drawRest builds the tables waiting in <noscript> and fetches the chunks' lanes (drawing
  // those within a screen of the window once they are in).
  function drawRest() {
    document.querySelectorAll("noscript[data-deferred]").forEach(function (n) {
      var t = document.createElement("template");
      t.innerHTML = n.textContent;
      n.replaceWith(t.content);
    });
    return loadLanes();
  }
  // drawn draws the lanes on screen, then records the start of the next frame (data-drawn-ms:
  // its style, layout and paint follow), the lanes in the DOM then and the chunks on screen not
  // drawn (data-drawn-lanes, data-drawn-pending: 0), and the end of that frame's work
  // (data-frame-done-ms, a task queued from it) before drawing the rest.
  function drawn() {
    drawNear(0);
    requestAnimationFrame(function () {
      var d = document.documentElement.dataset;
      d.drawnMs = String(performance.now());
      d.drawnLanes = String(document.querySelectorAll("[data-pod-uid]").length);
      d.drawnPending = String(drawNear(0, false));
      setTimeout(function () {
        d.frameDoneMs = String(performance.now());
        drawRest();
      }, 0);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", drawn);
  else drawn();
  var nearing = false;
  function onScroll() {
    if (nearing) return;
    nearing = true;
    requestAnimationFrame(function () {
      nearing = false;
      drawNear(window.innerHeight);
      undrawFar(3 * window.innerHeight);
    });
  }
  window.addEventListener("scroll", onScroll, { passive: true });
  window.addEventListener("resize", onScroll);
  // A chunk's link (the page that draws it) draws it here instead, and Tab walks on into it
  // (Shift + Tab into its last lane).
  function enterChunk(e) {
    var g = e.target.closest && e.target.closest("g.lane-chunk[data-pending]");
    if (!g || !drawChunk(g)) return false;
    var links = g.querySelectorAll("[data-pod-uid] a");
    var back = e.relatedTarget && (g.compareDocumentPosition(e.relatedTarget) & Node.DOCUMENT_POSITION_FOLLOWING);
    var a = back ? links[links.length - 1] : links[0];
    if (a) a.focus();
    return true;
  }
  document.addEventListener("focusin", enterChunk);

  var busy = false;
  function view() { return document.getElementById("view"); }
  function status(text) {
    var s = document.querySelector("[data-live-status]");
    if (s) s.textContent = text;
  }

  // refresh fetches the current view (or that of href) and swaps it in, keeping focus where it was.
  function refresh(href) {
    if (busy) return Promise.resolve();
    busy = true;
    var u = new URL(href || location.href, location.href);
    u.searchParams.set("partial", "1");
    var active = document.activeElement, lane = active && active.closest && active.closest("[data-pod-uid]");
    var wasChart = active && active.hasAttribute && active.hasAttribute("data-zoomable");
    return fetch(u, { cache: "no-store" }).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.text();
    }).then(function (html) {
      view().innerHTML = html;
      lanesOf = {};
      placeholders = {};
      if (wasChart) {
        var c = document.querySelector("[data-zoomable]");
        if (c) c.focus();
      }
      return drawRest();
    }).then(function () {
      if (lane) { // its chunk drawn, wherever it now is
        var uid = lane.dataset.podUid;
        Object.keys(lanesOf).forEach(function (r) {
          var g = lanesOf[r].indexOf(uid) >= 0 && document.querySelector('g.lane-chunk[data-lanes="' + r + '"]');
          if (g) drawChunk(g);
        });
        var a = document.querySelector('[data-pod-uid="' + uid + '"] a');
        if (a) a.focus();
      }
      document.documentElement.dataset.refreshed = String((+document.documentElement.dataset.refreshed || 0) + 1);
    }).catch(function (e) { status("update failed: " + e.message); })
      .finally(function () { busy = false; });
  }

  // Live: poll the run's version every 2 s while the tab is visible.
  setInterval(function () {
    var el = document.querySelector("[data-live-url]");
    if (!el || document.hidden || busy) return;
    fetch(el.dataset.liveUrl, { cache: "no-store" }).then(function (r) { return r.ok ? r.text() : null; })
      .then(function (v) {
        if (v === null) { status("live: server unavailable"); return; }
        if (v.trim() !== el.dataset.version) {
          return refresh().then(function () { status("live · updated " + new Date().toLocaleTimeString()); });
        }
        status("live · up to date " + new Date().toLocaleTimeString());
      }).catch(function () { status("live: server unreachable"); });
  }, 2000);

  function go(href) {
    history.replaceState(null, "", href);
    refresh(href);
  }
  function windowOf() {
    var svg = document.getElementById("timeline");
    if (!svg) return null;
    return { svg: svg, from: parseFloat(svg.dataset.from), to: parseFloat(svg.dataset.to) };
  }
  // A run's window is seconds from its start; a workload's (data-origin) is times, as the API's.
  function setWindow(from, to) {
    var u = new URL(location.href), w = windowOf(), origin = w && w.svg.dataset.origin;
    if (origin) {
      var o = Date.parse(origin);
      u.searchParams.set("from", new Date(o + from * 1000).toISOString());
      u.searchParams.set("to", new Date(o + to * 1000).toISOString());
    } else {
      u.searchParams.set("from", from.toFixed(3));
      u.searchParams.set("to", to.toFixed(3));
    }
    go(u.toString());
  }
  // The plot spans x 260..1184 of the 1200-wide viewBox (timeline.go).
  function timeAt(w, clientX) {
    var r = w.svg.getBoundingClientRect(), x = (clientX - r.left) / r.width * 1200;
    return w.from + (x - 260) / (1184 - 260) * (w.to - w.from);
  }

  document.addEventListener("click", function (e) {
    if (!e.ctrlKey && !e.metaKey && !e.shiftKey && enterChunk(e)) { e.preventDefault(); return; }
    var a = e.target.closest && e.target.closest("a[data-zoom]");
    if (a && !e.ctrlKey && !e.metaKey && !e.shiftKey) { e.preventDefault(); go(a.href); }
  });
  document.addEventListener("change", function (e) {
    var f = e.target.closest && e.target.closest("[data-filter-form]");
    if (f && e.target.tagName === "SELECT") f.requestSubmit();
  });
  document.addEventListener("keydown", function (e) {
    if (!e.target.closest || !e.target.closest("[data-zoomable]") || e.ctrlKey || e.metaKey || e.altKey) return;
    var key = { "+": "in", "=": "in", "-": "out", "_": "out", "ArrowLeft": "left", "ArrowRight": "right", "0": "reset" }[e.key];
    var a = key && document.querySelector('a[data-zoom="' + key + '"]');
    if (a) { e.preventDefault(); go(a.href); }
  });

  var wheelTimer = null, pending = null;
  document.addEventListener("wheel", function (e) {
    var w = windowOf();
    if (!w || !w.svg.contains(e.target) || !(e.ctrlKey || e.shiftKey || e.altKey)) return;
    e.preventDefault();
    var base = pending || { from: w.from, to: w.to };
    var at = timeAt({ svg: w.svg, from: base.from, to: base.to }, e.clientX), f = e.deltaY > 0 ? 1.25 : 0.8;
    pending = { from: at - (at - base.from) * f, to: at + (base.to - at) * f };
    clearTimeout(wheelTimer);
    wheelTimer = setTimeout(function () { var p = pending; pending = null; setWindow(p.from, p.to); }, 200);
  }, { passive: false });

  var drag = null;
  document.addEventListener("mousedown", function (e) {
    var w = windowOf();
    if (!w || !w.svg.contains(e.target) || e.button !== 0 || e.target.closest("a")) return;
    drag = { w: w, x: e.clientX };
    e.preventDefault();
  });
  document.addEventListener("mouseup", function (e) {
    if (!drag) return;
    var d = drag; drag = null;
    var dt = timeAt(d.w, d.x) - timeAt(d.w, e.clientX);
    if (Math.abs(e.clientX - d.x) > 4) setWindow(d.w.from + dt, d.w.to + dt);
  });
})();
