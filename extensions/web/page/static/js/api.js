// The HTTP API client (docs/api.md): token, fetch, WebSocket chat with
// reconnect, Server-Sent Events.
//
// Authentication: the token comes from the URL fragment (#token=…, printed
// by the server on first start) or the sign-in form, is kept in
// localStorage and sent as `Authorization: Bearer` on fetch calls. The page
// also exchanges it for the session cookie (POST /api/v1/login), which is
// what WebSocket and EventSource carry (browsers cannot set headers there).

const TOKEN_KEY = 'reverie.token';
export const PREFIX = '/api/v1';

/** ApiError is a non-2xx answer. status 501 means "feature not enabled". */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

let token = '';
const authListeners = new Set();

export function getToken() { return token; }

/** onUnauthorized registers fn, called when an answer is 401. */
export function onUnauthorized(fn) { authListeners.add(fn); }

/**
 * initToken reads the token from the fragment (and removes it from the
 * address bar) or from localStorage. It returns true if one was found.
 */
export function initToken() {
  const m = /(?:^#|[#&])token=([^&]*)/.exec(location.hash);
  if (m) {
    token = decodeURIComponent(m[1]).trim();
    try { localStorage.setItem(TOKEN_KEY, token); } catch { /* private mode */ }
    const rest = location.hash.replace(/(?:^#|&)token=[^&]*/, '').replace(/^#?&/, '#');
    history.replaceState(null, '', location.pathname + location.search + (rest && rest !== '#' ? rest : ''));
  } else {
    try { token = localStorage.getItem(TOKEN_KEY) || ''; } catch { token = ''; }
  }
  return token !== '';
}

/** login checks the token, stores it and sets the session cookie. */
export async function login(t) {
  const res = await fetch(PREFIX + '/login', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ token: t }),
    credentials: 'same-origin',
  });
  if (res.status === 401) throw new ApiError(401, 'That token is not right.');
  if (!res.ok) throw new ApiError(res.status, await errorText(res));
  token = t;
  try { localStorage.setItem(TOKEN_KEY, t); } catch { /* private mode */ }
}

/** logout forgets the token and clears the cookie. */
export async function logout() {
  try { await fetch(PREFIX + '/logout', { method: 'POST', credentials: 'same-origin' }); } catch { /* offline */ }
  token = '';
  try { localStorage.removeItem(TOKEN_KEY); } catch { /* private mode */ }
}

async function errorText(res) {
  try {
    const body = await res.json();
    if (body && typeof body.error === 'string') return body.error;
  } catch { /* not JSON */ }
  return `${res.status} ${res.statusText}`;
}

/**
 * call makes an API request. path is relative to /api/v1; body (an object)
 * is sent as JSON. It resolves to the decoded JSON (null for 204) and
 * rejects with ApiError.
 */
export async function call(method, path, body, { signal, timeout = 30000 } = {}) {
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = 'Bearer ' + token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(new DOMException('The request timed out.', 'TimeoutError')), timeout);
  if (signal) signal.addEventListener('abort', () => ctl.abort(signal.reason), { once: true });
  let res;
  try {
    res = await fetch(PREFIX + path, {
      method, headers, credentials: 'same-origin', signal: ctl.signal,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new ApiError(0, err && err.name === 'TimeoutError' ? 'The request timed out.' : 'Reverie cannot be reached.');
  } finally {
    clearTimeout(timer);
  }
  if (res.status === 401) {
    for (const fn of authListeners) fn();
    throw new ApiError(401, 'unauthorized');
  }
  if (!res.ok) throw new ApiError(res.status, await errorText(res));
  if (res.status === 204) return null;
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

export const get = (path, opts) => call('GET', path, undefined, opts);
export const post = (path, body, opts) => call('POST', path, body, opts);
export const put = (path, body, opts) => call('PUT', path, body, opts);
export const del = (path, opts) => call('DELETE', path, undefined, opts);

/** q builds a query string from an object, skipping empty values. */
export function q(params) {
  const sp = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v === undefined || v === null || v === '' || v === false) continue;
    sp.set(k, String(v));
  }
  const s = sp.toString();
  return s ? '?' + s : '';
}

/** tid escapes a thread id for a URL path segment. */
export const tid = (thread) => encodeURIComponent(thread);

// ---- WebSocket chat -------------------------------------------------------

/**
 * Chat is the WebSocket connection: it reconnects with exponential backoff
 * (0.5 s doubling to 30 s, with jitter), re-subscribes to its threads,
 * queues messages sent while disconnected, and reports frames and state
 * changes to its listeners.
 */
export class Chat {
  constructor() {
    this.ws = null;
    this.state = 'offline'; // offline | connecting | online
    this.threads = new Set();
    this.outbox = [];
    this.attempt = 0;
    this.timer = null;
    this.closed = false;
    this.onFrame = () => {};
    this.onState = () => {};
    this.onReconnect = () => {};
    this.seq = 0;
    this.inURL = new Set(); // threads the current connection's URL subscribed
    this.hadConnection = false;
    this.reauth = null; // async () => bool: refresh the cookie after a refused upgrade
  }

  url() {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const sp = new URLSearchParams();
    this.inURL = new Set(this.threads);
    for (const t of this.threads) sp.append('thread', t);
    const qs = sp.toString();
    return `${proto}//${location.host}${PREFIX}/ws${qs ? '?' + qs : ''}`;
  }

  setState(s) {
    if (this.state === s) return;
    this.state = s;
    this.onState(s);
  }

  connect() {
    if (this.closed || this.ws) return;
    clearTimeout(this.timer);
    this.setState('connecting');
    let ws;
    try {
      ws = new WebSocket(this.url());
    } catch {
      this.schedule();
      return;
    }
    this.ws = ws;
    let opened = false;
    ws.onopen = () => {
      opened = true;
      this.attempt = 0;
      this.setState('online');
      const reconnected = this.hadConnection;
      this.hadConnection = true;
      // threads added while connecting were not in the URL
      for (const t of this.threads) if (!this.inURL.has(t)) this.raw({ type: 'subscribe', thread: t });
      const pending = this.outbox.splice(0);
      for (const f of pending) this.raw(f);
      if (reconnected) this.onReconnect();
    };
    ws.onmessage = (ev) => {
      let frame;
      try { frame = JSON.parse(ev.data); } catch { return; }
      if (frame && typeof frame.type === 'string') this.onFrame(frame);
    };
    ws.onclose = async () => {
      this.ws = null;
      if (this.closed) { this.setState('offline'); return; }
      this.setState('offline');
      // An upgrade refused before opening is often an expired cookie:
      // sign in again with the stored token, then retry.
      if (!opened && this.reauth && this.attempt >= 1) {
        try { await this.reauth(); } catch { /* retried with backoff */ }
      }
      this.schedule();
    };
    ws.onerror = () => { /* onclose follows */ };
  }

  schedule() {
    if (this.closed) return;
    const base = Math.min(30000, 500 * 2 ** this.attempt);
    this.attempt++;
    const delay = base / 2 + Math.random() * base / 2;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), delay);
  }

  /** retryNow skips the backoff wait (the user asked, or the page became visible). */
  retryNow() {
    if (this.ws || this.closed) return;
    this.attempt = 0;
    this.connect();
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    if (this.ws) this.ws.close(1000);
  }

  raw(frame) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) {
      this.ws.send(JSON.stringify(frame));
      return true;
    }
    this.outbox.push(frame);
    return false;
  }

  /** send sends a message (or slash command) on a thread, with uploaded attachments ({path}); returns its client id. */
  send(thread, text, attachments) {
    this.threads.add(thread);
    const id = 'c' + (++this.seq);
    const frame = { type: 'message', thread, text, id };
    if (attachments && attachments.length) frame.attachments = attachments.map((a) => ({ path: a.path }));
    this.raw(frame);
    return id;
  }

  /** cancel stops the turn the thread is processing (the reply ends with an error frame). */
  cancel(thread) {
    this.raw({ type: 'cancel', thread });
  }

  subscribe(thread) {
    if (this.threads.has(thread)) return;
    this.threads.add(thread);
    // when not open, the next connection subscribes (URL or on open)
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.raw({ type: 'subscribe', thread });
  }
}

// ---- Server-Sent Events ---------------------------------------------------

/**
 * events opens the event stream with a topic prefix filter. onEvent gets
 * each decoded event ({id, topic, time, payload}); onLag gets the number of
 * dropped events; onState gets 'open' | 'error'. It returns a close function.
 * EventSource reconnects by itself (sending Last-Event-ID).
 */
export function events(topic, { onEvent, onLag, onState }) {
  const es = new EventSource(PREFIX + '/events' + q({ topic }), { withCredentials: true });
  es.onopen = () => onState && onState('open');
  es.onerror = () => onState && onState(es.readyState === EventSource.CLOSED ? 'closed' : 'error');
  es.onmessage = (ev) => {
    try { onEvent(JSON.parse(ev.data)); } catch { /* ignore malformed */ }
  };
  es.addEventListener('lagged', (ev) => {
    try { onLag && onLag(JSON.parse(ev.data).dropped); } catch { /* ignore */ }
  });
  return () => es.close();
}
