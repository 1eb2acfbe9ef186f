// The chat view: thread list, messages (streamed over the WebSocket), tool
// calls folded under each reply, proactive notifications, the composer.

import { h, $, fill, fmtClock, fmtRelative, pretty, toast, uuid } from './dom.js';
import { render, installCopy } from './markdown.js';
import * as api from './api.js';
import * as drawer from './drawer.js';
import * as attach from './attach.js';

const THREAD_KEY = 'reverie.thread';
const MAX_SHOWN = 400; // messages kept in the DOM per thread

/** state of the chat view */
const st = {
  chat: null,          // api.Chat
  info: null,          // GET /info
  current: '',         // thread id shown
  threads: [],         // from GET /threads (web threads)
  unread: new Set(),
  entries: [],         // entries of the current thread (see newEntry)
  live: null,          // the assistant entry being streamed in the current thread
  expected: new Map(), // thread → replies still expected (typing indicator)
  loadSeq: 0,
  loading: false,      // the current thread's history is being fetched
  buffer: [],          // its frames held meanwhile
  emptyThreads: new Set(), // threads known to have no messages yet
};

/** isWebThread reports whether a thread belongs to the web channel. */
const isWebThread = (t) => typeof t === 'string' && t.startsWith('web:');

export function currentThread() { return st.current; }

const shownHooks = [];
/** onThreadShown registers fn, called with the id of each thread shown. */
export function onThreadShown(fn) { shownHooks.push(fn); }

/** initChat wires the chat view once. */
export function initChat({ chat, info }) {
  st.chat = chat;
  st.info = info;
  chat.onFrame = onFrame;
  chat.onReconnect = () => {
    // Replies finished while disconnected are in the history; frames of a
    // reply still being written resume on the new connection.
    st.expected.clear();
    if (st.current) loadThread(st.current, { keepScroll: true });
    refreshThreads();
  };

  installCopy($('messages'));
  attach.init({ currentThread: () => st.current });
  onThreadShown(attach.clear);
  $('composer').addEventListener('submit', (ev) => { ev.preventDefault(); sendInput(); });
  $('stop').addEventListener('click', () => { if (st.current) st.chat.cancel(st.current); });
  const input = $('input');
  let swallow = false; // the line break of the Enter that just sent
  input.addEventListener('keydown', (ev) => {
    swallow = false;
    if (ev.key !== 'Enter' || ev.isComposing || ev.keyCode === 229) return;
    if (ev.shiftKey || ev.altKey) return; // newline
    // On touch screens Enter makes a new line; the send button sends.
    if (window.matchMedia('(pointer: coarse)').matches && !ev.ctrlKey && !ev.metaKey) return;
    ev.preventDefault();
    swallow = true;
    sendInput();
  });
  input.addEventListener('beforeinput', (ev) => {
    if (swallow && (ev.inputType === 'insertLineBreak' || ev.inputType === 'insertParagraph' || (ev.inputType === 'insertText' && /^[\r\n]+$/.test(ev.data || '')))) ev.preventDefault();
  });
  input.addEventListener('keyup', (ev) => { if (ev.key === 'Enter') swallow = false; });
  input.addEventListener('input', () => { autosize(input); suggestCommands(); });
  if (!window.matchMedia('(pointer: coarse)').matches) {
    input.placeholder = 'Message Reverie…  Enter sends, Shift+Enter adds a line, /help lists the commands';
  }
  $('new-session').addEventListener('click', () => newSession());
  drawer.init();
  $('threads').addEventListener('click', (ev) => {
    const a = ev.target instanceof Element ? ev.target.closest('a[data-thread]') : null;
    if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    // Replaces the drawer's history entry (see drawer.navigate).
    ev.preventDefault();
    drawer.navigate(a.getAttribute('href'));
    showThread(a.dataset.thread);
  });
  updateBanner();
}

export function setInfo(info) {
  st.info = info;
  updateBanner();
}

function updateBanner() {
  const b = $('banner');
  if (st.info && st.info.models_configured === false) {
    fill(b, 'No model is configured yet, so Reverie cannot answer. ', h('a', { href: '#setup' }, 'Set one up'), '.');
    b.hidden = false;
  } else {
    b.hidden = true;
  }
}

function autosize(el) {
  el.style.height = 'auto';
  el.style.height = Math.min(el.scrollHeight, Math.round(window.innerHeight * 0.4)) + 'px';
}

// ---- threads ----------------------------------------------------------------

/** refreshThreads reloads the thread list. */
export async function refreshThreads() {
  let list = [];
  try {
    const res = await api.get('/threads' + api.q({ limit: 200 }));
    list = (res && res.threads) || [];
  } catch (err) {
    if (err.status !== 401) renderThreadError(err);
    return;
  }
  const web = list.filter((t) => isWebThread(t.id));
  // Keep locally created threads that have no message on the server yet.
  for (const t of st.threads) {
    if (t.local && !web.some((w) => w.id === t.id)) web.unshift(t);
  }
  st.threads = web;
  renderThreads();
}

function renderThreadError(err) {
  fill($('threads'), h('li', { class: 'muted small pad' }, 'Could not load conversations: ' + err.message));
}

function renderThreads() {
  const ul = $('threads');
  if (!st.threads.length) {
    fill(ul, h('li', { class: 'muted small pad' }, 'No conversations yet.'));
    return;
  }
  fill(ul, st.threads.map((t) => {
    const active = t.id === st.current;
    return h('li', null,
      h('a', {
        href: '#chat/' + encodeURIComponent(t.id), class: 'thread' + (active ? ' active' : '') + (st.unread.has(t.id) ? ' unread' : ''),
        dataset: { thread: t.id }, 'aria-current': active ? 'page' : false,
      },
      h('span', { class: 'thread-title' }, t.title || (t.local ? 'New session' : t.id.slice(4))),
      h('span', { class: 'thread-time' }, fmtRelative(t.updated_at || t.created_at))));
  }));
}

function touchThread(id, title) {
  let t = st.threads.find((x) => x.id === id);
  if (!t) {
    t = { id, title: title || '', local: true, updated_at: new Date().toISOString() };
    st.threads.unshift(t);
  } else {
    t.updated_at = new Date().toISOString();
    if (!t.title && title) t.title = title;
    st.threads = [t, ...st.threads.filter((x) => x !== t)];
  }
  renderThreads();
}

/** newSession starts a new web thread: /new runs the conversation seed. */
export function newSession() {
  const id = 'web:' + uuid();
  st.emptyThreads.add(id);
  touchThread(id, '');
  drawer.navigate('#chat/' + encodeURIComponent(id));
  showThread(id);
  expect(id, 1);
  st.chat.send(id, '/new');
  $('input').focus();
}

/** showThread displays a thread (called by the router). */
export function showThread(id) {
  if (!id) {
    let saved = '';
    try { saved = localStorage.getItem(THREAD_KEY) || ''; } catch { /* private mode */ }
    id = isWebThread(saved) ? saved : '';
    if (!id && st.threads.length) id = st.threads[0].id;
    if (!id) { id = 'web:' + uuid(); st.emptyThreads.add(id); }
    history.replaceState(null, '', '#chat/' + encodeURIComponent(id));
  }
  if (id === st.current) return Promise.resolve();
  st.current = id;
  for (const fn of shownHooks) fn(id);
  st.unread.delete(id);
  try { localStorage.setItem(THREAD_KEY, id); } catch { /* private mode */ }
  st.chat.subscribe(id);
  renderThreads();
  return loadThread(id);
}

async function loadThread(id, { keepScroll = false } = {}) {
  const seq = ++st.loadSeq;
  const box = $('messages');
  st.live = null;
  st.entries = [];
  if (st.emptyThreads.has(id)) {
    // a new session: nothing stored yet, frames may already be arriving
    st.loading = false;
    st.buffer = [];
    box.replaceChildren(emptyState());
    updateTyping();
    return;
  }
  // Frames of this thread that arrive while the history loads are held
  // and applied after it.
  st.loading = true;
  st.buffer = [];
  if (!keepScroll) fill(box, h('p', { class: 'muted center pad' }, 'Loading…'));
  let msgs;
  try {
    const res = await api.get(`/threads/${api.tid(id)}/messages` + api.q({ limit: MAX_SHOWN }));
    msgs = (res && res.messages) || [];
  } catch (err) {
    if (seq !== st.loadSeq) return;
    st.loading = false;
    fill(box, h('p', { class: 'error-text center pad' }, 'Could not load the conversation: ' + err.message));
    return;
  }
  if (seq !== st.loadSeq || id !== st.current) return;
  if (msgs.length === 0) st.emptyThreads.add(id); else st.emptyThreads.delete(id);
  st.entries = fromHistory(msgs);
  box.replaceChildren();
  if (!st.entries.length) box.append(emptyState());
  for (const e of st.entries) box.append(e.el);
  st.loading = false;
  const held = st.buffer.splice(0);
  for (const f of held) onFrame(f);
  updateTyping();
  scrollToEnd(true);
  loadApprovals(id);
}

// ---- approvals --------------------------------------------------------------
// A tool call that needs the user's approval arrives as an "approval" frame
// (state pending) and is shown as a card with Approve / Deny buttons; the
// answer goes back as a client "approval" frame, and the outcome (approved,
// denied, expired) comes back as an "approval" frame to every page.

const approvalCards = new Map(); // request id → { el, frame }

const approvalStates = {
  approved: 'Approved: the call ran.',
  denied: 'Denied: the call was not run.',
  expired: 'Not answered in time: the call was not run.',
};

function showApproval(f) {
  if (!f.approval) return;
  let card = approvalCards.get(f.approval);
  const state = f.state || 'pending';
  if (!card || !card.el.isConnected) {
    card = { el: h('article', { class: 'msg approval', 'data-approval': f.approval }), frame: f, state: '' };
    approvalCards.set(f.approval, card);
    $('empty')?.remove();
    $('messages').append(card.el);
  }
  // the same request is sent again (on connect, on subscribe, by a resumed
  // turn): keep the buttons the user may be about to click
  if (card.state === state) return;
  card.state = state;
  const first = card.frame;
  const answer = (approve) => {
    for (const b of card.el.querySelectorAll('button')) b.disabled = true;
    st.chat.raw({ type: 'approval', approval: f.approval, approve });
  };
  fill(card.el, h('div', { class: 'bubble' },
    h('div', { class: 'badge' }, state === 'pending' ? 'Approval needed' : 'Approval'),
    h('p', null, h('code', null, first.name || f.name || '?'), ' ', first.text || f.text || ''),
    h('pre', { class: 'plain' }, pretty(first.arguments ?? f.arguments ?? {})),
    state === 'pending'
      ? h('div', { class: 'row approval-actions' },
        h('button', { type: 'button', class: 'btn primary', 'data-answer': 'approve', on: { click: () => answer(true) } }, 'Approve'),
        h('button', { type: 'button', class: 'btn danger', 'data-answer': 'deny', on: { click: () => answer(false) } }, 'Deny'))
      : h('p', { class: 'approval-state muted', 'data-state': state }, approvalStates[state] || state)));
  scrollToEnd();
}

// loadApprovals shows the requests already waiting on a thread (the page
// was opened or reloaded while a call waits).
async function loadApprovals(id) {
  let res;
  try { res = await api.get('/approvals' + api.q({ thread: id })); } catch { return; }
  if (id !== st.current) return;
  for (const a of (res && res.approvals) || []) {
    showApproval({ type: 'approval', thread: a.thread, approval: a.id, name: a.tool, arguments: a.arguments, text: a.reason, state: a.state });
  }
}

function emptyState() {
  return h('div', { class: 'empty', id: 'empty' },
    h('img', { src: '/static/icon.svg', alt: '', width: 48, height: 48 }),
    h('p', null, 'Say hello, ask something, or type ', h('code', null, '/help'), ' for the commands.'));
}

// fromHistory turns stored messages into entries: tool calls and their
// results, and the model's thinking, fold under the assistant reply that
// follows them.
function fromHistory(msgs) {
  const out = [];
  let tools = [];
  let thinking = '';
  const flushTools = () => {
    if (tools.length || thinking) {
      const e = newEntry('assistant', '');
      e.tools = tools;
      e.thinking = thinking;
      renderEntry(e);
      out.push(e);
      tools = [];
      thinking = '';
    }
  };
  for (const m of msgs) {
    const at = m.created_at;
    if (m.role === 'assistant') {
      for (const c of m.tool_calls || []) tools.push({ call_id: c.id, name: c.name, arguments: c.arguments });
      if (m.thinking) thinking += (thinking ? '\n\n' : '') + m.thinking;
      if (m.text) {
        const e = newEntry('assistant', m.text, at);
        e.tools = tools;
        e.thinking = thinking;
        tools = [];
        thinking = '';
        renderEntry(e);
        out.push(e);
      }
      continue;
    }
    if (m.role === 'tool') {
      for (const r of m.tool_results || []) {
        const t = tools.find((x) => x.call_id === r.call_id);
        if (t) Object.assign(t, { result: r.result, is_error: r.is_error });
        else tools.push({ call_id: r.call_id, name: r.name, result: r.result, is_error: r.is_error });
      }
      continue;
    }
    flushTools();
    const role = m.system_event || (m.role === 'user' && /^\[SYSTEM EVENT\]/.test(m.text || '')) ? 'system' : m.role;
    const e = newEntry(role === 'user' || role === 'system' ? role : 'system', m.text || '', at);
    e.attachments = m.attachments || [];
    renderEntry(e);
    out.push(e);
  }
  flushTools();
  return out.slice(-MAX_SHOWN);
}

// ---- entries ----------------------------------------------------------------

function newEntry(role, text, at) {
  return { role, text, thinking: '', at: at || new Date().toISOString(), tools: [], streaming: false, error: '', deltas: 0, el: h('article', { class: 'msg ' + role }), dirty: false };
}

// renderEntry (re)builds an entry's DOM from its state.
function renderEntry(e) {
  const el = e.el;
  el.className = 'msg ' + e.role + (e.streaming ? ' streaming' : '') + (e.error ? ' failed' : '');
  el.dataset.deltas = String(e.deltas);
  if (e.role === 'system') {
    fill(el, h('details', { class: 'sysevent' },
      h('summary', null, 'System event', h('span', { class: 'meta-inline' }, fmtClock(e.at))),
      h('pre', { class: 'plain' }, e.text.replace(/^\[SYSTEM EVENT\]\s*/, ''))));
    return;
  }
  const body = h('div', { class: 'md' });
  if (e.role === 'user') body.append(...textParagraphs(e.text));
  else body.append(render(e.text));
  if (e.streaming && !e.text && !e.tools.length) body.append(typingDots());
  const bubble = h('div', { class: 'bubble' });
  if (e.role === 'notify') bubble.append(h('div', { class: 'badge' }, e.label || 'Notification'));
  if (e.text || e.role === 'user' || e.streaming) bubble.append(body);
  if (e.attachments && e.attachments.length) bubble.append(attach.chips(e.attachments));
  if (e.error) bubble.append(h('div', { class: 'error-text' }, e.error));
  const kids = [];
  if (e.thinking) kids.push(thinkingView(e));
  if (e.text || e.error || e.streaming || e.role !== 'assistant') kids.push(bubble);
  if (e.tools.length) kids.push(toolsView(e));
  kids.push(h('div', { class: 'meta' }, e.streaming ? 'writing…' : fmtClock(e.at)));
  fill(el, kids);
}

function textParagraphs(text) {
  // user text is shown as typed (whitespace kept by CSS), never as markup
  return [h('p', { class: 'plain' }, text)];
}

function typingDots() {
  return h('span', { class: 'typing', 'aria-label': 'Reverie is writing' }, h('i'), h('i'), h('i'));
}

// thinkingView is the model's reasoning, folded above its reply: open it to
// read it (it stays open while it streams, if opened).
function thinkingView(e) {
  const words = e.thinking.trim().split(/\s+/).length;
  const live = e.streaming && !e.text;
  const d = h('details', { class: 'thinking' + (live ? ' live' : '') },
    h('summary', null, live ? 'Thinking…' : 'Thought', h('span', { class: 'meta-inline' }, ` ${words} word${words === 1 ? '' : 's'}`)),
    h('div', { class: 'thinking-text plain' }, e.thinking));
  d.open = !!e.thinkingOpen;
  d.addEventListener('toggle', () => { e.thinkingOpen = d.open; });
  return d;
}

function toolsView(e) {
  const running = e.tools.filter((t) => t.result === undefined).length;
  const failed = e.tools.filter((t) => t.is_error).length;
  const n = e.tools.length;
  let label = n === 1 ? '1 tool call' : `${n} tool calls`;
  if (running && e.streaming) label += ` · running ${e.tools.filter((t) => t.result === undefined).map((t) => t.name).join(', ')}`;
  if (failed) label += ` · ${failed} failed`;
  const d = h('details', { class: 'tools' }, h('summary', null, label),
    e.tools.map((t) => h('details', { class: 'tool' + (t.is_error ? ' tool-error' : '') },
      h('summary', null, h('code', null, t.name || '?'), ' ',
        h('span', { class: 'tool-state' }, t.result === undefined ? '…' : t.is_error ? 'failed' : 'ok')),
      h('div', { class: 'tool-label' }, 'Arguments'),
      h('pre', { class: 'plain' }, pretty(t.arguments ?? {})),
      t.result !== undefined ? [h('div', { class: 'tool-label' }, 'Result'), h('pre', { class: 'plain' }, pretty(t.result))] : null)));
  d.open = !!e.toolsOpen;
  d.addEventListener('toggle', () => { e.toolsOpen = d.open; });
  return d;
}

// schedule a re-render of e on the next frame (many deltas → one render)
function touch(e) {
  if (e.dirty) return;
  e.dirty = true;
  requestAnimationFrame(() => {
    e.dirty = false;
    const stick = nearBottom();
    renderEntry(e);
    if (stick) scrollToEnd();
  });
}

function append(e) {
  const box = $('messages');
  const empty = document.getElementById('empty');
  if (empty) empty.remove();
  const stick = nearBottom();
  st.entries.push(e);
  box.append(e.el);
  while (st.entries.length > MAX_SHOWN) st.entries.shift().el.remove();
  updateTyping();
  if (stick) scrollToEnd();
}

function nearBottom() {
  const box = $('messages');
  return box.scrollHeight - box.scrollTop - box.clientHeight < 120;
}

function scrollToEnd(force) {
  const box = $('messages');
  if (force || nearBottom()) box.scrollTop = box.scrollHeight;
}

function expect(thread, n) {
  st.expected.set(thread, (st.expected.get(thread) || 0) + n);
  updateTyping();
}

function settle(thread) {
  const n = (st.expected.get(thread) || 0) - 1;
  if (n > 0) st.expected.set(thread, n); else st.expected.delete(thread);
  updateTyping();
}

function updateTyping() {
  // The stop button shows while a reply of this thread is awaited.
  $('stop').hidden = !(st.current && st.expected.get(st.current) > 0);
  let t = document.getElementById('typing-row');
  const show = st.current && st.expected.get(st.current) > 0 && !st.live;
  if (!show) { if (t) t.remove(); return; }
  const box = $('messages');
  if (!t) t = h('div', { id: 'typing-row', class: 'msg assistant pending' }, h('div', { class: 'bubble' }, typingDots()));
  box.append(t); // keep it last
}

// ---- sending ------------------------------------------------------------------

function sendInput() {
  const input = $('input');
  const text = input.value;
  const atts = attach.take();
  if (atts === null) return; // still uploading
  if (!text.trim() && !atts.length) return;
  if (text.length > 1 << 20) {
    toast('That message is too long (1 MiB at most).', 'error');
    return;
  }
  const thread = st.current;
  const isCommand = /^\/[A-Za-z]/.test(text.trim());
  const first = st.emptyThreads.has(thread) && !isCommand;
  st.emptyThreads.delete(thread);
  const e = newEntry('user', text);
  e.attachments = atts;
  renderEntry(e);
  append(e);
  touchThread(thread, isCommand ? '' : text.slice(0, 80));
  expect(thread, first ? 2 : 1);
  if (st.chat.state !== 'online') toast('Not connected: the message will be sent when the connection is back.');
  st.chat.send(thread, text, atts);
  input.value = '';
  autosize(input);
  suggestCommands();
  scrollToEnd(true);
}

function suggestCommands() {
  const box = document.getElementById('suggest');
  const v = $('input').value;
  const cmds = (st.info && st.info.commands) || [];
  const m = /^\/([a-z_]*)$/i.exec(v);
  if (!m || !cmds.length) { if (box) box.remove(); return; }
  const list = cmds.filter((c) => c.name.startsWith(m[1].toLowerCase()));
  if (!list.length) { if (box) box.remove(); return; }
  const el = h('div', { id: 'suggest', class: 'suggest', role: 'listbox' },
    list.map((c) => h('button', {
      type: 'button', class: 'chip', role: 'option',
      on: { click: () => { $('input').value = '/' + c.name + ' '; $('input').focus(); suggestCommands(); } },
    }, h('strong', null, '/' + c.name), h('span', null, ' ' + (c.help || '')))));
  if (box) box.replaceWith(el); else $('composer').before(el);
}

// ---- frames ---------------------------------------------------------------------

function onFrame(f) {
  if (f.type === 'pong') return;
  const thread = f.thread || '';
  if (f.type === 'error' && !thread) {
    toast(f.error || 'The server refused a message.', 'error');
    return;
  }
  if (thread && thread === st.current && st.loading) {
    st.buffer.push(f);
    return;
  }
  if (thread && thread !== st.current) {
    if (f.type === 'done' || f.type === 'error') settle(thread);
    if (f.type === 'approval' && (f.state || 'pending') === 'pending') {
      if (isWebThread(thread)) { st.unread.add(thread); touchThread(thread); }
      toast('A tool call waits for your approval in ' + (isWebThread(thread) ? 'another conversation' : thread) + '.');
    }
    if (f.type === 'done' || f.type === 'notify' || f.type === 'error') {
      if (isWebThread(thread)) {
        st.unread.add(thread);
        touchThread(thread);
      }
      if (f.type === 'notify') {
        if (isWebThread(thread)) toast('New message in another conversation: ' + (f.text || '').slice(0, 80));
        else showNotify(f); // addressed to the web channel as a whole
      }
    }
    return;
  }
  switch (f.type) {
    case 'delta': {
      const e = liveEntry();
      e.text += f.text || '';
      e.deltas++;
      touch(e);
      break;
    }
    case 'thinking': {
      const e = liveEntry();
      e.thinking += f.text || '';
      touch(e);
      break;
    }
    case 'tool_call': {
      const e = liveEntry();
      e.tools.push({ call_id: f.call_id, name: f.name, arguments: f.arguments });
      touch(e);
      break;
    }
    case 'tool_result': {
      const e = liveEntry();
      let t = e.tools.find((x) => x.call_id === f.call_id);
      if (!t) { t = { call_id: f.call_id, name: f.name }; e.tools.push(t); }
      t.result = f.result;
      t.is_error = !!f.is_error;
      touch(e);
      break;
    }
    case 'done': {
      const e = st.live || liveEntry();
      e.text = typeof f.text === 'string' ? f.text : e.text;
      e.streaming = false;
      e.at = new Date().toISOString();
      st.live = null;
      st.emptyThreads.delete(thread);
      settle(thread);
      renderEntry(e);
      scrollToEnd();
      refreshThreadsSoon();
      break;
    }
    case 'error': {
      const e = st.live || liveEntry();
      e.streaming = false;
      e.error = f.error || 'Something went wrong.';
      st.live = null;
      settle(thread);
      renderEntry(e);
      scrollToEnd();
      break;
    }
    case 'notify':
      showNotify(f);
      break;
    case 'approval':
      showApproval(f);
      break;
    default:
      break;
  }
}

function liveEntry() {
  if (!st.live) {
    st.live = newEntry('assistant', '');
    st.live.streaming = true;
    renderEntry(st.live);
    append(st.live);
  }
  return st.live;
}

function showNotify(f) {
  const e = newEntry('notify', f.text || '');
  if (f.thread && f.thread !== st.current) e.label = 'Notification · ' + f.thread;
  renderEntry(e);
  // a notification never lands inside a reply being written
  if (st.live) st.live.el.before(e.el), st.entries.splice(st.entries.indexOf(st.live), 0, e);
  else append(e);
  scrollToEnd();
}

let refreshTimer = null;
function refreshThreadsSoon() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(refreshThreads, 400);
}
