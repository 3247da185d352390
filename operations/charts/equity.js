/* The equity chart: the cumulative profit curve [ts, pnl_usd] (mode pnl), or its drawdown
   dd[i] = p[i] - running max (mode drawdown), with peak, low and the worst drawdown in the header. */
(function () {
  var root = document.getElementById('chart');
  var layer = document.getElementById('chart-layer') || root;
  var data = readData();
  var series = (data.series || []).slice().sort(function (a, b) { return a[0] - b[0]; });
  var running = -Infinity;
  var drawdown = series.map(function (p) { running = Math.max(running, p[1]); return [p[0], p[1] - running]; });
  var first = series.length ? series[0][0] : 0, last = series.length ? series[series.length - 1][0] : 1;
  var state = { theme: root.getAttribute('data-theme') || 'night', zone: chartTimeZone(root, data), mode: root.getAttribute('data-mode') || 'pnl', from: first, to: Math.max(last, first + 1) };

  function render() {
    var theme = THEMES[state.theme] || THEMES.night;
    var dims = chartSize(root), W = dims.w, H = dims.h;
    var M = { l: 30, r: 72, t: 58, b: 30 };
    var pw = W - M.l - M.r, ph = H - M.t - M.b;
    var from = state.from, to = state.to;
    var pts = state.mode === 'drawdown' ? drawdown : series;
    // Keep the neighbours just outside the window so the curve reaches the edges.
    var view = [];
    for (var i = 0; i < pts.length; i++) {
      if ((pts[i][0] >= from && pts[i][0] <= to) || (pts[i + 1] && pts[i][0] < from && pts[i + 1][0] >= from) || (pts[i - 1] && pts[i][0] > to && pts[i - 1][0] <= to)) view.push(pts[i]);
    }
    var lo = 0, hi = 0;
    view.forEach(function (p) { lo = Math.min(lo, p[1]); hi = Math.max(hi, p[1]); });
    if (hi === lo) { hi = lo + 1; }
    var padY = (hi - lo) * 0.18;
    var ymin = lo - (state.mode === 'drawdown' || lo < 0 ? padY : 0), ymax = hi + padY;
    if (state.mode === 'drawdown') ymax = Math.max(hi, 0) + padY * 0.4;
    function X(ts) { return M.l + ((ts - from) / (to - from)) * pw; }
    function Y(v) { return M.t + ((ymax - v) / (ymax - ymin)) * ph; }
    window.__chart = { x: X, y: Y, from: from, to: to, ymin: ymin, ymax: ymax, mode: state.mode, plot: { l: M.l, t: M.t, w: pw, h: ph } };

    while (layer.firstChild) layer.removeChild(layer.firstChild);
    root.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    root.setAttribute('data-theme', state.theme);
    root.setAttribute('data-mode', state.mode);
    root.setAttribute('data-from', from);
    root.setAttribute('data-to', to);
    root.setAttribute('data-axis-zone', state.zone);
    root.setAttribute('data-ymin', ymin);
    root.setAttribute('data-ymax', ymax);
    root.setAttribute('data-plot', [M.l, M.t, pw, ph].join(','));
    root.style.background = theme.surface;
    if (document.body) document.body.style.background = theme.surface;
    var defs = el('defs', {}, layer);
    var clip = el('clipPath', { id: 'plot-clip' }, defs);
    el('rect', { x: M.l, y: M.t, width: pw, height: ph }, clip);
    el('rect', { class: 'surface', x: 0, y: 0, width: W, height: H, fill: theme.surface }, layer);

    var trader = data.trader || {};
    text(layer, M.l + 2, 22, (trader.name || shortWallet(trader.wallet)) + (state.mode === 'drawdown' ? ' · drawdown' : ' · profit and loss'), { fill: theme.title, 'font-size': 15, 'font-weight': 600, 'font-family': 'system-ui, -apple-system, Segoe UI, sans-serif' });
    var stats = 'window ' + (data.window || 'all') + ' · peak ' + (data.peak == null ? '—' : usdLabel(data.peak)) + ' · low ' + (data.low == null ? '—' : usdLabel(data.low)) + ' · max drawdown ' + usdLabel(data.max_drawdown || 0);
    text(layer, M.l + 2, 41, stats, { fill: theme.text, 'font-size': 11.5, 'font-family': 'system-ui, sans-serif' });

    var grid = el('g', { class: 'grid' }, layer);
    valueTicks(ymin, ymax, Math.max(3, Math.round(ph / 60))).forEach(function (v) {
      if (v < ymin || v > ymax) return;
      el('line', { x1: M.l, x2: M.l + pw, y1: Y(v), y2: Y(v), stroke: theme.grid }, grid);
      text(grid, M.l + pw + 8, Y(v) + 4, usdLabel(v), { fill: theme.text, 'font-size': 11, 'font-family': 'ui-monospace, Menlo, monospace' });
    });
    var tt = timeTicks(from, to, Math.max(2, Math.floor(pw / 110)), state.zone);
    tt.ticks.forEach(function (t) {
      el('line', { x1: X(t), x2: X(t), y1: M.t, y2: M.t + ph, stroke: theme.grid }, grid);
      var label = timeLabel(t, tt.step, state.zone);
      // The axis end belongs to the zone's name.
      if (X(t) + label.length * 3.4 <= M.l + pw + 4) text(grid, X(t), M.t + ph + 18, label, { class: 'tick', fill: theme.text, 'font-size': 11, 'text-anchor': 'middle', 'font-family': 'ui-monospace, Menlo, monospace' });
    });
    text(grid, M.l + pw + 8, M.t + ph + 18, zoneLabel(from, to, state.zone), { class: 'zone', 'data-time-zone': state.zone, fill: theme.text, 'font-size': 11, 'font-family': 'ui-monospace, Menlo, monospace' });
    if (ymin < 0 && ymax > 0) el('line', { class: 'zero', x1: M.l, x2: M.l + pw, y1: Y(0), y2: Y(0), stroke: theme.axis, 'stroke-width': 1.2 }, grid);

    var plot = el('g', { class: 'plot', 'clip-path': 'url(#plot-clip)' }, layer);
    if (view.length) {
      var d = '';
      view.forEach(function (p, j) { d += (j ? 'L' : 'M') + X(p[0]) + ',' + Y(p[1]); });
      var base = Y(Math.min(Math.max(0, ymin), ymax));
      var area = d + 'L' + X(view[view.length - 1][0]) + ',' + base + 'L' + X(view[0][0]) + ',' + base + 'Z';
      if (state.mode === 'drawdown') {
        el('path', { class: 'area drawdown', d: area, fill: COLORS.down, 'fill-opacity': 0.28, stroke: 'none' }, plot);
        el('path', { class: 'line drawdown', d: d, fill: 'none', stroke: COLORS.down, 'stroke-width': 2, 'stroke-linejoin': 'round', 'data-ts': view.map(function (p) { return p[0]; }).join(',') }, plot);
      } else {
        el('path', { class: 'area pnl', d: area, fill: COLORS.line, 'fill-opacity': 0.12, stroke: 'none' }, plot);
        el('path', { class: 'line pnl', d: d, fill: 'none', stroke: COLORS.line, 'stroke-width': 2, 'stroke-linejoin': 'round', 'data-ts': view.map(function (p) { return p[0]; }).join(',') }, plot);
        var end = view[view.length - 1];
        el('circle', { class: 'last', cx: X(end[0]), cy: Y(end[1]), r: 3.5, fill: end[1] >= 0 ? COLORS.up : COLORS.down }, plot);
      }
    } else {
      text(layer, M.l + pw / 2, M.t + ph / 2, 'No points in this window', { fill: theme.text, 'font-size': 13, 'text-anchor': 'middle', 'font-family': 'system-ui, sans-serif' });
    }
    window.__ready = true;
    root.setAttribute('data-ready', 'true');
  }

  window.__setRange = function (fromTs, toTs) { state.from = +fromTs; state.to = Math.max(+toTs, +fromTs + 1); render(); };
  window.__setDom = window.__setRange;
  window.__setMode = function (mode) { if (mode === 'pnl' || mode === 'drawdown') { state.mode = mode; render(); } };
  window.__setTheme = function (theme) { if (THEMES[theme]) { state.theme = theme; render(); } };
  window.__setTimeZone = function (zone) {
    if (zone) { if (!knownZone(zone)) return; root.setAttribute('data-time-zone', zone); } else root.removeAttribute('data-time-zone');
    state.zone = chartTimeZone(root, data);
    render();
  };
  if (!root.getAttribute('data-size')) {
    window.addEventListener('resize', render);
    window.addEventListener('keydown', function (event) { if (event.key === 'd') window.__setMode(state.mode === 'pnl' ? 'drawdown' : 'pnl'); });
    root.addEventListener('dblclick', function () { window.__setRange(first, Math.max(last, first + 1)); });
  }
  render();
})();
