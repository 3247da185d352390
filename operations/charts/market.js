/* The market chart: a sampled series ([ts, last, lo, hi] buckets) as a band and a line at (lo + hi) / 2,
   broken at gaps; the trader's fills as markers; the dashed way to the winner level once resolved.
   Zooming picks, among the pre-baked slabs, the finest rung that covers the view within the point budget. */
(function () {
  var root = document.getElementById('chart');
  var layer = document.getElementById('chart-layer') || root;
  var data = readData();
  var market = data.market || {};
  var series = data.series || { from_ts: 0, to_ts: 1, fidelity: 1, points: [] };
  var slabs = (data.slabs && data.slabs.length ? data.slabs : [series]).slice().sort(function (a, b) { return b.fidelity - a.fidelity; });
  var fills = (data.fills || []).slice().sort(function (a, b) { return b.usd - a.usd; });
  var maxUsd = 0;
  for (var i = 0; i < fills.length; i++) maxUsd = Math.max(maxUsd, fills[i].usd || 0);
  var winnerLevel = null;
  if (market.resolved && market.winner != null) {
    if (market.winner === market.outcome) winnerLevel = 1;
    else if (market.winner === market.outcome2) winnerLevel = 0;
    else {
      // a split payout names the percent each token paid, token 1 first ("50/50"): the level token 1 paid
      var split = /^(\d+)\/(\d+)$/.exec(market.winner);
      if (split) winnerLevel = Number(split[1]) / 100;
    }
  }
  var MAX_VIEW_BUCKETS = 900;
  var state = { theme: root.getAttribute('data-theme') || 'night', zone: chartTimeZone(root, data), from: series.from_ts, to: Math.max(series.to_ts, series.from_ts + 1), slab: slabs[0] };

  function buckets(from, to, f) { return Math.floor(to / f) - Math.floor(from / f) + 1; }
  /* The finest slab covering [from, to] whose buckets there fit the budget; else the coarsest covering one. */
  function pickSlab(from, to) {
    var covering = slabs.filter(function (s) { return s.from_ts <= from && s.to_ts >= to; });
    if (!covering.length) covering = slabs.filter(function (s) { return s.from_ts <= to && s.to_ts >= from; });
    if (!covering.length) return slabs[0];
    var best = covering[0];
    for (var i = 0; i < covering.length; i++) {
      var s = covering[i];
      if (buckets(from, to, s.fidelity) <= MAX_VIEW_BUCKETS && s.fidelity <= best.fidelity) best = s;
    }
    return best;
  }

  function render() {
    var theme = THEMES[state.theme] || THEMES.night;
    var dims = chartSize(root);
    var W = dims.w, H = dims.h;
    var M = { l: 30, r: 58, t: 58, b: 30 };
    var pw = W - M.l - M.r, ph = H - M.t - M.b;
    var from = state.from, to = state.to, slab = state.slab, fid = slab.fidelity;
    var pts = slab.points.filter(function (p) { return p[0] + fid > from && p[0] <= to; });
    // Y frames the band (and the winner level), padded ~18%, clamped to -0.02..1.02.
    var lo = Infinity, hi = -Infinity;
    for (var i = 0; i < pts.length; i++) { lo = Math.min(lo, pts[i][2]); hi = Math.max(hi, pts[i][3]); }
    if (winnerLevel !== null) { lo = Math.min(lo, winnerLevel); hi = Math.max(hi, winnerLevel); }
    if (!(lo <= hi)) { lo = 0; hi = 1; }
    var padY = Math.max((hi - lo) * 0.18, 0.01);
    var ymin = Math.max(-0.02, lo - padY), ymax = Math.min(1.02, hi + padY);
    function X(ts) { return M.l + ((ts - from) / (to - from)) * pw; }
    function Y(p) { return M.t + ((ymax - p) / (ymax - ymin)) * ph; }
    window.__chart = { x: X, y: Y, from: from, to: to, ymin: ymin, ymax: ymax, fidelity: fid, plot: { l: M.l, t: M.t, w: pw, h: ph } };

    while (layer.firstChild) layer.removeChild(layer.firstChild);
    root.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    root.setAttribute('data-theme', state.theme);
    root.setAttribute('data-from', from);
    root.setAttribute('data-to', to);
    root.setAttribute('data-axis-zone', state.zone);
    root.setAttribute('data-fidelity', fid);
    root.setAttribute('data-ymin', ymin);
    root.setAttribute('data-ymax', ymax);
    root.setAttribute('data-plot', [M.l, M.t, pw, ph].join(','));
    root.style.background = theme.surface;
    if (document.body) document.body.style.background = theme.surface;

    var defs = el('defs', {}, layer);
    var clip = el('clipPath', { id: 'plot-clip' }, defs);
    el('rect', { x: M.l - 8, y: M.t - 12, width: pw + 16, height: ph + 24 }, clip);
    el('rect', { class: 'surface', x: 0, y: 0, width: W, height: H, fill: theme.surface }, layer);

    // Header: title, trader, outcome legend, rung.
    text(layer, M.l + 2, 22, market.title || market.condition_id || '', { fill: theme.title, 'font-size': 15, 'font-weight': 600, 'font-family': 'system-ui, -apple-system, Segoe UI, sans-serif' });
    var trader = data.trader || {};
    var sub = (trader.name ? trader.name + ' · ' : '') + shortWallet(trader.wallet) + ' · ' + fills.length + ' fills' + (market.resolved ? ' · resolved: ' + market.winner : market.open ? ' · open' : '');
    text(layer, M.l + 2, 41, sub, { fill: theme.text, 'font-size': 11.5, 'font-family': 'system-ui, sans-serif' });
    var legendX = W - M.r;
    [market.outcome2, market.outcome].forEach(function (name) {
      if (!name) return;
      var t = text(layer, legendX, 22, name, { fill: theme.text, 'font-size': 11.5, 'text-anchor': 'end', 'font-family': 'system-ui, sans-serif' });
      var width = (t.getComputedTextLength ? t.getComputedTextLength() : name.length * 6.5) || name.length * 6.5;
      el('path', { class: 'legend', d: triangle(legendX - width - 9, 18, 4.5, true), fill: outcomeColor(name) }, layer);
      legendX -= width + 26;
    });
    text(layer, W - M.r, 41, bucketLabel(fid) + ' buckets', { fill: theme.text, 'font-size': 11, 'text-anchor': 'end', 'font-family': 'system-ui, sans-serif' });

    // Grid and axes.
    var grid = el('g', { class: 'grid' }, layer);
    valueTicks(ymin, ymax, Math.max(3, Math.round(ph / 60))).forEach(function (v) {
      if (v < ymin || v > ymax) return;
      el('line', { x1: M.l, x2: M.l + pw, y1: Y(v), y2: Y(v), stroke: theme.grid, 'stroke-width': 1 }, grid);
      text(grid, M.l + pw + 8, Y(v) + 4, fmt(v, ymax - ymin < 0.05 ? 3 : 2), { fill: theme.text, 'font-size': 11, 'font-family': 'ui-monospace, Menlo, monospace' });
    });
    var tt = timeTicks(from, to, Math.max(2, Math.floor(pw / 110)), state.zone);
    tt.ticks.forEach(function (t) {
      el('line', { x1: X(t), x2: X(t), y1: M.t, y2: M.t + ph, stroke: theme.grid, 'stroke-width': 1 }, grid);
      var label = timeLabel(t, tt.step, state.zone);
      // The axis end belongs to the zone's name.
      if (X(t) + label.length * 3.4 <= M.l + pw + 4) text(grid, X(t), M.t + ph + 18, label, { class: 'tick', fill: theme.text, 'font-size': 11, 'text-anchor': 'middle', 'font-family': 'ui-monospace, Menlo, monospace' });
    });
    text(grid, M.l + pw + 8, M.t + ph + 18, zoneLabel(from, to, state.zone), { class: 'zone', 'data-time-zone': state.zone, fill: theme.text, 'font-size': 11, 'font-family': 'ui-monospace, Menlo, monospace' });
    el('line', { x1: M.l, x2: M.l + pw, y1: M.t + ph + 0.5, y2: M.t + ph + 0.5, stroke: theme.axis }, grid);

    var plot = el('g', { class: 'plot', 'clip-path': 'url(#plot-clip)' }, layer);
    // Runs of consecutive buckets: a missing bucket is a gap, never bridged.
    var runs = [], run = [];
    for (var k = 0; k < pts.length; k++) {
      if (run.length && pts[k][0] - run[run.length - 1][0] > fid) { runs.push(run); run = []; }
      run.push(pts[k]);
    }
    if (run.length) runs.push(run);
    var bandG = el('g', { class: 'bands' }, plot), lineG = el('g', { class: 'lines' }, plot);
    runs.forEach(function (r) {
      var tsList = r.map(function (p) { return p[0]; }).join(',');
      var half = r.length === 1 ? Math.max(1.5, (X(r[0][0] + fid) - X(r[0][0])) / 2) : 0;
      var top = '', bottom = '', line = '';
      for (var j = 0; j < r.length; j++) {
        var x = X(r[j][0]);
        top += (j ? 'L' : 'M') + (x - half) + ',' + Y(r[j][3]) + (half ? 'L' + (x + half) + ',' + Y(r[j][3]) : '');
        line += (j ? 'L' : 'M') + (x - half) + ',' + Y((r[j][2] + r[j][3]) / 2) + (half ? 'L' + (x + half) + ',' + Y((r[j][2] + r[j][3]) / 2) : '');
      }
      for (var q = r.length - 1; q >= 0; q--) {
        var xb = X(r[q][0]);
        bottom += 'L' + (xb + half) + ',' + Y(r[q][2]) + (half ? 'L' + (xb - half) + ',' + Y(r[q][2]) : '');
      }
      el('path', { class: 'band', d: top + bottom + 'Z', fill: theme.band, 'fill-opacity': theme.bandOpacity, stroke: 'none', 'data-ts': tsList }, bandG);
      el('path', { class: 'line', d: line, fill: 'none', stroke: COLORS.line, 'stroke-width': 2, 'stroke-linejoin': 'round', 'stroke-linecap': 'round', 'data-ts': tsList }, lineG);
    });

    // Resolved: a dashed segment from the last point to the winner level, and the pin.
    if (winnerLevel !== null) {
      var all = slab.points, last = all[all.length - 1];
      var endTs = Math.max(series.to_ts, last ? last[0] + fid : series.to_ts);
      var startTs = last ? last[0] : series.from_ts, startP = last ? (last[2] + last[3]) / 2 : winnerLevel;
      el('path', { class: 'pin-line', d: 'M' + X(startTs) + ',' + Y(startP) + 'L' + X(endTs) + ',' + Y(winnerLevel), stroke: COLORS.pin, 'stroke-width': 2, 'stroke-dasharray': '6 5', fill: 'none' }, plot);
      el('circle', { class: 'pin', cx: X(endTs), cy: Y(winnerLevel), r: 5, fill: COLORS.pin, stroke: theme.halo, 'stroke-width': 1.5, 'data-ts': endTs, 'data-price': winnerLevel }, plot);
    }

    // Fills: buy up-pointing, sell down-pointing, colored by token, area by usd; 3+ in one x-slot get a count.
    var fillG = el('g', { class: 'fills' }, plot);
    var slots = {};
    fills.forEach(function (f) {
      if (f.ts < from || f.ts > to) return;
      var r = 4 + 8 * Math.sqrt(maxUsd > 0 ? (f.usd || 0) / maxUsd : 0);
      var buy = f.side === 'BUY';
      var name = tokenName(f, market);
      el('path', {
        class: 'fill ' + (buy ? 'buy' : 'sell'), d: triangle(X(f.ts), Y(f.price), r, buy), fill: outcomeColor(name), stroke: theme.halo, 'stroke-width': 1,
        'data-ts': f.ts, 'data-price': f.price, 'data-side': f.side, 'data-usd': f.usd, 'data-outcome': name, 'data-r': r
      }, fillG);
      var slot = Math.floor(f.ts / fid);
      var s = slots[slot] || (slots[slot] = { n: 0, ts: 0, top: Infinity });
      s.n++; s.ts += f.ts; s.top = Math.min(s.top, Y(f.price) - r);
    });
    Object.keys(slots).forEach(function (slot) {
      var s = slots[slot];
      if (s.n < 3) return;
      var x = X(s.ts / s.n), y = Math.max(M.t + 4, s.top - 6);
      text(fillG, x, y, '×' + s.n, { class: 'count', 'data-slot': slot, 'data-count': s.n, fill: theme.title, 'font-size': 11, 'font-weight': 700, 'text-anchor': 'middle', 'font-family': 'system-ui, sans-serif', stroke: theme.surface, 'stroke-width': 3, 'paint-order': 'stroke' });
    });
    window.__ready = true;
    root.setAttribute('data-ready', 'true');
  }
  function triangle(x, y, r, up) {
    var h = r * 1.15;
    return up
      ? 'M' + x + ',' + (y - h) + 'L' + (x + r) + ',' + (y + h * 0.6) + 'L' + (x - r) + ',' + (y + h * 0.6) + 'Z'
      : 'M' + x + ',' + (y + h) + 'L' + (x + r) + ',' + (y - h * 0.6) + 'L' + (x - r) + ',' + (y - h * 0.6) + 'Z';
  }
  function bucketLabel(f) {
    if (f < 60) return f + ' s';
    if (f < 3600) return f / 60 + ' min';
    if (f < 86400) return f / 3600 + ' h';
    return f / 86400 + ' d';
  }

  window.__setRange = function (fromTs, toTs) {
    state.from = +fromTs; state.to = Math.max(+toTs, +fromTs + 1);
    state.slab = pickSlab(state.from, state.to);
    render();
  };
  window.__setDom = function (fromTs, toTs) {
    state.from = +fromTs; state.to = Math.max(+toTs, +fromTs + 1);
    render();
  };
  window.__setMode = function () { /* one mode: price */ };
  window.__setTheme = function (theme) { if (THEMES[theme]) { state.theme = theme; render(); } };
  window.__setTimeZone = function (zone) {
    if (zone) { if (!knownZone(zone)) return; root.setAttribute('data-time-zone', zone); } else root.removeAttribute('data-time-zone');
    state.zone = chartTimeZone(root, data);
    render();
  };

  // People: wheel zooms around the pointer (through the slabs), drag pans, double-click resets; hover reads a bucket.
  if (!root.getAttribute('data-size')) {
    if (market.title) document.title = market.title;
    root.addEventListener('mousemove', function (event) {
      var old = document.getElementById('hover');
      if (old) old.parentNode.removeChild(old);
      var c = window.__chart, box = root.getBoundingClientRect(), px = event.clientX - box.left;
      if (drag || px < c.plot.l || px > c.plot.l + c.plot.w) return;
      var at = c.from + ((px - c.plot.l) / c.plot.w) * (c.to - c.from), fid = state.slab.fidelity, best = null;
      state.slab.points.forEach(function (p) { if (p[0] <= at && at < p[0] + fid) best = p; });
      var theme = THEMES[state.theme], g = el('g', { id: 'hover', 'pointer-events': 'none' }, layer);
      el('line', { x1: px, x2: px, y1: c.plot.t, y2: c.plot.t + c.plot.h, stroke: theme.text, 'stroke-opacity': 0.5, 'stroke-dasharray': '2 3' }, g);
      var label = dateTimeLabel(Math.floor(at), state.zone) + (best ? '   mid ' + fmt((best[2] + best[3]) / 2, 3) + '   last ' + fmt(best[1], 3) + '   band ' + fmt(best[2], 3) + '–' + fmt(best[3], 3) : '   no trade (gap)');
      var near = fills.filter(function (f) { return Math.abs(c.x(f.ts) - px) < 6; });
      if (near.length) label += '   ' + near.length + ' fill' + (near.length > 1 ? 's' : '') + ': ' + near.map(function (f) { return f.side + ' ' + tokenName(f, market) + ' @' + fmt(f.price, 3) + ' ' + usdLabel(f.usd); }).slice(0, 3).join(', ');
      var t = text(g, c.plot.l + 6, c.plot.t + 14, label, { fill: theme.title, 'font-size': 11.5, 'font-family': 'ui-monospace, Menlo, monospace', stroke: theme.surface, 'stroke-width': 4, 'paint-order': 'stroke' });
      if (best) el('circle', { cx: c.x(best[0]), cy: c.y((best[2] + best[3]) / 2), r: 3.5, fill: COLORS.line, stroke: theme.surface, 'stroke-width': 1.5 }, g);
      return t;
    });
    root.addEventListener('mouseleave', function () { var old = document.getElementById('hover'); if (old) old.parentNode.removeChild(old); });
    var drag = null;
    root.addEventListener('wheel', function (event) {
      event.preventDefault();
      var c = window.__chart, box = root.getBoundingClientRect();
      var at = c.from + ((event.clientX - box.left - c.plot.l) / c.plot.w) * (c.to - c.from);
      var k = event.deltaY > 0 ? 1.25 : 0.8;
      var minSpan = 30;
      var span = Math.max(minSpan, (c.to - c.from) * k);
      var f = Math.max(series.from_ts, at - (at - c.from) * (span / (c.to - c.from)));
      window.__setRange(Math.round(f), Math.round(Math.min(series.to_ts, f + span)));
    }, { passive: false });
    root.addEventListener('mousedown', function (event) { drag = { x: event.clientX, from: state.from, to: state.to }; });
    window.addEventListener('mouseup', function () { drag = null; });
    window.addEventListener('mousemove', function (event) {
      if (!drag) return;
      var c = window.__chart, dt = ((drag.x - event.clientX) / c.plot.w) * (drag.to - drag.from);
      window.__setRange(Math.round(drag.from + dt), Math.round(drag.to + dt));
    });
    root.addEventListener('dblclick', function () { window.__setRange(series.from_ts, series.to_ts); });
    window.addEventListener('resize', render);
  }
  render();
})();
