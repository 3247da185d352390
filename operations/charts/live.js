/* The live chart page: the market chart drawn from the live plane's StreamEvents as they arrive. The API
   key, the trader and the market come from the URL's fragment (#key=…&trader=…&market=…), which a browser
   never sends to a server. The page connects to the plane on its own origin with the browser's bearer
   subprotocol, watches the pair (a live slot), and redraws at most once a frame: trades into buckets of
   LIVE_BUCKET_S seconds (last, low, high), the trader's fills as markers, the resolution as the pin.
   window.__live tells tests (and people, in the page's status line) where the connection stands. Plain
   ES5-style script, inlined after common.js and the chart (wrapped as window.__drawChart). */
(function () {
  var LIVE_BUCKET_S = 60;
  var settings = JSON.parse(document.getElementById('live-config').textContent);
  var params = {};
  location.hash.replace(/^#/, '').split('&').forEach(function (part) {
    var at = part.indexOf('=');
    if (at > 0) params[decodeURIComponent(part.slice(0, at))] = decodeURIComponent(part.slice(at + 1));
  });
  var status = document.getElementById('live-status');
  var live = window.__live = { connected: false, watching: false, trades: 0, fills: 0, book: null, error: null, closed: null };
  function say(message) { status.textContent = message; }

  // The drawing elements as shipped: every draw starts from fresh copies (the listeners of the last one go).
  var chart = document.getElementById('chart');
  var pristine = chart.cloneNode(true);
  var now = Math.floor(Date.now() / 1000);
  var data = {
    market: { condition_id: params.market || '', title: params.market || '', open: true },
    trader: { wallet: params.trader || '' },
    series: { from_ts: now, to_ts: now + LIVE_BUCKET_S, fidelity: LIVE_BUCKET_S, points: [] },
    fills: []
  };
  var buckets = {};

  function draw() {
    var fresh = pristine.cloneNode(true);
    chart.parentNode.replaceChild(fresh, chart);
    chart = fresh;
    document.getElementById('chart-data').textContent = JSON.stringify(data);
    window.__drawChart();
  }
  var queued = false;
  function redraw() {
    if (queued) return;
    queued = true;
    requestAnimationFrame(function () { queued = false; draw(); });
  }
  function cover(ts) {
    var series = data.series;
    if (!series.points.length && !data.fills.length) { series.from_ts = ts - LIVE_BUCKET_S; series.to_ts = ts + LIVE_BUCKET_S; }
    series.from_ts = Math.min(series.from_ts, ts - (ts % LIVE_BUCKET_S));
    series.to_ts = Math.max(series.to_ts, ts + 1);
  }
  function onEvent(event) {
    if (event.type === 'trade') {
      var at = event.ts - (event.ts % LIVE_BUCKET_S);
      var point = buckets[at];
      cover(event.ts);
      if (!point) {
        point = buckets[at] = [at, event.price, event.price, event.price];
        data.series.points.push(point);
        data.series.points.sort(function (a, b) { return a[0] - b[0]; });
      } else {
        point[1] = event.price;
        point[2] = Math.min(point[2], event.price);
        point[3] = Math.max(point[3], event.price);
      }
      live.trades++;
    } else if (event.type === 'fill') {
      cover(event.ts);
      data.fills.push({ ts: event.ts, price: event.price, side: event.side, usd: event.usd, token_side: event.token_side, outcome: event.outcome });
      if (event.outcome) data.market[event.token_side === 2 ? 'outcome2' : 'outcome'] = event.outcome;
      live.fills++;
    } else if (event.type === 'book') {
      live.book = { bid: event.bid, ask: event.ask };
    } else if (event.type === 'resolution') {
      data.market.open = false;
      data.market.resolved = true;
      data.market.winner = event.winner;
      // The chart finds the winner's level by name: token 1's is 1, token 2's is 0.
      data.market[event.level === 1 ? 'outcome' : 'outcome2'] = event.winner;
    } else return;
    redraw();
  }

  if (!params.key || !params.trader || !params.market) {
    say('Give the API key, the trader and the market in the address: #key=…&trader=0x…&market=0x…');
    return;
  }
  say('connecting…');
  var url = location.origin.replace(/^http/, 'ws') + settings.path;
  var socket = new WebSocket(url, [settings.protocol, 'bearer.' + params.key]);
  socket.onmessage = function (frame) {
    var message = JSON.parse(frame.data);
    if (message.type === 'ready') {
      live.connected = true;
      say('connected: ' + message.plan + ', ' + message.slots_in_use + ' of ' + message.live_slots + ' live slots in use');
      socket.send(JSON.stringify({ type: 'watch', id: 'chart', trader: params.trader, market: params.market }));
    } else if (message.type === 'ack' && message.of === 'watch') {
      live.watching = true;
      if (message.trader) data.trader = message.trader;
      say('watching ' + (message.trader && message.trader.name ? message.trader.name : params.trader) + ' live');
      redraw();
    } else if (message.type === 'event') {
      onEvent(message.event);
    } else if (message.type === 'error') {
      live.error = { code: message.code, message: message.message };
      say(message.message);
    }
  };
  socket.onclose = function (event) {
    live.closed = { code: event.code, reason: event.reason };
    if (!live.error) say('disconnected (' + (event.reason || event.code) + '): reload to connect again');
  };
  draw();
})();
