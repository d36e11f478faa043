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
    var selI = data.sel >= 0 ? data.sel : -1;
    // What is shown: every row (vis null), or the rows a filter or search kept and folding left.
    var vis = null, pos = null, filter = null, collapsed = {}, tree = null;
    var matches = { rows: [], ids: [] }, jumps = {};
    var api = "/api/runs/" + trace;

    for (var t = 0; t <= 4; t++) {
      var s = el("span", null, fmtMS(dur * t / 4));
      s.style.left = (t * 25) + "%";
      if (t === 4) s.style.transform = "translateX(-100%)";
      axis.appendChild(s);
    }

    function getJSON(url) {
      return fetch(url, { credentials: "same-origin" }).then(function (r) {
        if (!r.ok) return r.text().then(function (t) { throw new Error(t || r.status); });
        return r.json();
      });
    }
    function count() { return vis ? vis.length : total; }
    function at(k) { return vis ? vis[k] : k; }
    function posOf(i) { if (!vis) return i; var p = pos[i]; return p === undefined ? -1 : p; }

    function fetchPage(p) {
      if (loading[p]) return;
      loading[p] = true;
      getJSON(api + "/rows?offset=" + (p * page) + "&limit=" + page)
        .then(function (d) { d.rows.forEach(function (r) { rows[r.i] = r; }); draw(); })
        .catch(function () { loading[p] = false; });
    }

    function rowEl(r, k) {
      var e = el("div", "row " + r.k + (r.e ? " error" : "") + (r.id === selected ? " sel" : "") + (r.u ? " unfinished" : ""));
      e.style.top = (k * ROW_H) + "px";
      e.setAttribute("data-span", r.id);
      e.setAttribute("data-i", r.i);
      if (r.st) e.setAttribute("data-step", r.st);
      var name = el("div", "name");
      name.style.paddingLeft = (6 + Math.min(r.d, 30) * 14) + "px";
      if (r.c) {
        var f = el("span", "fold", collapsed[r.i] ? "▸" : "▾");
        f.setAttribute("data-fold", r.i);
        f.title = (collapsed[r.i] ? "unfold " : "fold ") + r.c + " child span" + (r.c > 1 ? "s" : "");
        name.appendChild(f);
      } else {
        name.appendChild(el("span", "fold leaf", ""));
      }
      if (r.mp) {
        var ph = el("span", "missingparent", "⋯ " + r.mp.slice(0, 8));
        ph.title = "parent span " + r.mp + " never arrived";
        name.appendChild(ph);
      }
      name.appendChild(el("span", "k " + r.k, r.k === "llm" ? "LLM" : r.k));
      if (r.st) name.appendChild(el("span", "st", "step " + r.st));
      (r.mk || []).forEach(function (mi) { name.appendChild(el("span", "flag " + marks[mi].k, "◆")); });
      name.appendChild(document.createTextNode(r.n));
      if (r.c) name.appendChild(el("span", "kids dim", " (" + r.c + ")"));
      name.title = r.n + (r.m ? " · " + r.m : "") + " · " + (r.u ? "not finished" : fmtMS(r.t));
      e.appendChild(name);
      e.appendChild(el("div", "dur", r.u ? "…" : fmtMS(r.t)));
      var lane = el("div", "lane");
      var bar = el("div", "bar " + r.k);
      bar.style.left = (100 * r.s / dur) + "%";
      bar.style.width = Math.max(0.2, 100 * r.t / dur) + "%";
      bar.title = (r.u ? "not finished, started" : fmtMS(r.t)) + " at +" + fmtMS(r.s);
      lane.appendChild(bar);
      (r.mk || []).forEach(function (mi) {
        var m = marks[mi];
        var pin = el("span", "pin " + m.k, "◆");
        pin.style.left = (100 * m.at / dur) + "%";
        pin.title = m.k + ": " + m.n + (m.msg ? " · " + m.msg : "");
        lane.appendChild(pin);
      });
      e.appendChild(lane);
      return e;
    }

    var frame = 0;
    function draw() {
      frame = 0;
      var n = count();
      canvas.style.height = (n * ROW_H) + "px";
      var top = viewport.scrollTop, h = viewport.clientHeight || 600;
      var from = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
      var to = Math.min(n, Math.ceil((top + h) / ROW_H) + OVERSCAN);
      var frag = document.createDocumentFragment();
      for (var k = from; k < to; k++) {
        var i = at(k);
        if (rows[i]) frag.appendChild(rowEl(rows[i], k));
        else fetchPage(Math.floor(i / page));
      }
      canvas.replaceChildren(frag);
    }
    function schedule() { if (!frame) frame = requestAnimationFrame(draw); }
    viewport.addEventListener("scroll", schedule);
    window.addEventListener("resize", schedule);

    // rebuild recomputes what is shown from the filter and the folded rows.
    function rebuild() {
      var folded = Object.keys(collapsed).length > 0 && tree;
      if (!filter && !folded) {
        vis = null; pos = null;
      } else {
        var hidden = null;
        if (folded) {
          hidden = new Uint8Array(total);
          for (var i = 0; i < total; i++) {
            var p = tree.p[i];
            if (p >= 0 && (hidden[p] || collapsed[p])) hidden[i] = 1;
          }
        }
        var out = [];
        if (filter) filter.forEach(function (i) { if (!hidden || !hidden[i]) out.push(i); });
        else for (var j = 0; j < total; j++) if (!hidden[j]) out.push(j);
        vis = out; pos = {};
        out.forEach(function (i, k) { pos[i] = k; });
      }
      root.setAttribute("data-shown", count());
      draw();
    }
    function withTree(then) {
      if (tree) return then();
      getJSON(api + "/tree").then(function (t) { tree = t; then(); });
    }
    function scrollTo(i) {
      var k = posOf(i);
      if (k < 0) return;
      var top = k * ROW_H;
      if (top < viewport.scrollTop || top + ROW_H > viewport.scrollTop + viewport.clientHeight) {
        viewport.scrollTop = Math.max(0, top - viewport.clientHeight / 2);
      }
    }

    function select(id, push, i) {
      selected = id;
      if (i !== undefined) selI = i;
      canvas.querySelectorAll(".row.sel").forEach(function (e) { e.classList.remove("sel"); });
      var re = canvas.querySelector('.row[data-span="' + id + '"]');
      if (re) { re.classList.add("sel"); selI = +re.getAttribute("data-i"); }
      panel.setAttribute("aria-busy", "true");
      fetch("/runs/" + trace + "/spans/" + id + "/panel", { credentials: "same-origin" })
        .then(function (r) { if (!r.ok) throw new Error(r.status + " " + r.statusText); return r.text(); })
        .then(function (html) {
          panel.innerHTML = html; // server-rendered with html/template: escaped
          foldAll(panel);
          panel.removeAttribute("aria-busy");
          if (push) history.replaceState(null, "", "?span=" + id);
        })
        .catch(function (err) { panel.replaceChildren(el("p", "error", "could not load the span: " + err.message)); });
    }
    // goTo selects row i (span id), showing it first if a filter or a fold hides it.
    function goTo(i, id) {
      if (posOf(i) < 0) {
        filter = null; collapsed = {};
        document.querySelectorAll("#findbar .chip[aria-pressed=true]").forEach(function (c) { c.setAttribute("aria-pressed", "false"); });
        rebuild();
      }
      scrollTo(i);
      draw();
      select(id, true, i);
    }
    // step moves to the next (d = 1) or previous (d = -1) row of a list after the selected one.
    function step(list, d) {
      if (!list.rows.length) return false;
      var k = -1;
      if (d > 0) { for (k = 0; k < list.rows.length && list.rows[k] <= selI; k++); if (k >= list.rows.length) k = 0; }
      else { for (k = list.rows.length - 1; k >= 0 && list.rows[k] >= selI; k--); if (k < 0) k = list.rows.length - 1; }
      goTo(list.rows[k], list.ids[k]);
      return true;
    }
    function jump(kind, d) {
      if (jumps[kind]) return step(jumps[kind], d);
      getJSON(api + "/find?kind=" + kind).then(function (l) { jumps[kind] = l; step(l, d); });
    }

    canvas.addEventListener("click", function (ev) {
      var f = ev.target.closest("[data-fold]");
      if (f) {
        var i = +f.getAttribute("data-fold");
        withTree(function () { if (collapsed[i]) delete collapsed[i]; else collapsed[i] = true; rebuild(); });
        return;
      }
      var r = ev.target.closest(".row");
      if (r) select(r.getAttribute("data-span"), true, +r.getAttribute("data-i"));
    });
    document.addEventListener("click", function (ev) {
      var j = ev.target.closest("a[data-jump]");
      if (j) { ev.preventDefault(); selI = -1; jump(j.getAttribute("data-jump") === "alert" ? "alert,divergence" : j.getAttribute("data-jump"), 1); return; }
      var a = ev.target.closest("a[data-select]");
      if (!a) return;
      var id = a.getAttribute("data-select");
      ev.preventDefault();
      var known = rowsIndex(id);
      if (known >= 0) goTo(known, id); else select(id, true);
    });
    function rowsIndex(id) {
      for (var i = 0; i < rows.length; i++) if (rows[i] && rows[i].id === id) return i;
      return -1;
    }

    // Filter chips and the search box: the rows that match, found by the server.
    var findInput = document.getElementById("find"), findCount = document.getElementById("findcount");
    var findSeq = 0, findTimer = 0;
    function runFind() {
      var kinds = [].map.call(document.querySelectorAll("#findbar .chip[aria-pressed=true]"), function (c) { return c.getAttribute("data-kind"); });
      var q = findInput ? findInput.value : "";
      var seq = ++findSeq;
      if (!kinds.length && !q) {
        filter = null; matches = { rows: [], ids: [] }; findCount.textContent = "";
        root.removeAttribute("data-found");
        rebuild();
        return;
      }
      findCount.textContent = "searching…";
      getJSON(api + "/find?kind=" + encodeURIComponent(kinds.join(",")) + "&q=" + encodeURIComponent(q)).then(function (res) {
        if (seq !== findSeq) return;
        matches = res;
        filter = res.rows;
        findCount.textContent = res.rows.length + " of " + res.total + " spans" + (res.error ? " (some payloads unavailable)" : "");
        root.setAttribute("data-found", res.rows.length);
        viewport.scrollTop = 0;
        rebuild();
      }).catch(function (err) { findCount.textContent = "search failed: " + err.message; });
    }
    document.querySelectorAll("#findbar .chip").forEach(function (c) {
      c.addEventListener("click", function () {
        c.setAttribute("aria-pressed", c.getAttribute("aria-pressed") === "true" ? "false" : "true");
        runFind();
      });
    });
    if (findInput) {
      findInput.addEventListener("input", function () { clearTimeout(findTimer); findTimer = setTimeout(runFind, 250); });
      findInput.addEventListener("keydown", function (ev) {
        if (ev.key === "Enter") { ev.preventDefault(); clearTimeout(findTimer); runFind(); }
        if (ev.key === "Escape") { findInput.value = ""; runFind(); findInput.blur(); }
      });
    }
    document.querySelectorAll("#findbar button.nav").forEach(function (b) {
      b.addEventListener("click", function () { step(matches, +b.getAttribute("data-step")); });
    });
    var depth = document.getElementById("depth");
    if (depth) depth.addEventListener("change", function () {
      var d = depth.value ? +depth.value : 0;
      withTree(function () {
        collapsed = {};
        if (d > 0) {
          var kids = new Uint32Array(total);
          tree.p.forEach(function (p) { if (p >= 0) kids[p]++; });
          for (var i = 0; i < total; i++) if (tree.d[i] === d - 1 && kids[i]) collapsed[i] = true;
        }
        rebuild();
      });
    });

    // The name column is as wide as its grip is dragged.
    var grip = document.getElementById("colgrip");
    if (grip) grip.addEventListener("pointerdown", function (ev) {
      ev.preventDefault();
      grip.setPointerCapture(ev.pointerId);
      function move(e) {
        var r = root.getBoundingClientRect();
        var pct = Math.min(80, Math.max(15, 100 * (e.clientX - r.left) / r.width));
        root.style.setProperty("--namew", pct.toFixed(1) + "%");
      }
      function up() { grip.removeEventListener("pointermove", move); grip.removeEventListener("pointerup", up); }
      grip.addEventListener("pointermove", move);
      grip.addEventListener("pointerup", up);
    });

    // Keys: arrows or j / k move between spans; e / E next / previous error; a / A alert or
    // divergence; l / L LLM call; t / T tool call; n / N search match; / searches.
    var keyKinds = { e: "error", a: "alert,divergence", l: "llm", t: "tool" };
    document.addEventListener("keydown", function (ev) {
      if (ev.target.closest("input, textarea, select") || ev.altKey || ev.ctrlKey || ev.metaKey) return;
      if (ev.key === "/" && findInput) { ev.preventDefault(); findInput.focus(); return; }
      var lk = ev.key.toLowerCase(), dir = ev.key === lk ? 1 : -1;
      if (keyKinds[lk]) { ev.preventDefault(); jump(keyKinds[lk], dir); return; }
      if (lk === "n") { ev.preventDefault(); step(matches, dir); return; }
      var d = (ev.key === "ArrowDown" || ev.key === "j") ? 1 : (ev.key === "ArrowUp" || ev.key === "k") ? -1 : 0;
      if (!d) return;
      var cur = selI >= 0 ? posOf(selI) : -1;
      var nk = Math.min(count() - 1, Math.max(0, cur + d));
      var next = rows[at(nk)];
      if (!next) return;
      ev.preventDefault();
      scrollTo(next.i);
      select(next.id, true, next.i);
    });
    if (data.sel >= 0) viewport.scrollTop = Math.max(0, data.sel * ROW_H - 100);
    draw();
    root.setAttribute("data-ready", "true");
  }

  // JSON folding: every object and array of an indented JSON value (pre[data-pretty], laid out
  // by the server with two-space indentation, keys in recorded order) gets a toggle button before
  // it (a click on the key itself toggles too). The text is kept as it is (the toggles and "… N keys" are drawn by CSS, so copying and
  // textContent give the value unchanged); nothing is remembered, on the server or elsewhere.
  // Keys: Tab reaches each toggle; Enter or Space toggles it, ArrowLeft folds, ArrowRight
  // unfolds; Shift (click or key) does the same to everything inside.
  function foldJSON(pre) {
    if (pre.hasAttribute("data-foldable")) return;
    var lines = pre.textContent.split("\n");
    if (lines.length < 3) return;
    var frag = document.createDocumentFragment(), stack = [{ body: frag, n: 0 }];
    var text = function (s) { return document.createTextNode(s); };
    for (var li = 0; li < lines.length; li++) {
      var line = lines[li], nl = li < lines.length - 1 ? "\n" : "";
      var t = line.replace(/^ +/, ""), indent = line.slice(0, line.length - t.length);
      var top = stack[stack.length - 1];
      if (stack.length > 1 && /^[}\]]/.test(t)) {
        top.body.appendChild(text(indent)); // the closing bracket stays on screen when folded
        top.node.appendChild(text(t + nl));
        top.sum.setAttribute("data-n", top.n + (top.arr ? (top.n === 1 ? " item" : " items") : (top.n === 1 ? " key" : " keys")));
        stack.pop();
        continue;
      }
      top.n++;
      if (/[{[]$/.test(line)) {
        var key = (t.match(/^"((?:[^"\\]|\\.)*)"\s*:/) || [])[1];
        var node = el("span", "jnode"), btn = el("button", "jtog"), sum = el("span", "jsum"), body = el("span", "jbody");
        btn.type = "button";
        btn.setAttribute("aria-expanded", "true");
        btn.setAttribute("aria-label", "fold " + (key !== undefined ? key : stack.length === 1 ? "the value" : "item " + top.n));
        if (key !== undefined) node.setAttribute("data-key", key);
        top.body.appendChild(text(indent));
        node.appendChild(btn);
        var head = el("span", "jkey"); // the key and its opening bracket: a click folds too
        head.appendChild(text(t));
        node.appendChild(head);
        node.appendChild(sum);
        body.appendChild(text("\n"));
        node.appendChild(body);
        top.body.appendChild(node);
        stack.push({ node: node, body: body, sum: sum, n: 0, arr: /\[$/.test(line) });
        continue;
      }
      top.body.appendChild(text(line + nl));
    }
    if (stack.length !== 1) return; // not laid out as expected: leave the text alone
    pre.replaceChildren(frag);
    pre.setAttribute("data-foldable", "true");
  }
  function setFold(node, fold, deep) {
    var nodes = deep ? [node].concat([].slice.call(node.querySelectorAll(".jnode"))) : [node];
    nodes.forEach(function (n) {
      n.classList.toggle("folded", fold);
      var b = n.querySelector(".jtog");
      b.setAttribute("aria-expanded", fold ? "false" : "true");
      b.setAttribute("aria-label", b.getAttribute("aria-label").replace(/^(un)?fold /, fold ? "unfold " : "fold "));
    });
  }
  function foldAll(root) { root.querySelectorAll("pre[data-pretty]").forEach(foldJSON); }
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest && ev.target.closest("button.jtog, pre[data-foldable] .jkey");
    if (!b) return;
    var sel = window.getSelection && window.getSelection();
    if (b.classList.contains("jkey") && sel && !sel.isCollapsed) return; // selecting text, not folding
    ev.preventDefault();
    var n = b.parentNode;
    setFold(n, !n.classList.contains("folded"), ev.shiftKey);
  });
  document.addEventListener("keydown", function (ev) {
    var b = ev.target.closest && ev.target.closest("button.jtog");
    if (!b || (ev.key !== "ArrowLeft" && ev.key !== "ArrowRight")) return;
    ev.preventDefault();
    setFold(b.parentNode, ev.key === "ArrowLeft", ev.shiftKey);
  });

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
  // Copy: the exact recorded bytes of a value, fetched whole.
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest("button[data-copy]");
    if (!b) return;
    ev.preventDefault();
    fetch(b.getAttribute("data-copy"), { credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (t) { return navigator.clipboard.writeText(t); })
      .then(function () { b.textContent = "copied"; }, function (err) { b.textContent = "copy failed"; b.title = String(err); });
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

  // Diff page: n / N (and the button) scroll to the next / previous pair that differs.
  function diffNav(grid) {
    var cur = -1;
    function go(d) {
      var ps = grid.querySelectorAll(".pair:not(.same):not(.fold)");
      if (!ps.length) return;
      if (cur < 0) {
        // start from what is on screen
        for (cur = 0; cur < ps.length && ps[cur].querySelector(".cell").getBoundingClientRect().top < 80; cur++);
        cur = d > 0 ? cur : cur - 1;
      } else cur += d;
      cur = (cur + ps.length) % ps.length;
      grid.querySelectorAll(".pair.current").forEach(function (e) { e.classList.remove("current"); });
      ps[cur].classList.add("current");
      (ps[cur].querySelector(".cell") || ps[cur]).scrollIntoView({ block: "start" }); // a pair is display: contents
      history.replaceState(null, "", "#" + (ps[cur].querySelector("[id^=pair-]") || ps[cur]).id);
    }
    document.querySelectorAll("[data-nextdiff]").forEach(function (b) { b.addEventListener("click", function () { go(1); }); });
    document.addEventListener("keydown", function (ev) {
      if (ev.target.closest("input, textarea, select") || ev.altKey || ev.ctrlKey || ev.metaKey) return;
      if (ev.key === "n" || ev.key === "N") { ev.preventDefault(); go(ev.key === "n" ? 1 : -1); }
    });
  }

  // Times: shown in the browser's time zone, UTC on hover.
  function localTimes() {
    document.querySelectorAll("time[datetime]").forEach(function (t) {
      var d = new Date(t.getAttribute("datetime"));
      if (isNaN(d)) return;
      var p = function (n) { return String(n).padStart(2, "0"); };
      t.textContent = d.getFullYear() + "-" + p(d.getMonth() + 1) + "-" + p(d.getDate()) + " " + p(d.getHours()) + ":" + p(d.getMinutes()) + ":" + p(d.getSeconds());
      t.setAttribute("data-local", "1");
    });
  }

  // A run still receiving spans reloads itself (the selected span stays in the URL), unless
  // someone is typing in the page.
  function liveRefresh(b) {
    var sec = +b.getAttribute("data-refresh");
    setTimeout(function tick() {
      var a = document.activeElement;
      if (a && a.closest && a.closest("input, textarea, select")) { setTimeout(tick, sec * 1000); return; }
      location.reload();
    }, sec * 1000);
  }

  document.addEventListener("DOMContentLoaded", function () {
    localTimes();
    foldAll(document);
    var live = document.querySelector("[data-refresh]");
    if (live) liveRefresh(live);
    var tl = document.getElementById("timeline");
    if (tl) timeline(tl);
    var dg = document.getElementById("diffgrid");
    if (dg) diffNav(dg);
  });
})();
