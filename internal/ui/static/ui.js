// runagain ui: the run page's virtualised timeline, the span panel loaded on demand, and
// "load all" buttons for long values. Every value from the store is set with textContent;
// panels come from the server already escaped (html/template).
(function () {
  "use strict";
  var ROW_H = 26, OVERSCAN = 20;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function fmtMS(v) {
    if (v >= 60000) return Math.floor(v / 60000) + "m" + String(Math.floor((v % 60000) / 1000)).padStart(2, "0") + "s";
    if (v >= 1000) return (v / 1000).toFixed(v >= 10000 ? 1 : 2) + "s";
    if (v >= 1) return Math.round(v) + "ms";
    return v.toFixed(2) + "ms";
  }

  function timeline(root) {
    var data = JSON.parse(root.getAttribute("data-timeline"));
    var trace = data.trace, total = data.total, dur = data.dur > 0 ? data.dur : 1, page = data.page;
    var rows = new Array(total), loading = {}, marks = data.marks || [];
    data.rows.forEach(function (r) { rows[r.i] = r; });
    var viewport = document.getElementById("viewport"), canvas = document.getElementById("canvas");
    var axis = document.getElementById("axis"), panel = document.getElementById("panel");
    var selected = data.sel >= 0 && rows[data.sel] ? rows[data.sel].id : null;
    canvas.style.height = (total * ROW_H) + "px";

    for (var t = 0; t <= 4; t++) {
      var s = el("span", null, fmtMS(dur * t / 4));
      s.style.left = (t * 25) + "%";
      if (t === 4) s.style.transform = "translateX(-100%)";
      axis.appendChild(s);
    }

    function fetchPage(p) {
      if (loading[p]) return;
      loading[p] = true;
      fetch("/api/runs/" + trace + "/rows?offset=" + (p * page) + "&limit=" + page, { credentials: "same-origin" })
        .then(function (r) { return r.json(); })
        .then(function (d) { d.rows.forEach(function (r) { rows[r.i] = r; }); draw(); })
        .catch(function () { loading[p] = false; });
    }

    function rowEl(r) {
      var e = el("div", "row " + r.k + (r.e ? " error" : "") + (r.id === selected ? " sel" : ""));
      e.style.top = (r.i * ROW_H) + "px";
      e.setAttribute("data-span", r.id);
      e.setAttribute("data-i", r.i);
      if (r.st) e.setAttribute("data-step", r.st);
      var name = el("div", "name");
      name.style.paddingLeft = (6 + Math.min(r.d, 30) * 14) + "px";
      name.appendChild(el("span", "k " + r.k, r.k === "llm" ? "LLM" : r.k));
      if (r.st) name.appendChild(el("span", "st", "step " + r.st));
      (r.mk || []).forEach(function (mi) { name.appendChild(el("span", "flag " + marks[mi].k, "◆")); });
      name.appendChild(document.createTextNode(r.n));
      name.title = r.n + (r.m ? " · " + r.m : "") + " · " + fmtMS(r.t);
      var lane = el("div", "lane");
      var bar = el("div", "bar " + r.k);
      bar.style.left = (100 * r.s / dur) + "%";
      bar.style.width = Math.max(0.2, 100 * r.t / dur) + "%";
      bar.title = fmtMS(r.t) + " at +" + fmtMS(r.s);
      lane.appendChild(bar);
      (r.mk || []).forEach(function (mi) {
        var m = marks[mi];
        var pin = el("span", "pin " + m.k, "◆");
        pin.style.left = (100 * m.at / dur) + "%";
        pin.title = m.k + ": " + m.n + (m.msg ? " · " + m.msg : "");
        lane.appendChild(pin);
      });
      e.appendChild(name);
      e.appendChild(lane);
      return e;
    }

    var frame = 0;
    function draw() {
      frame = 0;
      var top = viewport.scrollTop, h = viewport.clientHeight || 600;
      var from = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
      var to = Math.min(total, Math.ceil((top + h) / ROW_H) + OVERSCAN);
      var frag = document.createDocumentFragment();
      for (var i = from; i < to; i++) {
        if (rows[i]) frag.appendChild(rowEl(rows[i]));
        else fetchPage(Math.floor(i / page));
      }
      canvas.replaceChildren(frag);
    }
    function schedule() { if (!frame) frame = requestAnimationFrame(draw); }
    viewport.addEventListener("scroll", schedule);
    window.addEventListener("resize", schedule);

    function select(id, push) {
      selected = id;
      canvas.querySelectorAll(".row.sel").forEach(function (e) { e.classList.remove("sel"); });
      var re = canvas.querySelector('.row[data-span="' + id + '"]');
      if (re) re.classList.add("sel");
      panel.setAttribute("aria-busy", "true");
      fetch("/runs/" + trace + "/spans/" + id + "/panel", { credentials: "same-origin" })
        .then(function (r) { if (!r.ok) throw new Error(r.status + " " + r.statusText); return r.text(); })
        .then(function (html) {
          panel.innerHTML = html; // server-rendered with html/template: escaped
          panel.removeAttribute("aria-busy");
          if (push) history.replaceState(null, "", "?span=" + id);
        })
        .catch(function (err) { panel.replaceChildren(el("p", "error", "could not load the span: " + err.message)); });
    }
    canvas.addEventListener("click", function (ev) {
      var r = ev.target.closest(".row");
      if (r) select(r.getAttribute("data-span"), true);
    });
    document.addEventListener("click", function (ev) {
      var a = ev.target.closest("a[data-select]");
      if (!a) return;
      var id = a.getAttribute("data-select");
      var i = rowsIndex(id);
      ev.preventDefault();
      if (i >= 0) viewport.scrollTop = Math.max(0, i * ROW_H - 100);
      select(id, true);
    });
    function rowsIndex(id) {
      for (var i = 0; i < rows.length; i++) if (rows[i] && rows[i].id === id) return i;
      return -1;
    }
    // Arrow keys (or j / k) move the selection to the next or previous span.
    document.addEventListener("keydown", function (ev) {
      if (ev.target.closest("input, textarea, select") || ev.altKey || ev.ctrlKey || ev.metaKey) return;
      var d = (ev.key === "ArrowDown" || ev.key === "j") ? 1 : (ev.key === "ArrowUp" || ev.key === "k") ? -1 : 0;
      if (!d) return;
      var cur = selected ? rowsIndex(selected) : -1;
      var next = rows[Math.min(total - 1, Math.max(0, cur + d))];
      if (!next) return;
      ev.preventDefault();
      var top = next.i * ROW_H;
      if (top < viewport.scrollTop || top + ROW_H > viewport.scrollTop + viewport.clientHeight) {
        viewport.scrollTop = Math.max(0, top - viewport.clientHeight / 2);
      }
      select(next.id, true);
    });
    if (data.sel >= 0) viewport.scrollTop = Math.max(0, data.sel * ROW_H - 100);
    draw();
    root.setAttribute("data-ready", "true");
  }

  // "load all N bytes": fetch the whole value as text.
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest("button[data-load]");
    if (!b) return;
    var pre = b.previousElementSibling;
    b.disabled = true;
    b.textContent = "loading…";
    fetch(pre.getAttribute("data-url"), { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error(r.status + " " + r.statusText); return r.text(); })
      .then(function (t) { pre.textContent = t; b.remove(); })
      .catch(function (err) { b.disabled = false; b.textContent = "failed (" + err.message + "), retry"; });
  });
  // Raw OTLP JSON loads when opened.
  document.addEventListener("toggle", function (ev) {
    var d = ev.target;
    if (!d.matches || !d.matches("details[data-otlp-url]") || !d.open || d.getAttribute("data-loaded")) return;
    d.setAttribute("data-loaded", "1");
    var pre = d.querySelector("[data-otlp-body]");
    fetch(d.getAttribute("data-otlp-url"), { credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (t) { pre.textContent = t; });
  }, true);

  document.addEventListener("DOMContentLoaded", function () {
    var tl = document.getElementById("timeline");
    if (tl) timeline(tl);
  });
})();
