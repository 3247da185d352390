/* Shared by every chart template: the fixed colors and themes, token colors, ticks, SVG helpers and the
   test hooks' plumbing. Plain ES5-style script (it runs inline in HTML and inside SVG documents). */
var NS = 'http://www.w3.org/2000/svg';
var COLORS = { line: '#3d7dff', up: '#46ff8e', down: '#ff5a3c', pin: '#ffb84d' };
var THEMES = {
  night: { surface: '#101410', grid: '#1c241c', axis: '#2a342a', text: '#8d998d', title: '#e8eee8', band: '#3d7dff', bandOpacity: 0.2, halo: '#101410' },
  day: { surface: '#fbfcf8', grid: '#e6eae3', axis: '#c9d0c6', text: '#5d675d', title: '#141914', band: '#3d7dff', bandOpacity: 0.14, halo: '#fbfcf8' }
};
var UP_NAMES = ['up', 'yes', 'over', 'true', 'win', 'higher', 'above', 'long'];
var DOWN_NAMES = ['down', 'no', 'under', 'false', 'lower', 'below', 'short'];
/* Other outcome names: a deterministic pick (FNV-1a of the lower-cased name), away from the fixed colors. */
var PALETTE = ['#c77dff', '#36d6cf', '#ff7ad9', '#e6e26a', '#9fb0ff', '#ff9f5a', '#7be0ff', '#d0a3ff'];

function familyOf(name) {
  var key = String(name == null ? '' : name).trim().toLowerCase();
  if (UP_NAMES.indexOf(key) >= 0) return 'up';
  if (DOWN_NAMES.indexOf(key) >= 0) return 'down';
  return null;
}
function hashColor(name) {
  var key = String(name == null ? '' : name).trim().toLowerCase();
  var h = 0x811c9dc5;
  for (var i = 0; i < key.length; i++) { h ^= key.charCodeAt(i); h = Math.imul(h, 0x01000193) >>> 0; }
  return PALETTE[h % PALETTE.length];
}
/* A fill's color: its token (token_side names the token, outcome its name), by the name's family. */
function outcomeColor(name) {
  var family = familyOf(name);
  return family ? COLORS[family] : hashColor(name);
}
function tokenName(fill, market) {
  if (fill.outcome) return fill.outcome;
  if (!market) return '';
  return fill.token_side === 2 ? market.outcome2 : market.outcome;
}

function el(name, attrs, parent) {
  var node = document.createElementNS(NS, name);
  for (var key in attrs) if (attrs[key] !== undefined && attrs[key] !== null) node.setAttribute(key, String(attrs[key]));
  if (parent) parent.appendChild(node);
  return node;
}
function text(parent, x, y, value, attrs) {
  var node = el('text', attrs || {}, parent);
  node.setAttribute('x', String(x));
  node.setAttribute('y', String(y));
  node.textContent = value;
  return node;
}
function fmt(n, digits) { return Number(n).toFixed(digits); }

/* Nice value ticks: 1, 2, 2.5, 5 × 10^k, about `count` of them over [lo, hi]. */
function valueTicks(lo, hi, count) {
  var span = hi - lo;
  if (!(span > 0)) return [lo];
  var raw = span / Math.max(1, count);
  var mag = Math.pow(10, Math.floor(Math.log10(raw)));
  var steps = [1, 2, 2.5, 5, 10];
  var step = mag;
  for (var i = 0; i < steps.length; i++) { if (steps[i] * mag >= raw) { step = steps[i] * mag; break; } }
  var out = [];
  for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.round(v / step) * step);
  return out;
}
var TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800, 1209600, 2592000, 7776000, 31536000];

/* Time zones. Every time a chart shows (axis ticks, hover) is in one zone, named under the time axis:
   the root's data-time-zone (a theme option, also set by __setTimeZone), else the data's time_zone,
   else the zone the market title names ("3:00PM-3:15PM ET" → America/New_York, DST included), else UTC.
   A value that is not an IANA zone Intl knows is ignored. */
var TITLE_ZONES = {
  ET: 'America/New_York', EST: 'America/New_York', EDT: 'America/New_York',
  CT: 'America/Chicago', CST: 'America/Chicago', CDT: 'America/Chicago',
  MT: 'America/Denver', MST: 'America/Denver', MDT: 'America/Denver',
  PT: 'America/Los_Angeles', PST: 'America/Los_Angeles', PDT: 'America/Los_Angeles',
  UTC: 'UTC', GMT: 'UTC'
};
/* A zone abbreviation right after a clock time ("3:15PM ET", "10PM ET", "15:00 UTC"); upper case only. */
var TITLE_ZONE = /\d(?:\s*[AaPp]\.?[Mm]\.?)?\s*(ET|EST|EDT|CT|CST|CDT|MT|MST|MDT|PT|PST|PDT|UTC|GMT)\b/;
function titleZone(title) {
  var match = TITLE_ZONE.exec(String(title == null ? '' : title));
  return match ? TITLE_ZONES[match[1]] : null;
}
function knownZone(zone) {
  if (typeof zone !== 'string' || !zone) return false;
  try { new Intl.DateTimeFormat('en-US', { timeZone: zone }); return true; } catch (e) { return false; }
}
function chartTimeZone(root, data) {
  var chosen = root && root.getAttribute('data-time-zone');
  if (knownZone(chosen)) return chosen;
  if (data && knownZone(data.time_zone)) return data.time_zone;
  return titleZone(data && data.market && data.market.title) || 'UTC';
}
var ZONE_CLOCKS = {}, ZONE_NAMES = {};
/* Seconds to add to an instant to read its wall clock in the zone (0 for UTC). */
function zoneOffset(ts, zone) {
  if (!zone || zone === 'UTC') return 0;
  var clock = ZONE_CLOCKS[zone] || (ZONE_CLOCKS[zone] = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' }));
  var at = Math.floor(ts), p = {};
  if (!isFinite(at)) return 0;
  clock.formatToParts(new Date(at * 1000)).forEach(function (part) { p[part.type] = +part.value; });
  return Date.UTC(p.year, p.month - 1, p.day, p.hour % 24, p.minute, p.second) / 1000 - at;
}
/* The zone's short name at an instant: UTC, EST, EDT, GMT+1… */
function zoneName(ts, zone) {
  if (!zone || zone === 'UTC' || !isFinite(ts)) return 'UTC';
  var names = ZONE_NAMES[zone] || (ZONE_NAMES[zone] = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'short' }));
  var parts = names.formatToParts(new Date(Math.floor(ts) * 1000));
  for (var i = 0; i < parts.length; i++) if (parts[i].type === 'timeZoneName') return parts[i].value;
  return zone;
}
/* The label under the time axis: the zone's name over [from, to] ("EST", or "EST/EDT" across a change). */
function zoneLabel(from, to, zone) {
  var a = zoneName(from, zone), b = zoneName(to, zone);
  return a === b ? a : a + '/' + b;
}
/* About `count` ticks over [from, to] on round wall-clock times of the zone (UTC when none). */
function timeTicks(from, to, count, zone) {
  var span = to - from;
  var step = TIME_STEPS[TIME_STEPS.length - 1];
  for (var i = 0; i < TIME_STEPS.length; i++) { if (span / TIME_STEPS[i] <= count) { step = TIME_STEPS[i]; break; } }
  var out = [];
  if (!zone || zone === 'UTC') {
    for (var t = Math.ceil(from / step) * step; t <= to; t += step) out.push(t);
    return { ticks: out, step: step };
  }
  var shift = zoneOffset(from, zone);
  for (var wall = Math.ceil((from + shift) / step) * step, guard = 0; guard < count * 4 + 8; wall += step, guard++) {
    // The instant whose wall clock reads `wall` (the offset taken there: DST changes move it).
    var at = wall - zoneOffset(wall - shift, zone);
    if (at > to) break;
    if (at >= from && (!out.length || at > out[out.length - 1])) out.push(at);
  }
  return { ticks: out, step: step };
}
var MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
function pad2(n) { return n < 10 ? '0' + n : String(n); }
function timeLabel(ts, step, zone) {
  var d = new Date((ts + zoneOffset(ts, zone)) * 1000);
  if (step >= 86400) return MONTHS[d.getUTCMonth()] + ' ' + d.getUTCDate();
  var hm = pad2(d.getUTCHours()) + ':' + pad2(d.getUTCMinutes());
  if (step < 60) return hm + ':' + pad2(d.getUTCSeconds());
  return hm;
}
function dateTimeLabel(ts, zone) {
  var d = new Date((ts + zoneOffset(ts, zone)) * 1000);
  return d.getUTCFullYear() + '-' + pad2(d.getUTCMonth() + 1) + '-' + pad2(d.getUTCDate()) + ' ' + pad2(d.getUTCHours()) + ':' + pad2(d.getUTCMinutes()) + ':' + pad2(d.getUTCSeconds()) + ' ' + zoneName(ts, zone);
}
function usdLabel(v) {
  var a = Math.abs(v), s = v < 0 ? '-$' : '$';
  if (a >= 1e6) return s + fmt(a / 1e6, 2) + 'M';
  if (a >= 1e4) return s + fmt(a / 1e3, 1) + 'k';
  return s + fmt(a, a >= 100 ? 0 : 2);
}
function shortWallet(w) { return w && w.length > 12 ? w.slice(0, 6) + '…' + w.slice(-4) : (w || ''); }
/* The drawing size: data-size="WxH" on the root (tests, SVG documents), else its box, with a floor. */
function chartSize(root) {
  var fixed = root.getAttribute('data-size');
  if (fixed) { var parts = fixed.split('x'); return { w: +parts[0], h: +parts[1] }; }
  var box = root.getBoundingClientRect();
  return { w: Math.max(320, Math.round(box.width)), h: Math.max(220, Math.round(box.height)) };
}
function readData() {
  var node = document.getElementById('chart-data');
  return JSON.parse(node.textContent);
}
