// The chat view: thread list, messages (streamed over the WebSocket), tool
// calls folded under each reply, proactive notifications, the composer.

import { h, $, fill, fmtClock, fmtRelative, pretty, toast, uuid, debounce } from './dom.js';
import { render, installCopy } from './markdown.js';
import * as api from './api.js';
import * as drawer from './drawer.js';
import * as attach from './attach.js';
import * as voice from './voice.js';
import { setTitles, threadLabel } from './titles.js';

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
  sendAfterLoad: false, // the user sent while the history loaded: send once it is shown
  emptyThreads: new Set(), // threads known to have no messages yet
  segment: null,       // the archived conversation or branch shown (read-only), or null
  focus: 0,            // a message id to scroll to once shown (a search hit)
  redone: new Set(),   // threads with a regeneration, retry or edit whose earlier version is not marked yet
  branchesSeen: new Map(), // thread → ids of its branches shown or known when the history was read
  deleted: new Set(),  // web threads deleted (read-only until restored)
};

/** conversations reports whether the server manages conversations. */
const conversations = () => !!(st.info && st.info.features && st.info.features.conversations);

/** isWebThread reports whether a thread belongs to the web channel. */
const isWebThread = (t) => typeof t === 'string' && t.startsWith('web:');
/** channelLabel names the channel of a thread of another channel ("terminal" for cli:…). */
const channelLabel = (t) => { const c = String(t).split(':')[0]; return c === 'cli' ? 'terminal' : c; };

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
    refreshDeleted();
  };

  installCopy($('messages'));
  attach.init({ currentThread: () => st.current });
  voice.init({ currentThread: () => st.current, send: sendVoice });
  onThreadShown(attach.shown);
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
  initSidebarTools();
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
  setTitles(list);
  const web = list.filter((t) => isWebThread(t.id));
  // Keep locally created threads that have no message on the server yet.
  for (const t of st.threads) {
    if (t.local && !web.some((w) => w.id === t.id) && !st.deleted.has(t.id)) web.unshift(t);
  }
  st.threads = web;
  renderThreads();
}

/** refreshDeleted learns which web threads are deleted (at start and after a reconnect; frames tell the rest). */
export async function refreshDeleted() {
  if (!conversations()) return;
  let list;
  try {
    const res = await api.get('/threads' + api.q({ archived: true, limit: 200 }));
    list = ((res && res.threads) || []).filter((t) => isWebThread(t.id));
  } catch { return; /* the server refuses their messages anyway */ }
  setTitles(list);
  const was = st.deleted.has(st.current);
  st.deleted = new Set(list.map((t) => t.id));
  if (st.current && was !== st.deleted.has(st.current) && !st.segment) loadThread(st.current, { keepScroll: true });
}

// onThreadFrame applies a thread's deletion or restoration, by this page
// or any other client: a deleted conversation takes no more messages here.
function onThreadFrame(f) {
  const id = f.thread;
  if (!isWebThread(id)) return;
  if (f.state === 'deleted') {
    if (st.deleted.has(id)) return;
    st.deleted.add(id);
    st.threads = st.threads.filter((x) => x.id !== id);
    renderThreads();
  } else if (f.state === 'restored') {
    if (!st.deleted.delete(id)) return;
    refreshThreads();
  } else return;
  refreshArchive();
  if (id === st.current && !st.segment) loadThread(id, { keepScroll: true });
}

function renderThreadError(err) {
  fill($('threads'), h('li', { class: 'muted small pad' }, 'Could not load conversations: ' + err.message));
}

// renaming is the title editor open in the list ({ id, input, li, close }), or null.
let renaming = null;

function renderThreads() {
  const ul = $('threads');
  // An open title editor stays through the re-render (a reply, another
  // client's change): its row is kept in the list, never detached, so what
  // was typed, the focus and the caret stay; it closes, unsaved, when its
  // conversation leaves the list.
  const editing = renaming && renaming.li.isConnected && ul.contains(renaming.li) ? renaming : null;
  if (editing && !st.threads.some((t) => t.id === editing.id && !t.local)) editing.close(false);
  const keep = editing && !editing.closed ? editing.li : null;
  if (!st.threads.length) {
    fill(ul, h('li', { class: 'muted small pad' }, 'No conversations yet.'));
    return;
  }
  const rows = st.threads.map((t) => threadRow(t));
  if (!keep) {
    fill(ul, rows);
    return;
  }
  const i = st.threads.findIndex((t) => t.id === editing.id);
  for (const c of [...keep.childNodes]) if (c !== editing.input) c.remove();
  keep.append(...rows[i].childNodes);
  keep.className = rows[i].className + ' renaming';
  for (const c of [...ul.children]) if (c !== keep) c.remove();
  keep.before(...rows.slice(0, i));
  keep.after(...rows.slice(i + 1));
}

/** threadRow is the list's row for conversation t. */
function threadRow(t) {
  const active = t.id === st.current;
  return h('li', { class: 'thread-row', dataset: { thread: t.id } },
    h('a', {
      href: '#chat/' + encodeURIComponent(t.id), class: 'thread' + (active ? ' active' : '') + (st.unread.has(t.id) ? ' unread' : ''),
      dataset: { thread: t.id }, 'aria-current': active ? 'page' : false, title: t.title || '',
    },
    h('span', { class: 'thread-title' }, t.title || 'New session'),
    h('span', { class: 'thread-time' }, fmtRelative(t.updated_at || t.created_at))),
    conversations() && !t.local ? h('span', { class: 'thread-actions' },
      h('button', { type: 'button', class: 'icon-btn small', title: 'Rename', 'aria-label': 'Rename', dataset: { act: 'rename' }, on: { click: () => renameThread(t) } }, '✎'),
      h('button', { type: 'button', class: 'icon-btn small', title: 'Delete (restorable from Archived)', 'aria-label': 'Delete', dataset: { act: 'delete' }, on: { click: () => deleteThread(t) } }, '🗑')) : null);
}

// ---- managing conversations: rename, delete, archive, search -------------------

function initSidebarTools() {
  const search = h('input', { type: 'search', id: 'thread-search', class: 'thread-search', placeholder: 'Search conversations', 'aria-label': 'Search conversations', spellcheck: 'false' });
  const results = h('ul', { id: 'search-results', class: 'threads search-results', 'aria-label': 'Search results', hidden: true });
  const archive = h('details', { id: 'archive', class: 'archive' },
    h('summary', { class: 'sidebar-title' }, 'Archived'),
    h('ul', { id: 'archived', class: 'threads', 'aria-label': 'Archived conversations' }));
  archive.addEventListener('toggle', () => { if (archive.open) loadArchive(); });
  $('threads').before(search, results);
  $('threads').after(archive);
  search.addEventListener('input', debounce(() => runSearch(search.value), 250));
  search.addEventListener('keydown', (ev) => { if (ev.key === 'Escape') { search.value = ''; runSearch(''); } });
  // Links in the results and the archive close the drawer like the list's.
  const follow = (ev) => {
    const a = ev.target instanceof Element ? ev.target.closest('a[href]') : null;
    if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    ev.preventDefault();
    const href = a.getAttribute('href');
    drawer.navigate(href);
    if (href.startsWith('#archive/')) showSegment(href.slice('#archive/'.length));
    else showThread(a.dataset.thread);
  };
  results.addEventListener('click', follow);
  archive.addEventListener('click', follow);
  const sync = () => { search.hidden = archive.hidden = !conversations(); };
  sync();
  setTimeout(sync, 0);
}

/** marked turns a snippet with «matches» into text nodes and <mark>s. */
function marked(snippet) {
  const out = [];
  const re = /«([^»]*)»/g;
  let last = 0;
  let m;
  while ((m = re.exec(snippet))) {
    if (m.index > last) out.push(snippet.slice(last, m.index));
    out.push(h('mark', null, m[1]));
    last = re.lastIndex;
  }
  out.push(snippet.slice(last));
  return out;
}

let searchSeq = 0;
async function runSearch(text) {
  const seq = ++searchSeq;
  const results = $('search-results');
  const q = text.trim();
  $('threads').hidden = !!q;
  results.hidden = !q;
  if (!q) return;
  let hits = [];
  try {
    const res = await api.get('/search' + api.q({ q, limit: 50 }));
    hits = (res && res.hits) || [];
  } catch (err) {
    if (seq === searchSeq) fill(results, h('li', { class: 'muted small pad' }, 'Search failed: ' + err.message));
    return;
  }
  if (seq !== searchSeq) return;
  if (!hits.length) { fill(results, h('li', { class: 'muted small pad' }, 'Nothing found.')); return; }
  setTitles(hits.map((x) => ({ id: x.thread, title: x.title })));
  fill(results, hits.map((x) => {
    const href = x.segment ? '#archive/' + x.segment : '#chat/' + encodeURIComponent(x.thread);
    return h('li', null, h('a', {
      href, class: 'thread hit', dataset: { thread: x.thread, message: String(x.message_id || ''), segment: String(x.segment || '') },
      on: { click: () => { st.focus = x.message_id || 0; } },
    },
    h('span', { class: 'thread-title' }, x.title || threadLabel(x.thread), x.segment ? h('span', { class: 'muted' }, ' · archived') : null),
    h('span', { class: 'thread-time' }, fmtRelative(x.at)),
    h('span', { class: 'hit-snippet' }, ...marked(x.snippet || ''))));
  }));
}

// archiveSeq numbers the archive's loads: when several overlap (the
// section opened while a delete or restore refreshes it), only the newest
// fills the list, never an older answer arriving last.
let archiveSeq = 0;

async function loadArchive() {
  const ul = $('archived');
  const seq = ++archiveSeq;
  let threads = [];
  let segments = [];
  try {
    const [a, b] = await Promise.all([
      api.get('/threads' + api.q({ archived: true, limit: 200 })),
      api.get('/segments' + api.q({ kind: 'conversation', limit: 200 })),
    ]);
    if (seq !== archiveSeq) return;
    threads = ((a && a.threads) || []).filter((t) => isWebThread(t.id));
    for (const t of threads) st.deleted.add(t.id);
    // Closed conversations of every channel (the terminal's /new too) are
    // readable here; deleted threads are the web's own (they reopen as chats).
    segments = (b && b.segments) || [];
  } catch (err) {
    if (seq === archiveSeq) fill(ul, h('li', { class: 'muted small pad' }, 'Could not load the archive: ' + err.message));
    return;
  }
  setTitles(threads);
  const items = [
    ...threads.map((t) => ({ at: t.archived_at, el: h('li', { class: 'thread-row', dataset: { archived: t.id } },
      h('a', { href: '#chat/' + encodeURIComponent(t.id), class: 'thread', dataset: { thread: t.id } },
        h('span', { class: 'thread-title' }, t.title || 'Untitled conversation'),
        h('span', { class: 'thread-time' }, 'deleted ' + fmtRelative(t.archived_at))),
      h('span', { class: 'thread-actions shown' },
        h('button', { type: 'button', class: 'btn small', dataset: { act: 'restore' }, on: { click: () => restoreThread(t) } }, 'Restore'))) })),
    ...segments.map((x) => ({ at: x.created_at, el: h('li', { dataset: { segment: String(x.id) } },
      h('a', { href: '#archive/' + x.id, class: 'thread', dataset: { segment: String(x.id) } },
        h('span', { class: 'thread-title' }, x.title || 'Earlier conversation',
          isWebThread(x.thread) ? null : h('span', { class: 'muted', dataset: { channel: '' } }, ' · ' + channelLabel(x.thread))),
        h('span', { class: 'thread-time' }, 'closed ' + fmtRelative(x.created_at)))) })),
  ].sort((p, q) => String(q.at).localeCompare(String(p.at)));
  if (!items.length) { fill(ul, h('li', { class: 'muted small pad' }, 'Nothing archived.')); return; }
  fill(ul, items.map((i) => i.el));
}

function refreshArchive() {
  const a = document.getElementById('archive');
  if (a && a.open) loadArchive();
}

function renameThread(t) {
  const li = document.querySelector(`#threads li[data-thread="${CSS.escape(t.id)}"]`);
  if (!li) return;
  const input = h('input', { type: 'text', class: 'rename-input', value: t.title || '', 'aria-label': 'New title', maxlength: 120 });
  const editor = { id: t.id, input, li, closed: false, close: null };
  const done = async (save) => {
    if (editor.closed) return;
    editor.closed = true; // removing the input blurs it: once only
    if (renaming === editor) renaming = null;
    const title = input.value.trim();
    input.remove();
    editor.li.classList.remove('renaming');
    // The list may have been fetched again since the editor opened: the
    // conversation as listed now.
    const cur = st.threads.find((x) => x.id === t.id) || t;
    if (!save || !title || title === cur.title) return;
    try {
      const th = await api.put(`/threads/${api.tid(t.id)}`, { title });
      cur.title = th.title;
      setTitles([th]);
      renderThreads();
      if (t.id === st.current) updateTitle();
    } catch (err) {
      toast('Could not rename: ' + err.message, 'error');
    }
  };
  editor.close = done;
  input.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') { ev.preventDefault(); done(true); }
    if (ev.key === 'Escape') { ev.preventDefault(); done(false); }
  });
  input.addEventListener('blur', () => done(true));
  if (renaming) renaming.close(true);
  renaming = editor;
  li.classList.add('renaming');
  li.prepend(input);
  input.focus();
  input.select();
}

async function deleteThread(t) {
  try {
    await api.del(`/threads/${api.tid(t.id)}`);
  } catch (err) {
    toast('Could not delete: ' + err.message, 'error');
    return;
  }
  st.deleted.add(t.id);
  st.threads = st.threads.filter((x) => x.id !== t.id);
  renderThreads();
  toast(`Deleted "${t.title || 'New session'}": it is under Archived, where you can restore it.`);
  refreshArchive();
  if (t.id === st.current) {
    const next = st.threads.find((x) => !x.local);
    location.hash = next ? '#chat/' + encodeURIComponent(next.id) : '#chat/web:' + uuid();
  }
}

async function restoreThread(t) {
  try {
    await api.post(`/threads/${api.tid(t.id)}/restore`, {});
  } catch (err) {
    toast('Could not restore: ' + err.message, 'error');
    return;
  }
  toast(`Restored "${t.title || 'Untitled conversation'}".`);
  const was = st.deleted.delete(t.id);
  await refreshThreads();
  refreshArchive();
  if (was && t.id === st.current && !st.segment) loadThread(t.id, { keepScroll: true });
}

/** updateTitle shows the current conversation's title in the document title. */
function updateTitle() {
  const t = st.threads.find((x) => x.id === st.current);
  document.title = st.segment ? (st.segment.title || 'Archived conversation') + ' · Reverie' : t && t.title ? t.title + ' · Reverie' : 'Reverie';
}

function touchThread(id, title) {
  if (st.deleted.has(id)) return; // not listed until restored
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
    id = isWebThread(saved) && !st.deleted.has(saved) ? saved : '';
    if (!id && st.threads.length) id = st.threads[0].id;
    if (!id) { id = 'web:' + uuid(); st.emptyThreads.add(id); }
    history.replaceState(null, '', '#chat/' + encodeURIComponent(id));
  }
  if (id === st.current && !st.segment) return Promise.resolve();
  leaveSegment();
  st.current = id;
  for (const fn of shownHooks) fn(id);
  st.unread.delete(id);
  try { localStorage.setItem(THREAD_KEY, id); } catch { /* private mode */ }
  st.chat.subscribe(id);
  renderThreads();
  updateTitle();
  return loadThread(id);
}

/** showSegment displays an archived conversation or branch, read-only. */
export async function showSegment(id) {
  const seq = ++st.loadSeq;
  const box = $('messages');
  st.live = null;
  st.entries = [];
  st.loading = false;
  fill(box, h('p', { class: 'muted center pad' }, 'Loading…'));
  let res;
  try {
    res = await api.get('/segments/' + encodeURIComponent(id));
  } catch (err) {
    if (seq === st.loadSeq) fill(box, h('p', { class: 'error-text center pad' }, 'Could not load the archived conversation: ' + err.message));
    return;
  }
  if (seq !== st.loadSeq) return;
  const seg = res.segment || {};
  st.segment = seg;
  st.current = '';
  renderThreads();
  updateTitle();
  $('app').classList.add('read-only');
  $('input').disabled = true;
  const what = seg.kind === 'branch' ? 'An earlier version of this conversation, replaced by an edit or a regeneration.' : 'A conversation closed with /new.';
  const back = h('a', { href: '#chat/' + encodeURIComponent(seg.thread), class: 'btn small' }, 'Back to “' + threadLabel(seg.thread) + '”');
  const bar = h('div', { class: 'segment-bar', id: 'segment-bar', role: 'status' },
    h('strong', null, seg.title || 'Archived conversation'), h('span', { class: 'muted' }, ' · read-only. ' + what + ' '), back);
  st.entries = fromHistory(res.messages || [], true);
  box.replaceChildren(bar, ...st.entries.map((e) => e.el));
  focusMessage();
}

function leaveSegment() {
  if (!st.segment) return;
  st.segment = null;
  setReadOnly(false);
}

/** setReadOnly makes the composer unusable (an archived or deleted conversation) or usable again. */
function setReadOnly(on) {
  $('app').classList.toggle('read-only', on);
  $('input').disabled = on;
}

// deletedBar heads a deleted conversation, shown read-only: restoring it is
// the one way to go on with it.
function deletedBar(id) {
  const t = { id, title: threadLabel(id) };
  return h('div', { class: 'segment-bar deleted-bar', id: 'deleted-bar', role: 'status' },
    h('strong', null, t.title || 'Deleted conversation'), h('span', { class: 'muted' }, ' · deleted, read-only. Restore it to go on with it. '),
    h('button', { type: 'button', class: 'btn small primary', dataset: { act: 'restore' }, on: { click: () => restoreThread(t) } }, 'Restore'),
    h('button', { type: 'button', class: 'btn small', on: { click: () => newSession() } }, 'New session'));
}

/** focusMessage scrolls to the message a search hit named. */
function focusMessage() {
  if (!st.focus) return;
  const el = document.querySelector(`#messages .msg[data-id="${st.focus}"]`);
  st.focus = 0;
  if (!el) return;
  el.classList.add('focus');
  el.scrollIntoView({ block: 'center' });
}

async function loadThread(id, { keepScroll = false } = {}) {
  const seq = ++st.loadSeq;
  const box = $('messages');
  st.live = null;
  st.entries = [];
  st.sendAfterLoad = false;
  const deleted = st.deleted.has(id);
  if (!st.segment) setReadOnly(deleted);
  if (st.emptyThreads.has(id) && !deleted) {
    // a new session: nothing stored yet, frames may already be arriving
    st.loading = false;
    st.buffer = [];
    // Made on this page (no branch yet), or read before with its branches.
    if (!st.branchesSeen.has(id)) st.branchesSeen.set(id, new Set());
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
  // Also for a thread with no message shown: its branches are known, so
  // that a redo made elsewhere later is told apart (dropReplaced).
  const branches = await loadBranches(id);
  if (seq !== st.loadSeq || id !== st.current) return;
  st.redone.delete(id);
  st.branchesSeen.set(id, branches && new Set(branches.map((b) => b.id)));
  if (msgs.length === 0) st.emptyThreads.add(id); else st.emptyThreads.delete(id);
  st.entries = fromHistory(msgs, deleted);
  box.replaceChildren();
  if (deleted) box.append(deletedBar(id));
  else if (!st.entries.length) box.append(emptyState());
  for (const e of st.entries) box.append(e.el);
  placeBranches(branches || []);
  markLast();
  st.loading = false;
  const held = st.buffer.splice(0);
  for (const f of held) onFrame(f);
  updateTyping();
  scrollToEnd(true);
  focusMessage();
  loadApprovals(id);
  if (st.sendAfterLoad) {
    st.sendAfterLoad = false;
    sendInput();
  }
}

// loadBranches lists the thread's branches (earlier versions): [] when the
// server keeps none, null when it cannot say (the markers are a
// convenience).
async function loadBranches(thread) {
  if (!conversations()) return [];
  try {
    const res = await api.get('/segments' + api.q({ thread, kind: 'branch', limit: 100 }));
    return (res && res.segments) || [];
  } catch { return null; }
}

// placeBranches shows, where an edit or a regeneration replaced turns, a
// link to the earlier version (kept as a branch).
function placeBranches(branches) {
  const box = $('messages');
  for (const b of branches.slice().reverse()) {
    const link = h('div', { class: 'branch-link', dataset: { segment: String(b.id) } },
      h('a', { href: '#archive/' + b.id }, `↺ earlier version (${b.messages} message${b.messages === 1 ? '' : 's'})`));
    // Before the first message shown after the one it followed (that one
    // may not be shown: the opening of the conversation). A reply written
    // live has no id yet: then right after the message it followed (after
    // the links already there).
    const next = [...box.querySelectorAll('.msg[data-id]')].find((el) => Number(el.dataset.id) > b.after_message_id);
    let after = next ? null : box.querySelector(`.msg[data-id="${b.after_message_id}"]`);
    while (after && after.nextElementSibling && after.nextElementSibling.classList.contains('branch-link')) after = after.nextElementSibling;
    if (next) next.before(link); else if (after) after.after(link); else box.append(link);
  }
}

// markBranches marks, live, the earlier version a regeneration, a retry or
// an edit just made (once its reply has ended and the ids are known).
async function markBranches(thread) {
  if (!st.redone.has(thread)) return;
  const branches = await loadBranches(thread);
  if (thread !== st.current || st.loading || !st.redone.delete(thread)) return;
  seenBranches(thread, branches || []);
  for (const el of $('messages').querySelectorAll('.branch-link')) el.remove();
  placeBranches(branches || []);
}

// seenBranches records branches as known: their replaced messages are not
// shown (any more) and their links are placed.
function seenBranches(thread, branches) {
  let seen = st.branchesSeen.get(thread);
  if (!seen) st.branchesSeen.set(thread, seen = new Set());
  for (const b of branches) seen.add(b.id);
}

// dropReplaced takes out, when reply (one this page did not ask for)
// answers a regeneration, a retry or an edit made elsewhere (another tab,
// the HTTP API), the entries that redo replaced, as a reload shows the
// thread: the redo's branch, made before its reply starts, is the one this
// page has not seen, and the entries after the message it follows, up to
// reply, are its messages (a reply written live has no id). While a redo
// of this page's own waits for its branch to be marked, which new branch is
// whose cannot be told: nothing is dropped then.
async function dropReplaced(thread, reply, seq) {
  if (st.redone.has(thread)) return;
  const branches = await loadBranches(thread);
  if (!branches || thread !== st.current || seq !== st.loadSeq || st.loading || st.redone.has(thread)) return;
  const seen = st.branchesSeen.get(thread);
  // When the branches were not known as the history was read, none can be
  // told new: they are only recorded.
  const fresh = seen ? branches.filter((b) => !seen.has(b.id)).sort((a, b) => a.id - b.id) : [];
  seenBranches(thread, branches);
  if (!fresh.length) return;
  const stick = nearBottom();
  for (const b of fresh) {
    const end = st.entries.indexOf(reply);
    if (end < 0) break;
    const after = b.after_message_id || 0;
    let from = after ? st.entries.findIndex((e) => e.id === after) : -1;
    from = from >= 0 ? from + 1 : st.entries.findIndex((e) => e.id > after);
    if (from >= 0 && from < end) dropRange(from, end);
  }
  st.redone.add(thread); // markBranches places the links
  markLast();
  if (stick) scrollToEnd();
}

// ---- approvals --------------------------------------------------------------
// A tool call that needs the user's approval arrives as an "approval" frame
// (state pending) and is shown as a card with Approve / Deny buttons; the
// answer goes back as a client "approval" frame, and the outcome (approved,
// denied, expired) comes back as an "approval" frame to every page.

const approvalCards = new Map(); // request id → { el, frame }
// An outcome is final: a "pending" that arrives after it is stale (the list
// of waiting requests fetched before the answer and answered after the
// outcome's frame, or a card drawn again by a reload of the thread) and
// must not bring the buttons back.
const approvalOutcomes = new Map(); // request id → approved | denied | expired

const approvalStates = {
  approved: 'Approved: the call ran.',
  denied: 'Denied: the call was not run.',
  expired: 'Not answered in time: the call was not run.',
};

/** showApproval draws or updates the card of an approval request (frame f). */
export function showApproval(f) {
  if (!f.approval) return;
  let card = approvalCards.get(f.approval);
  let state = f.state || 'pending';
  if (state === 'pending') state = approvalOutcomes.get(f.approval) || state;
  else approvalOutcomes.set(f.approval, state);
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
  // The answer is a POST, not a frame: it needs the token in every auth
  // mode, and a 401 opens the sign-in form (the buttons come back for a
  // second click once signed in). The outcome arrives as a frame.
  const answer = async (approve) => {
    const buttons = card.el.querySelectorAll('button');
    for (const b of buttons) b.disabled = true;
    try {
      await api.post('/approvals/' + encodeURIComponent(f.approval), { approve });
    } catch (err) {
      for (const b of buttons) b.disabled = false;
      if (err.status !== 401) toast('Could not answer: ' + err.message, 'error');
    }
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
function fromHistory(msgs, readOnly = false) {
  const out = [];
  let tools = [];
  let thinking = '';
  const flushTools = () => {
    if (tools.length || thinking) {
      const e = newEntry('assistant', '');
      e.tools = tools;
      e.thinking = thinking;
      e.readOnly = readOnly;
      renderEntry(e);
      out.push(e);
      tools = [];
      thinking = '';
    }
  };
  for (const m of msgs) {
    const at = m.created_at;
    // The opening of a conversation and the supervisor's request to
    // correct a reply are instructions to the model, never rows: the
    // reply that follows is the assistant's own.
    if (m.source === 'seed' || m.source === 'supervisor') continue;
    if (m.role === 'assistant') {
      for (const c of m.tool_calls || []) tools.push({ call_id: c.id, name: c.name, arguments: c.arguments });
      if (m.thinking) thinking += (thinking ? '\n\n' : '') + m.thinking;
      if (m.text || m.status) {
        const e = newEntry('assistant', m.text || '', at);
        e.tools = tools;
        e.thinking = thinking;
        e.id = m.id;
        e.status = m.status || '';
        e.note = m.note || '';
        e.readOnly = readOnly;
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
    e.id = m.id;
    e.readOnly = readOnly;
    renderEntry(e);
    out.push(e);
  }
  flushTools();
  return out.slice(-MAX_SHOWN);
}

// ---- entries ----------------------------------------------------------------

function newEntry(role, text, at) {
  return {
    role, text, thinking: '', at: at || new Date().toISOString(), tools: [], streaming: false, error: '', deltas: 0, el: h('article', { class: 'msg ' + role }), dirty: false,
    id: 0,        // stored message id (from the history)
    status: '',   // 'failed' or 'stopped' for a reply that did not finish
    note: '',     // what happened to it
    readOnly: false, // shown from an archived conversation or branch
  };
}

// renderEntry (re)builds an entry's DOM from its state.
function renderEntry(e) {
  const el = e.el;
  const failed = !!e.error || e.status === 'failed';
  el.className = 'msg ' + e.role + (e.streaming ? ' streaming' : '') + (failed ? ' failed' : '') + (e.status === 'stopped' ? ' stopped' : '') + (e.last ? ' last-reply' : '');
  el.dataset.deltas = String(e.deltas);
  if (e.id) el.dataset.id = String(e.id);
  if (e.role === 'system') {
    fill(el, h('details', { class: 'sysevent' },
      h('summary', null, 'System event', h('span', { class: 'meta-inline' }, fmtClock(e.at))),
      h('pre', { class: 'plain' }, e.text.replace(/^\[SYSTEM EVENT\]\s*/, ''))));
    return;
  }
  const body = h('div', { class: 'md' });
  if (e.role === 'user' && e.spoken) {
    // a voice message: what was heard, once the server has transcribed it
    body.append(h('p', { class: 'plain heard', title: 'Voice message, as it was heard' }, '🎤 ', e.text || 'listening…'));
  } else if (e.role === 'user') body.append(...textParagraphs(e.text));
  else body.append(render(e.text));
  if (e.streaming && !e.text && !e.tools.length) body.append(typingDots());
  // A retry the server waits for (a rate limit): said as it happens, with
  // the time left, so that a wait does not look like a hang.
  const waiting = e.streaming && e.wait ? waitWords(e.wait) : '';
  if (waiting) body.append(h('p', { class: 'wait-note', role: 'status' }, waiting));
  const bubble = h('div', { class: 'bubble' });
  if (e.role === 'notify') bubble.append(h('div', { class: 'badge' }, e.label || 'Notification'));
  if (e.text || e.role === 'user' || e.streaming) bubble.append(body);
  if (e.attachments && e.attachments.length) bubble.append(attach.chips(e.attachments));
  if (failed) bubble.append(h('div', { class: 'error-text' }, e.error || e.note || 'The reply failed.'));
  // A stop is not an error: a quiet mark, with what was written kept.
  if (e.status === 'stopped') bubble.append(h('div', { class: 'stopped-mark' }, 'Stopped'));
  const kids = [];
  if (e.thinking) kids.push(thinkingView(e));
  // While tools run with nothing written yet, the tool list alone shows
  // the activity: no empty bubble above it.
  if (e.text || failed || e.status || waiting || (e.streaming && !e.tools.length) || e.role !== 'assistant') kids.push(bubble);
  if (e.tools.length) kids.push(toolsView(e));
  kids.push(h('div', { class: 'meta' }, e.streaming ? 'writing…' : fmtClock(e.at), e.streaming ? null : actions(e)));
  fill(el, kids);
}

// ---- message actions: copy, edit and resend, regenerate, retry ----------------

function actions(e) {
  if (e.role !== 'user' && e.role !== 'assistant' && e.role !== 'notify') return null;
  const btn = (act, label, fn) => h('button', { type: 'button', class: 'act', dataset: { act }, on: { click: fn } }, label);
  const out = [];
  if (e.voice && e.voice.length) out.push(voice.playButton(e.voice));
  if (e.text) out.push(btn('copy', 'Copy', (ev) => copyEntry(e, ev.currentTarget)));
  if (!e.readOnly && conversations()) {
    if (e.role === 'user' && e.id) out.push(btn('edit', 'Edit', () => editEntry(e)));
    if (e.role === 'assistant') {
      if (e.error || e.status) out.push(btn('retry', 'Retry', () => redo('retry')));
      else out.push(btn('regenerate', 'Regenerate', () => redo('regenerate')));
    }
  }
  return out.length ? h('span', { class: 'msg-actions' }, out) : null;
}

async function copyEntry(e, button) {
  try {
    await navigator.clipboard.writeText(e.text);
  } catch {
    // no clipboard permission: select-and-copy
    const ta = h('textarea', { class: 'offscreen', 'aria-hidden': 'true' });
    ta.value = e.text;
    document.body.append(ta);
    ta.select();
    try { document.execCommand('copy'); } catch { /* nothing more to try */ }
    ta.remove();
  }
  button.textContent = 'Copied';
  button.dataset.copied = 'true';
  setTimeout(() => { button.textContent = 'Copy'; delete button.dataset.copied; }, 1500);
}

// markLast marks the last reply of the thread (regenerate and retry apply to
// it only) when nothing was asked after it.
function markLast() {
  let last = null;
  for (let i = st.entries.length - 1; i >= 0; i--) {
    const e = st.entries[i];
    if (e.role === 'user') break;
    if (e.role === 'assistant' && (e.text || e.status || e.error)) { last = e; break; }
  }
  for (const e of st.entries) {
    const was = !!e.last;
    e.last = e === last;
    if (was !== e.last) e.el.classList.toggle('last-reply', e.last);
  }
}

// dropFrom removes entries from index i on: they are replaced (kept by the
// server as a branch, marked "earlier version" once the new reply ends).
function dropFrom(i) {
  dropRange(i, st.entries.length);
}

// dropRange removes the entries from index i to end (excluded).
function dropRange(i, end) {
  for (const e of st.entries.splice(i, end - i)) e.el.remove();
}

function redo(kind) {
  const thread = st.current;
  if (!thread) return;
  let i = st.entries.length;
  while (i > 0 && st.entries[i - 1].role !== 'user') i--;
  dropFrom(i);
  expect(thread, 1);
  st.redone.add(thread);
  st.chat.raw({ type: kind, thread });
  scrollToEnd(true);
}

function editEntry(e) {
  const bubble = e.el.querySelector('.bubble');
  if (!bubble || e.el.querySelector('.edit-box')) return;
  const ta = h('textarea', { class: 'edit-box', rows: 3, 'aria-label': 'Edit the message' });
  ta.value = e.text;
  const cancel = () => renderEntry(e);
  const send = () => {
    const text = ta.value;
    if (!text.trim() || !st.current) return;
    const thread = st.current;
    const i = st.entries.indexOf(e);
    if (i < 0) return;
    dropFrom(i);
    const ne = newEntry('user', text);
    renderEntry(ne);
    append(ne);
    expect(thread, 1);
    st.redone.add(thread);
    st.chat.raw({ type: 'edit', thread, message: e.id, text });
    scrollToEnd(true);
  };
  ta.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); send(); }
    if (ev.key === 'Escape') { ev.preventDefault(); cancel(); }
  });
  fill(bubble, ta, h('div', { class: 'row edit-actions' },
    h('button', { type: 'button', class: 'btn primary small', dataset: { act: 'send-edit' }, on: { click: send } }, 'Save & send'),
    h('button', { type: 'button', class: 'btn small', dataset: { act: 'cancel-edit' }, on: { click: cancel } }, 'Cancel')));
  ta.focus();
}

// syncMessages brings the entries shown up to the thread's stored messages:
// the user's messages shown live get their ids (an edit names its message
// by id), and, when reply is a reply this page did not ask for, the
// messages other clients sent (another tab, the HTTP API, `reverie send
// --thread`) are shown before it (their reply streams here like any
// other). Syncs run one after another, so that a stored message is matched
// once.
let syncTimer = null;
let syncing = Promise.resolve();
function syncIdsSoon(thread) {
  clearTimeout(syncTimer);
  syncTimer = setTimeout(() => syncMessages(thread, null), 300);
}

function syncMessages(thread, reply) {
  syncing = syncing.then(() => syncOnce(thread, reply), () => syncOnce(thread, reply));
}

async function syncOnce(thread, reply) {
  // While the history loads, it brings them.
  if (thread !== st.current || st.loading) return;
  const seq = st.loadSeq;
  const known = st.entries.reduce((m, e) => Math.max(m, e.id || 0), 0);
  let msgs;
  try {
    const res = await api.get(`/threads/${api.tid(thread)}/messages` + api.q({ after_id: known, limit: 200 }));
    msgs = (res && res.messages) || [];
  } catch { return; }
  if (thread !== st.current || seq !== st.loadSeq || st.loading) return;
  // A message of this page is the first one not matched yet with its text
  // (a voice message's is what was heard); some are never stored (commands,
  // answers to an approval, a recording nothing was heard in).
  const mine = st.entries.filter((e) => e.role === 'user' && !e.id);
  const others = [];
  for (const m of msgs) {
    // A stored reply after them (reply's, once it ended): later messages
    // started later replies, which show them.
    if (reply && others.length && m.role !== 'user') break;
    if (m.role !== 'user' || m.system_event || m.source === 'seed' || m.source === 'supervisor') continue;
    const i = mine.findIndex((e) => e.text.trim() === (m.text || '').trim());
    if (i >= 0) {
      const e = mine.splice(i, 1)[0];
      e.id = m.id;
      renderEntry(e);
    } else others.push(m);
  }
  // A redo made elsewhere replaced what the page shows after the message
  // it answers again (or the edited one).
  if (reply) await dropReplaced(thread, reply, seq);
  if (thread !== st.current || seq !== st.loadSeq || st.loading) return;
  // Shown by the sync their reply started (it knows where they go): one
  // that only matches this page's messages may run after their reply.
  if (others.length && reply) showOthers(fromHistory(others), reply);
  await markBranches(thread);
}

// showOthers shows entries of messages sent elsewhere before reply (the
// reply they started), or last when it is no longer shown.
function showOthers(entries, reply) {
  const at = reply ? st.entries.indexOf(reply) : -1;
  if (at < 0) {
    for (const e of entries) append(e);
    return;
  }
  const stick = nearBottom();
  st.entries.splice(at, 0, ...entries);
  for (const e of entries) reply.el.before(e.el);
  markLast();
  if (stick) scrollToEnd();
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
  // Each call, in the order it happened, is one click from its arguments
  // and result.
  e.toolsOpen = e.toolsOpen || new Set();
  return h('div', { class: 'tools', 'aria-label': label },
    h('div', { class: 'tools-label' }, label),
    e.tools.map((t, i) => {
      const d = h('details', { class: 'tool' + (t.is_error ? ' tool-error' : ''), dataset: { index: String(i) } },
        h('summary', null, h('code', null, t.name || '?'), ' ',
          h('span', { class: 'tool-state' }, t.result === undefined ? '…' : t.is_error ? 'failed' : 'ok')),
        h('div', { class: 'tool-label' }, 'Arguments'),
        h('pre', { class: 'plain' }, pretty(t.arguments ?? {})),
        t.result !== undefined ? [h('div', { class: 'tool-label' }, 'Result'), h('pre', { class: 'plain' }, pretty(t.result))] : null);
      d.open = e.toolsOpen.has(i);
      d.addEventListener('toggle', () => { if (d.open) e.toolsOpen.add(i); else e.toolsOpen.delete(i); });
      return d;
    }));
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
  markLast();
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
  if (st.deleted.has(st.current)) {
    toast('This conversation was deleted: restore it to go on with it.', 'error');
    return;
  }
  if (st.loading) {
    // The history being fetched may predate this message and would
    // replace it on the screen: it is sent once the history is shown.
    st.sendAfterLoad = true;
    return;
  }
  const text = input.value;
  const atts = attach.take();
  if (atts === null) return; // still uploading
  if (!text.trim() && !atts.length) return;
  if (text.length > 1 << 20) {
    toast('That message is too long (1 MiB at most).', 'error');
    return;
  }
  const thread = st.current;
  if (!thread) return; // an archived conversation is read-only
  const isCommand = /^\/[A-Za-z]/.test(text.trim());
  st.emptyThreads.delete(thread);
  const e = newEntry('user', text);
  e.attachments = atts;
  renderEntry(e);
  append(e);
  touchThread(thread, isCommand ? '' : text.slice(0, 80));
  // One reply, also for a new conversation (greeted in the same reply).
  expect(thread, 1);
  if (st.chat.state !== 'online') toast('Not connected: the message will be sent when the connection is back.');
  st.chat.send(thread, text, atts);
  input.value = '';
  autosize(input);
  suggestCommands();
  scrollToEnd(true);
}

// sendVoice sends a recorded voice message (an uploaded audio attachment);
// its bubble shows the transcript once the server has heard it.
function sendVoice(thread, atts) {
  if (thread !== st.current || st.deleted.has(thread)) return;
  st.emptyThreads.delete(thread);
  const e = newEntry('user', '');
  e.attachments = atts;
  e.spoken = true;
  renderEntry(e);
  append(e);
  touchThread(thread, '');
  expect(thread, 1);
  st.chat.send(thread, '', atts);
  scrollToEnd(true);
}

// lastEntry is the newest entry of role (for a transcript, or a spoken reply).
function lastEntry(role) {
  for (let i = st.entries.length - 1; i >= 0; i--) if (st.entries[i].role === role) return st.entries[i];
  return null;
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
  if (f.type === 'thread') { onThreadFrame(f); return; }
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
      toast(`A tool call waits for your approval in “${threadLabel(thread)}”.`);
    }
    if (f.type === 'done' || f.type === 'notify' || f.type === 'error') {
      if (isWebThread(thread)) {
        st.unread.add(thread);
        touchThread(thread);
      }
      if (f.type === 'notify') {
        if (isWebThread(thread)) toast(`New message in “${threadLabel(thread)}”: ` + (f.text || '').slice(0, 80));
        else showNotify(f); // addressed to the web channel as a whole
      }
    }
    return;
  }
  switch (f.type) {
    case 'wait': {
      const e = liveEntry();
      e.wait = { text: f.text || 'waiting for the model provider', until: Date.now() + (f.wait_ms || 0) };
      touch(e);
      tickWait();
      break;
    }
    case 'delta': {
      const e = liveEntry();
      e.wait = null;
      e.text += f.text || '';
      e.deltas++;
      touch(e);
      break;
    }
    case 'thinking': {
      const e = liveEntry();
      e.wait = null;
      e.thinking += f.text || '';
      touch(e);
      break;
    }
    case 'tool_call': {
      const e = liveEntry();
      e.wait = null;
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
      if (f.status === 'stopped') e.status = 'stopped';
      e.streaming = false;
      e.at = new Date().toISOString();
      st.live = null;
      st.emptyThreads.delete(thread);
      settle(thread);
      markLast();
      renderEntry(e);
      scrollToEnd();
      refreshThreadsSoon();
      syncIdsSoon(thread);
      break;
    }
    case 'error': {
      const e = st.live || liveEntry();
      e.streaming = false;
      e.error = f.error || 'Something went wrong.';
      st.live = null;
      settle(thread);
      markLast();
      renderEntry(e);
      scrollToEnd();
      syncIdsSoon(thread);
      break;
    }
    case 'notify':
      showNotify(f);
      break;
    case 'transcript': {
      // What was heard in the voice message: its bubble shows it.
      const e = lastEntry('user');
      if (e) {
        e.text = (f.text || '').replace(/^🎤\s*/u, '');
        e.spoken = true;
        renderEntry(e);
      }
      break;
    }
    case 'voice': {
      // A spoken part of the reply: the reply gets a play button.
      const e = lastEntry('assistant');
      if (e && f.audio) {
        e.voice = (e.voice || []).filter((p) => p.part !== f.part).concat([{ audio: f.audio, part: f.part || 1, parts: f.parts || 1 }]);
        renderEntry(e);
      }
      break;
    }
    case 'approval':
      showApproval(f);
      break;
    default:
      break;
  }
}

// waitWords says a wait with the seconds left: the server's words, their
// "in N s" counted down.
function waitWords(w) {
  const left = Math.max(0, Math.ceil((w.until - Date.now()) / 1000));
  return w.text.replace(/in \d+ s$/, `in ${left} s`) + '…';
}

let waitTimer = 0;
// tickWait re-renders the live entry every second while it waits.
function tickWait() {
  clearInterval(waitTimer);
  waitTimer = setInterval(() => {
    const e = st.live;
    if (!e || !e.wait || !e.streaming) { clearInterval(waitTimer); return; }
    renderEntry(e);
  }, 1000);
}

function liveEntry() {
  if (!st.live) {
    st.live = newEntry('assistant', '');
    st.live.streaming = true;
    renderEntry(st.live);
    append(st.live);
    // A reply this page did not ask for answers a message sent elsewhere.
    if (!(st.expected.get(st.current) > 0)) syncMessages(st.current, st.live);
  }
  return st.live;
}

function showNotify(f) {
  const e = newEntry('notify', f.text || '');
  if (f.thread && f.thread !== st.current) e.label = 'Notification · ' + threadLabel(f.thread);
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
