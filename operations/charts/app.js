/* The MCP App side of a chart (MCP Apps extension, protocol 2026-01-26): JSON-RPC 2.0 over postMessage
   with the host window, and nothing else. The view asks ui/initialize, reads the host context (theme,
   container dimensions), confirms with ui/notifications/initialized, then draws the tool result the host
   sends (ui/notifications/tool-result: a CallToolResult whose structuredContent is the data tool's answer,
   exactly what a template's data placeholder takes) with the template's own script, unchanged. It reports its
   size (ui/notifications/size-changed), follows host-context-changed (theme, dimensions), answers ping and
   ui/resource-teardown, and shows the message of an isError result or a cancelled call. No request of any
   kind: the resource's CSP declares no domain. Plain ES5-style script, inlined after common.js and the
   chart (wrapped as window.__drawChart). */
(function () {
  var PROTOCOL_VERSION = '2026-01-26';
  var PREFERRED_HEIGHT = 480;
  var host = window.parent;
  var nextId = 1, pending = {};
  var context = {};
  var initialized = false, drawn = false, result = null;
  var lastSize = { width: 0, height: 0 }, sizeQueued = false;

  // The drawing elements as shipped: every draw starts from fresh copies (listeners and attributes of an
  // earlier draw go with the old nodes).
  var pristine = [];
  for (var i = 0; i < document.body.children.length; i++) {
    var node = document.body.children[i];
    if (node.tagName !== 'SCRIPT') pristine.push({ node: node, copy: node.cloneNode(true) });
  }

  function send(message) { host.postMessage(message, '*'); }
  function request(method, params, then) {
    var id = nextId++;
    pending[id] = then;
    send({ jsonrpc: '2.0', id: id, method: method, params: params });
  }
  function notify(method, params) { send({ jsonrpc: '2.0', method: method, params: params || {} }); }
  function respond(id, value) { send({ jsonrpc: '2.0', id: id, result: value }); }
  function refuse(id, code, message) { send({ jsonrpc: '2.0', id: id, error: { code: code, message: message } }); }

  function chartTheme() { return context.theme === 'light' ? 'day' : context.theme === 'dark' ? 'night' : null; }
  function fixedHeight() {
    var box = context.containerDimensions;
    return context.displayMode === 'fullscreen' || (box && typeof box.height === 'number');
  }
  /* Fixed container: fill it. Flexible: a chart of the preferred height (or the host's maximum, if lower). */
  function layout() {
    var root = document.getElementById('chart');
    var html = document.documentElement, body = document.body;
    if (fixedHeight()) {
      html.style.height = body.style.height = '';
      root.style.height = '';
    } else {
      var box = context.containerDimensions || {};
      var height = typeof box.maxHeight === 'number' && box.maxHeight > 0 ? Math.min(box.maxHeight, PREFERRED_HEIGHT) : PREFERRED_HEIGHT;
      html.style.height = body.style.height = 'auto';
      root.style.height = height + 'px';
    }
  }
  function reportSize() {
    if (sizeQueued || !initialized) return;
    sizeQueued = true;
    requestAnimationFrame(function () {
      sizeQueued = false;
      var html = document.documentElement, kept = html.style.height;
      html.style.height = 'max-content';
      var height = Math.ceil(html.getBoundingClientRect().height);
      html.style.height = kept;
      var width = Math.ceil(window.innerWidth);
      if (width === lastSize.width && height === lastSize.height) return;
      lastSize = { width: width, height: height };
      notify('ui/notifications/size-changed', { width: width, height: height });
    });
  }

  function say(message) {
    var old = document.getElementById('app-message');
    if (old) old.parentNode.removeChild(old);
    if (!message) return;
    var theme = THEMES[chartTheme() || document.getElementById('chart').getAttribute('data-theme')] || THEMES.night;
    var box = document.createElement('div');
    box.id = 'app-message';
    box.setAttribute('role', 'status');
    box.textContent = message;
    box.style.cssText = 'position:fixed;left:0;right:0;top:40%;text-align:center;font:13px system-ui,sans-serif;padding:0 24px;';
    box.style.color = theme.title;
    document.body.style.background = theme.surface;
    document.body.appendChild(box);
  }
  function textOf(toolResult) {
    var content = (toolResult && toolResult.content) || [];
    for (var i = 0; i < content.length; i++) if (content[i] && content[i].type === 'text') return content[i].text;
    return '';
  }

  function draw(toolResult) {
    result = toolResult;
    var data = toolResult && toolResult.structuredContent;
    if (!data && !(toolResult && toolResult.isError)) { try { data = JSON.parse(textOf(toolResult)); } catch (e) { data = null; } }
    if (drawn) {
      pristine.forEach(function (entry) {
        var fresh = entry.copy.cloneNode(true);
        entry.node.parentNode.replaceChild(fresh, entry.node);
        entry.node = fresh;
      });
    }
    window.__ready = false;
    layout();
    if (!toolResult || toolResult.isError || !data || typeof data !== 'object') {
      say(textOf(toolResult) || 'The tool returned no chart data.');
      reportSize();
      return;
    }
    say(null);
    var theme = chartTheme();
    if (theme) document.getElementById('chart').setAttribute('data-theme', theme);
    document.getElementById('chart-data').textContent = JSON.stringify(data);
    drawn = true;
    window.__drawChart();
    reportSize();
  }

  function onRequest(message) {
    if (message.method === 'ping') return respond(message.id, {});
    if (message.method === 'ui/resource-teardown') return respond(message.id, {});
    refuse(message.id, -32601, 'Method not found: ' + message.method);
  }
  function onNotification(message) {
    var params = message.params || {};
    switch (message.method) {
      case 'ui/notifications/tool-input':
        window.__toolInput = params.arguments || {};
        break;
      case 'ui/notifications/tool-result':
        draw(params);
        break;
      case 'ui/notifications/tool-cancelled':
        if (!drawn) say('The tool call was cancelled' + (params.reason ? ': ' + params.reason : '.'));
        break;
      case 'ui/notifications/host-context-changed':
        var before = chartTheme();
        for (var key in params) context[key] = params[key];
        layout();
        if (drawn && chartTheme() && chartTheme() !== before) window.__setTheme(chartTheme());
        else if (drawn) window.dispatchEvent(new Event('resize'));
        if (!drawn && result) say(textOf(result));
        reportSize();
        break;
    }
  }

  window.addEventListener('message', function (event) {
    if (event.source !== host) return;
    var message = event.data;
    if (!message || message.jsonrpc !== '2.0') return;
    if (typeof message.method === 'string') {
      if (message.id !== undefined && message.id !== null) onRequest(message);
      else onNotification(message);
    } else if (message.id !== undefined && pending[message.id]) {
      var then = pending[message.id];
      delete pending[message.id];
      then(message.error ? null : message.result, message.error);
    }
  });

  if (host === window) {
    say('This chart is an MCP App: an MCP host draws it with the result of its tool.');
    return;
  }
  layout();
  say('Waiting for the tool result…');
  request('ui/initialize', {
    appInfo: { name: 'trader-analytics-' + APP_KIND + '-chart', version: '1.0.0' },
    appCapabilities: { availableDisplayModes: ['inline', 'fullscreen'] },
    protocolVersion: PROTOCOL_VERSION
  }, function (value, error) {
    if (error || !value) { say('The host refused to initialize this view' + (error && error.message ? ': ' + error.message : '.')); return; }
    context = value.hostContext || {};
    layout();
    initialized = true;
    notify('ui/notifications/initialized', {});
    reportSize();
    if (typeof ResizeObserver === 'function') {
      var observer = new ResizeObserver(reportSize);
      observer.observe(document.documentElement);
      observer.observe(document.body);
    }
  });
})();
