// Small DOM helpers. Nothing here (or anywhere in the page) assigns HTML
// strings: text always goes through text nodes, so it is never parsed as
// markup. The Content-Security-Policy enforces Trusted Types with no
// policy, which makes any innerHTML assignment throw.

/**
 * h creates an element. attrs: class, dataset ({...}), on ({event: fn}),
 * any other key is set as an attribute (false/null/undefined skip it, true
 * sets it empty). Children: nodes, strings (as text), arrays, null.
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k === 'dataset') Object.assign(el.dataset, v);
      else if (k === 'on') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
      else if (k === 'value') el.value = v;
      else if (k === 'checked') el.checked = !!v;
      else if (k.startsWith('on')) throw new Error('use the on: {} attribute for event handlers');
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** s creates an SVG element with attributes. */
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === 'class') el.setAttribute('class', v);
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.append(c);
    else el.append(document.createTextNode(String(c)));
  }
}

/** $ finds an element by id. */
export const $ = (id) => document.getElementById(id);

/** clear removes every child of el and appends the given children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** time formats a timestamp (ISO string, Date or ms) for display. */
export function fmtTime(t, withDate = false) {
  if (!t) return '';
  const d = t instanceof Date ? t : new Date(t);
  if (Number.isNaN(d.getTime())) return String(t);
  const today = new Date();
  const sameDay = d.toDateString() === today.toDateString();
  const opts = { hour: '2-digit', minute: '2-digit', second: withDate ? undefined : '2-digit' };
  if (withDate || !sameDay) return d.toLocaleString(undefined, { month: 'short', day: 'numeric', ...opts });
  return d.toLocaleTimeString(undefined, opts);
}

/** fmtClock formats a timestamp as hours and minutes (with the date when not today). */
export function fmtClock(t) {
  if (!t) return '';
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return '';
  const hm = { hour: '2-digit', minute: '2-digit' };
  if (d.toDateString() === new Date().toDateString()) return d.toLocaleTimeString(undefined, hm);
  return d.toLocaleString(undefined, { month: 'short', day: 'numeric', ...hm });
}

/** rel formats a timestamp relative to now ("3 min ago"). */
export function fmtRelative(t) {
  if (!t) return '';
  const d = new Date(t);
  const sec = Math.round((Date.now() - d.getTime()) / 1000);
  if (Number.isNaN(sec)) return '';
  if (sec < 45) return 'just now';
  if (sec < 3600) return `${Math.round(sec / 60)} min ago`;
  if (sec < 86400) return `${Math.round(sec / 3600)} h ago`;
  if (sec < 7 * 86400) return `${Math.round(sec / 86400)} d ago`;
  return d.toLocaleDateString();
}

/** num formats an integer with thousands separators. */
export const fmtNum = (n) => (Number(n) || 0).toLocaleString();

/** pretty formats JSON (a value or a JSON string) for a <pre>. */
export function pretty(v) {
  if (typeof v === 'string') {
    try { return JSON.stringify(JSON.parse(v), null, 2); } catch { return v; }
  }
  if (v === undefined) return '';
  return JSON.stringify(v, null, 2);
}

/** pick returns the first defined field among names (tolerates API field spellings). */
export function pick(obj, ...names) {
  if (!obj || typeof obj !== 'object') return undefined;
  for (const n of names) if (obj[n] !== undefined && obj[n] !== null) return obj[n];
  return undefined;
}

/** debounce delays fn until calls stop for ms. */
export function debounce(fn, ms) {
  let t;
  return (...args) => { clearTimeout(t); t = setTimeout(() => fn(...args), ms); };
}

/** toast shows a short message at the bottom of the screen. */
export function toast(text, kind = 'info') {
  let box = document.getElementById('toasts');
  if (!box) { box = h('div', { id: 'toasts', class: 'toasts', role: 'status', 'aria-live': 'polite' }); document.body.append(box); }
  const t = h('div', { class: `toast ${kind}` }, text);
  box.append(t);
  setTimeout(() => t.remove(), kind === 'error' ? 6000 : 3000);
}

/** uuid returns a random UUID (v4). */
export function uuid() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40; b[8] = (b[8] & 0x3f) | 0x80;
  const x = [...b].map((v) => v.toString(16).padStart(2, '0')).join('');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}
