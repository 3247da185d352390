/* The full tape (change-only rows [ts, last, lo, hi], each held until the next) drawn with uPlot: band
   lo..hi, line at (lo + hi) / 2 as steps, fills (when the data carries them) as markers, the dashed
   last step to the winner level of a resolved market (the tape ends pinned there). */
(function () {
  var host = document.getElementById('chart');
  var data = readData();
  var market = data.market || {};
  var tape = (data.tape || []).slice().sort(function (a, b) { return a[0] - b[0]; });
  var fills = (data.fills || []).slice().sort(function (a, b) { return b.usd - a.usd; });
  var maxUsd = 0;
  fills.forEach(function (f) { maxUsd = Math.max(maxUsd, f.usd || 0); });
  var pinned = !!market.resolved && tape.length > 1;
  var body = pinned ? tape.slice(0, -1) : tape;
  var pin = pinned ? tape[tape.length - 1] : null;
  var xs = [], mids = [], los = [], his = [];
  body.forEach(function (p) { xs.push(p[0]); mids.push((p[2] + p[3]) / 2); los.push(p[2]); his.push(p[3]); });
  if (pin) { xs.push(pin[0]); mids.push(null); los.push(null); his.push(null); }
  var first = xs.length ? xs[0] : 0, last = xs.length ? xs[xs.length - 1] : 1;
  var state = { theme: host.getAttribute('data-theme') || 'night', zone: chartTimeZone(host, data), from: first, to: Math.max(last, first + 1) };
  var plot = null;

  function frame(from, to) {
    var lo = Infinity, hi = -Infinity;
    for (var i = 0; i < xs.length; i++) {
      var visible = (xs[i] >= from && xs[i] <= to) || (xs[i] < from && (i + 1 >= xs.length || xs[i + 1] > from));
      if (!visible || los[i] == null) continue;
      lo = Math.min(lo, los[i]); hi = Math.max(hi, his[i]);
    }
    if (pin) { lo = Math.min(lo, pin[1]); hi = Math.max(hi, pin[1]); }
    if (!(lo <= hi)) { lo = 0; hi = 1; }
    var padY = Math.max((hi - lo) * 0.18, 0.01);
    return { min: Math.max(-0.02, lo - padY), max: Math.min(1.02, hi + padY) };
  }
  function triangle(ctx, x, y, r, up) {
    var h = r * 1.15;
    ctx.beginPath();
    if (up) { ctx.moveTo(x, y - h); ctx.lineTo(x + r, y + h * 0.6); ctx.lineTo(x - r, y + h * 0.6); }
    else { ctx.moveTo(x, y + h); ctx.lineTo(x + r, y - h * 0.6); ctx.lineTo(x - r, y - h * 0.6); }
    ctx.closePath();
  }
  function drawOverlay(u) {
    var ctx = u.ctx, theme = THEMES[state.theme], dpr = uPlot.pxRatio;
    ctx.save();
    ctx.beginPath();
    ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
    ctx.clip();
    if (pin && body.length) {
      var lastRow = body[body.length - 1];
      ctx.setLineDash([6 * dpr, 5 * dpr]);
      ctx.strokeStyle = COLORS.pin; ctx.lineWidth = 2 * dpr;
      ctx.beginPath();
      ctx.moveTo(u.valToPos(lastRow[0], 'x', true), u.valToPos((lastRow[2] + lastRow[3]) / 2, 'y', true));
      ctx.lineTo(u.valToPos(pin[0], 'x', true), u.valToPos(pin[1], 'y', true));
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = COLORS.pin;
      ctx.beginPath(); ctx.arc(u.valToPos(pin[0], 'x', true), u.valToPos(pin[1], 'y', true), 5 * dpr, 0, 2 * Math.PI); ctx.fill();
    }
    var markers = [];
    var min = u.scales.x.min, max = u.scales.x.max;
    fills.forEach(function (f) {
      if (f.ts < min || f.ts > max) return;
      var r = (4 + 8 * Math.sqrt(maxUsd > 0 ? (f.usd || 0) / maxUsd : 0)) * dpr;
      var x = u.valToPos(f.ts, 'x', true), y = u.valToPos(f.price, 'y', true);
      triangle(ctx, x, y, r, f.side === 'BUY');
      ctx.fillStyle = outcomeColor(tokenName(f, market)); ctx.fill();
      ctx.lineWidth = dpr; ctx.strokeStyle = theme.halo; ctx.stroke();
      markers.push({ ts: f.ts, price: f.price, side: f.side, x: x / dpr, y: y / dpr, top: (y - r) / dpr });
    });
    // An x-slot on a canvas: markers within SLOT_PX of the first marker of their group (left to right).
    var SLOT_PX = 8, groups = [], byX = markers.slice().sort(function (a, b) { return a.x - b.x; });
    byX.forEach(function (m) {
      var g = groups[groups.length - 1];
      if (g && m.x - g.x0 <= SLOT_PX) { g.n++; g.sx += m.x; g.top = Math.min(g.top, m.top); } else groups.push({ x0: m.x, n: 1, sx: m.x, top: m.top });
    });
    ctx.font = 'bold ' + 11 * dpr + 'px system-ui, sans-serif'; ctx.textAlign = 'center';
    var counts = [];
    groups.forEach(function (g) {
      if (g.n < 3) return;
      var cx = (g.sx / g.n) * dpr, cy = (g.top - 6) * dpr;
      ctx.lineWidth = 3 * dpr; ctx.strokeStyle = theme.surface; ctx.strokeText('×' + g.n, cx, cy);
      ctx.fillStyle = theme.title; ctx.fillText('×' + g.n, cx, cy);
      counts.push({ n: g.n, x: g.sx / g.n });
    });
    ctx.restore();
    window.__markers = markers; window.__counts = counts;
  }

  function build() {
    var theme = THEMES[state.theme];
    if (plot) plot.destroy();
    document.body.style.background = theme.surface;
    host.style.background = theme.surface;
    host.setAttribute('data-theme', state.theme);
    var title = document.getElementById('title');
    if (title) { title.style.color = theme.title; title.nextElementSibling && (title.nextElementSibling.style.color = theme.text); }
    var axis = { stroke: theme.text, grid: { stroke: theme.grid, width: 1 }, ticks: { stroke: theme.grid, width: 1 }, font: '11px ui-monospace, Menlo, monospace' };
    var opts = {
      width: Math.max(320, host.clientWidth), height: Math.max(220, host.clientHeight),
      pxAlign: 0,
      // Times in the chart's zone (common.js: the title's zone by default, else UTC), never the viewer's.
      tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1000), state.zone === 'UTC' ? 'Etc/UTC' : state.zone); },
      cursor: { drag: { x: true, y: false, setScale: true }, points: { show: false } },
      legend: { show: false },
      scales: { x: { time: true, min: state.from, max: state.to }, y: { range: function (u) { var x = u.scales.x; var r = frame(x.min != null ? x.min : state.from, x.max != null ? x.max : state.to); return [r.min, r.max]; } } },
      axes: [Object.assign({ label: zoneLabel(state.from, state.to, state.zone), labelSize: 16, labelFont: '11px ui-monospace, Menlo, monospace' }, axis), Object.assign({ side: 1, size: 56, values: function (u, vals) { return vals.map(function (v) { return v.toFixed(2); }); } }, axis)],
      series: [
        { value: function (u, v) { return v == null ? '' : dateTimeLabel(v, state.zone); } },
        { label: 'lo', stroke: 'transparent', width: 0, paths: uPlot.paths.stepped({ align: 1 }), points: { show: false }, spanGaps: false },
        { label: 'hi', stroke: 'transparent', width: 0, paths: uPlot.paths.stepped({ align: 1 }), points: { show: false }, spanGaps: false },
        { label: 'price', stroke: COLORS.line, width: 2, paths: uPlot.paths.stepped({ align: 1 }), points: { show: false }, spanGaps: false }
      ],
      bands: [{ series: [2, 1], fill: 'rgba(61,125,255,' + theme.bandOpacity + ')' }],
      hooks: {
        draw: [function (u) { drawOverlay(u); host.setAttribute('data-from', u.scales.x.min); host.setAttribute('data-to', u.scales.x.max); window.__ready = true; host.setAttribute('data-ready', 'true'); }],
        setScale: [function (u, key) { if (key === 'x') { state.from = u.scales.x.min; state.to = u.scales.x.max; } }]
      }
    };
    plot = new uPlot(opts, [xs, los, his, mids], host);
    host.setAttribute('data-axis-zone', state.zone);
    window.__chart = {
      x: function (ts) { return plot.valToPos(ts, 'x') + plot.over.offsetLeft; },
      y: function (p) { return plot.valToPos(p, 'y') + plot.over.offsetTop; },
      plot: plot
    };
  }
  window.__setRange = function (fromTs, toTs) { state.from = +fromTs; state.to = Math.max(+toTs, +fromTs + 1); plot.setScale('x', { min: state.from, max: state.to }); };
  window.__setDom = window.__setRange;
  window.__setMode = function () { /* one mode: price */ };
  window.__setTheme = function (theme) { if (THEMES[theme]) { state.theme = theme; window.__ready = false; build(); } };
  window.__setTimeZone = function (zone) {
    if (zone) { if (!knownZone(zone)) return; host.setAttribute('data-time-zone', zone); } else host.removeAttribute('data-time-zone');
    state.zone = chartTimeZone(host, data);
    window.__ready = false;
    build();
  };
  window.addEventListener('resize', function () { if (plot) plot.setSize({ width: Math.max(320, host.clientWidth), height: Math.max(220, host.clientHeight) }); });
  host.addEventListener('dblclick', function () { window.__setRange(first, Math.max(last, first + 1)); });
  build();
})();
