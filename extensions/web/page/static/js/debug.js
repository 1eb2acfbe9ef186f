// The debug panel: live events, the interaction log, the last system
// prompt, the project status, and views to read and edit memories, pulse items, skills,
// tasks/reminders, workflows, world state, the data dir's history
// (history.js) and token usage. A section whose endpoint answers 501 (or
// that /info lists as off) shows "not enabled".

import { h, s, $, fill, fmtTime, fmtNum, pretty, debounce, toast } from './dom.js';
import * as api from './api.js';
import { draw } from './graph.js';
import { currentThread } from './chat.js';
import { loadTitles, threadLabel } from './titles.js';
import { historyView } from './history.js';

const SECTIONS = [
  { id: 'events', label: 'Events', feature: 'events', view: eventsView },
  { id: 'interactions', label: 'Interactions', feature: 'interactions', view: interactionsView },
  { id: 'prompt', label: 'Prompt', feature: 'prompt', view: promptView },
  { id: 'project', label: 'Project', feature: 'project', view: projectView },
  { id: 'memories', label: 'Memories', feature: 'memories', view: memoriesView },
  { id: 'pulse', label: 'Pulse', feature: 'pulse', view: pulseView },
  { id: 'skills', label: 'Skills', feature: 'skills', view: skillsView },
  { id: 'tasks', label: 'Tasks', feature: 'tasks', view: tasksView },
  { id: 'workflows', label: 'Workflows', feature: 'workflows', view: workflowsView },
  { id: 'world', label: 'World', feature: 'world', view: worldView },
  { id: 'history', label: 'History', feature: 'history', view: (body) => historyView(body, { header, button, confirmButton, failed, pill, live: enabled({ feature: 'events' }) }) },
  { id: 'usage', label: 'Usage', feature: 'usage', view: usageView },
];

let info = null;
let cleanup = null; // of the section shown
let shown = '';

export function init(c) {
  info = c.info;
  const nav = $('debug-nav');
  fill(nav, SECTIONS.map((sec) => h('a', {
    href: '#debug/' + sec.id, id: 'dbg-' + sec.id, class: 'debug-link' + (enabled(sec) ? '' : ' off'),
  }, sec.label)));
}

const enabled = (sec) => !(info && info.features && info.features[sec.feature] === false);

/** show displays a section (default: events). */
export function show(id) {
  const sec = SECTIONS.find((x) => x.id === id) || SECTIONS[0];
  if (shown === sec.id && cleanup) return;
  hide();
  shown = sec.id;
  for (const x of SECTIONS) {
    const link = $('dbg-' + x.id);
    if (x === sec) link.setAttribute('aria-current', 'page'); else link.removeAttribute('aria-current');
  }
  const body = $('debug-body');
  body.replaceChildren();
  body.dataset.section = sec.id;
  loadTitles(); // threads are labelled by title
  if (!enabled(sec)) {
    body.append(notEnabled(sec.label));
    cleanup = () => {};
    return;
  }
  cleanup = sec.view(body) || (() => {});
}

/** hide stops the live parts of the shown section (its event stream). */
export function hide() {
  if (cleanup) cleanup();
  cleanup = null;
  shown = '';
}

function notEnabled(label) {
  return h('div', { class: 'not-enabled' }, h('h2', null, label), h('p', { class: 'muted' }, `${label} is not enabled in this build or configuration.`));
}

// failed shows an error (or "not enabled" for 501) in place of content.
function failed(el, err, label) {
  if (err.status === 501) fill(el, notEnabled(label));
  else fill(el, h('p', { class: 'error-text' }, `Could not load ${label.toLowerCase()}: ${err.message}`));
}

function header(title, ...tools) {
  return h('div', { class: 'section-head' }, h('h2', null, title), h('div', { class: 'section-tools' }, tools));
}

function button(label, onClick, cls = 'btn') {
  return h('button', { type: 'button', class: cls, on: { click: onClick } }, label);
}

// confirmButton asks for a second click instead of a modal dialog.
function confirmButton(label, confirmLabel, onConfirm) {
  const b = h('button', { type: 'button', class: 'btn small danger' }, label);
  let armed = false;
  let timer;
  b.addEventListener('click', async () => {
    if (!armed) {
      armed = true;
      b.textContent = confirmLabel;
      b.classList.add('armed');
      timer = setTimeout(() => { armed = false; b.textContent = label; b.classList.remove('armed'); }, 4000);
      return;
    }
    clearTimeout(timer);
    b.disabled = true;
    try { await onConfirm(); } finally { b.disabled = false; armed = false; b.textContent = label; b.classList.remove('armed'); }
  });
  return b;
}

function pill(text, cls = '') {
  return h('span', { class: 'pill ' + cls }, text);
}

function jsonBlock(v) {
  return h('pre', { class: 'json' }, pretty(v));
}

// ---- events ---------------------------------------------------------------------

const MAX_EVENTS = 500;

function eventsView(body) {
  let topic = '';
  let paused = false;
  let close = null;
  const seen = new Set();
  const list = h('ol', { class: 'events', id: 'event-list', reversed: true });
  const status = h('span', { class: 'muted small', id: 'events-state' }, 'connecting…');
  const filter = h('input', { type: 'search', id: 'events-topic', placeholder: 'topic prefix (turn. memory. …)', list: 'topic-hints', 'aria-label': 'Topic filter', spellcheck: 'false' });
  const hints = h('datalist', { id: 'topic-hints' }, ['turn.', 'message.', 'memory.', 'tool.', 'reminder.', 'sub_session.', 'reflection.', 'pulse.', 'workflow.'].map((t) => h('option', { value: t })));
  const pause = button('Pause', () => {
    paused = !paused;
    pause.textContent = paused ? 'Resume' : 'Pause';
    pause.classList.toggle('armed', paused);
  });
  const clear = button('Clear', () => { list.replaceChildren(); seen.clear(); });
  body.append(header('Events', filter, hints, pause, clear, status), list);

  const add = (ev, live) => {
    if (!ev || seen.has(ev.id)) return;
    if (paused && live) return;
    seen.add(ev.id);
    const prefix = String(ev.topic || '').split('.')[0].replace(/[^a-z_]/g, '');
    const payload = ev.payload || {};
    const summary = eventSummary(payload);
    const row = h('li', { class: 'event', dataset: { topic: ev.topic || '', id: String(ev.id) } },
      h('details', null,
        h('summary', null,
          h('span', { class: 'ev-time' }, fmtTime(ev.time)),
          h('span', { class: 'ev-topic t-' + prefix + (/\.failed$/.test(ev.topic || '') ? ' t-failed' : '') }, ev.topic || '?'),
          h('span', { class: 'ev-sum' }, summary)),
        jsonBlock(payload)));
    list.prepend(row);
    while (list.childElementCount > MAX_EVENTS) list.lastElementChild.remove();
  };

  let gen = 0;
  let stopped = false;
  const connect = async () => {
    const mine = ++gen;
    if (close) close();
    close = null;
    list.replaceChildren();
    seen.clear();
    status.textContent = 'loading…';
    // the recent past first, then live (duplicates are skipped by id)
    try {
      const res = await api.get('/events/recent' + api.q({ topic, last: 100 }));
      if (mine !== gen || stopped) return;
      for (const ev of (res && res.events) || []) add(ev, false);
    } catch (err) {
      if (mine !== gen || stopped) return;
      if (err.status === 501) { fill(body, notEnabled('Events')); return; }
      status.textContent = 'history unavailable: ' + err.message;
    }
    close = api.events(topic, {
      onEvent: (ev) => add(ev, true),
      onLag: (n) => toast(`${n} events were dropped (the panel fell behind).`),
      onState: (s) => {
        status.textContent = s === 'open' ? 'live' : 'reconnecting…';
        status.dataset.state = s;
        // The browser gives up on a refused stream (an expired session, a
        // restart): try again, from scratch, a little later.
        if (s === 'closed' && mine === gen && !stopped) setTimeout(() => { if (mine === gen && !stopped) connect(); }, 3000);
      },
    });
  };
  const apply = () => {
    if (filter.value.trim() === topic) return;
    topic = filter.value.trim();
    connect();
  };
  filter.addEventListener('change', apply);
  filter.addEventListener('search', apply);
  connect();
  return () => { stopped = true; gen++; if (close) close(); close = null; };
}

function eventSummary(p) {
  if (!p || typeof p !== 'object') return String(p ?? '');
  const parts = [];
  if (p.thread) parts.push(threadLabel(p.thread));
  if (p.kind) parts.push(p.kind);
  if (p.name) parts.push(p.name);
  if (p.tool) parts.push(p.tool);
  if (p.usage) parts.push(`${fmtNum(p.usage.input_tokens)}→${fmtNum(p.usage.output_tokens)} tok`);
  if (p.memory_tokens != null) parts.push(`${fmtNum(p.lines)} memory lines, ${fmtNum(p.memory_tokens)} tok`);
  if (p.duration_ms) parts.push(`${p.duration_ms} ms`);
  if (p.error) parts.push('error: ' + p.error);
  if (!parts.length) {
    const t = JSON.stringify(p);
    parts.push(t.length > 120 ? t.slice(0, 119) + '…' : t);
  }
  return parts.join(' · ');
}

// ---- interactions -----------------------------------------------------------------

function interactionsView(body) {
  const action = h('select', { id: 'ix-action', 'aria-label': 'Action' }, h('option', { value: '' }, 'all actions'));
  const thread = h('input', { type: 'search', id: 'ix-thread', placeholder: 'thread', 'aria-label': 'Thread', spellcheck: 'false' });
  const table = h('div', { class: 'ix-list', id: 'ix-list' });
  const more = button('Load older', () => load(true));
  more.hidden = true;
  body.append(header('Interaction log', action, thread, button('Refresh', () => load(false))), table, h('div', { class: 'center pad' }, more));
  let oldest = 0;
  let actionsKnown = false;
  const load = async (older) => {
    if (!older) { oldest = 0; table.replaceChildren(h('p', { class: 'muted' }, 'Loading…')); }
    let res;
    try {
      res = await api.get('/interactions' + api.q({ action: action.value, thread: thread.value.trim(), before_id: older ? oldest : '', limit: 100 }));
    } catch (err) { failed(table, err, 'Interactions'); return; }
    if (!actionsKnown && res.actions) {
      actionsKnown = true;
      const cur = action.value;
      for (const a of res.actions) action.append(h('option', { value: a, selected: a === cur }, a));
    }
    const rows = res.interactions || [];
    if (!older) table.replaceChildren();
    if (!older && !rows.length) table.append(h('p', { class: 'muted' }, 'Nothing logged yet.'));
    for (const r of rows) {
      oldest = r.id;
      const tokens = r.input_tokens || r.output_tokens ? `${fmtNum(r.input_tokens)} → ${fmtNum(r.output_tokens)} tok` : '';
      table.append(h('details', { class: 'ix' + (r.error ? ' ix-error' : ''), dataset: { action: r.action } },
        h('summary', null,
          h('span', { class: 'ev-time' }, fmtTime(r.at)),
          pill(r.action, 'a-' + String(r.action).replace(/[^a-z_]/g, '')),
          h('span', { class: 'ix-thread', title: r.thread || '' }, r.thread ? threadLabel(r.thread) : ''),
          h('span', { class: 'ix-sum' }, r.summary || ''),
          h('span', { class: 'ix-num' }, [tokens, r.duration_ms ? `${fmtNum(r.duration_ms)} ms` : ''].filter(Boolean).join(' · '))),
        r.error ? h('p', { class: 'error-text' }, r.error) : null,
        r.detail !== undefined ? jsonBlock(r.detail) : null));
    }
    more.hidden = rows.length < 100;
  };
  action.addEventListener('change', () => load(false));
  thread.addEventListener('input', debounce(() => load(false), 300));
  load(false);
}

// ---- prompt -----------------------------------------------------------------------------

function promptView(body) {
  const onlyThread = h('input', { type: 'checkbox', id: 'prompt-thread' });
  const out = h('div', { id: 'prompt-out' });
  body.append(header('System prompt of the last turn',
    h('label', { class: 'inline' }, onlyThread, ' this conversation only'),
    button('Refresh', () => load())), out);
  const load = async () => {
    fill(out, h('p', { class: 'muted' }, 'Loading…'));
    try {
      const res = await api.get('/prompt' + api.q({ thread: onlyThread.checked ? currentThread() : '' }));
      const pre = h('pre', { class: 'prompt', id: 'prompt-text' }, res.text || '');
      fill(out,
        h('p', { class: 'muted small' }, [res.thread && threadLabel(res.thread), fmtTime(res.at, true), `${fmtNum(res.chars ?? (res.text || '').length)} characters`].filter(Boolean).join(' · '), ' ',
          button('Copy', async () => { try { await navigator.clipboard.writeText(res.text || ''); toast('Copied.'); } catch { toast('Copy is not available here.', 'error'); } }, 'btn small')),
        pre);
    } catch (err) {
      if (err.status === 404) fill(out, h('p', { class: 'muted' }, 'No turn has run since the start.'));
      else failed(out, err, 'Prompt');
    }
  };
  onlyThread.addEventListener('change', load);
  load();
}

// ---- project status ---------------------------------------------------------------------

// projectView shows GET /status/project: the manifest Reverie compiles from
// its state (world, open pulse items, active workflows, the last turns' tool
// trace and evidence), as workers read it, with the JSON folded below.
function projectView(body) {
  const onlyThread = h('input', { type: 'checkbox', id: 'project-thread', checked: true });
  const out = h('div', { id: 'project-out' });
  body.append(header('Project status',
    h('label', { class: 'inline' }, onlyThread, ' this conversation'),
    button('Refresh', () => load())), out);
  const load = async () => {
    fill(out, h('p', { class: 'muted' }, 'Loading…'));
    try {
      const res = await api.get('/status/project' + api.q({ thread: onlyThread.checked ? currentThread() : '' }));
      fill(out,
        h('p', { class: 'muted small' }, [res.thread ? threadLabel(res.thread) : 'no conversation yet',
          `${(res.pulse || []).length} open pulse items`, `${(res.workflows || []).length} active workflows`,
          `${(res.tool_trace || []).length} tool calls`, `${(res.evidence || []).length} evidence packets`].join(' · ')),
        h('pre', { class: 'prompt', id: 'project-text' }, res.text || ''),
        h('details', null, h('summary', null, 'JSON'), jsonBlock(res)));
    } catch (err) { failed(out, err, 'Project status'); }
  };
  onlyThread.addEventListener('change', load);
  load();
}

// ---- memories ---------------------------------------------------------------------------

const KINDS = ['fact', 'preference', 'episode', 'procedure', 'opinion'];

function kindSelect(value, id) {
  return h('select', { id, 'aria-label': 'Kind' }, KINDS.map((k) => h('option', { value: k, selected: k === value }, k)));
}

function memoriesView(body) {
  const search = h('input', { type: 'search', id: 'mem-search', placeholder: 'search memories', 'aria-label': 'Search memories', spellcheck: 'false' });
  const closed = h('input', { type: 'checkbox', id: 'mem-closed' });
  const list = h('div', { class: 'cards', id: 'mem-list' });
  const newText = h('textarea', { id: 'mem-new', rows: 2, placeholder: 'Add a memory: something Reverie should know about you' });
  const newKind = kindSelect('fact', 'mem-new-kind');
  const add = h('form', { class: 'add-form card' }, newText, h('div', { class: 'row' }, newKind, h('button', { class: 'btn primary', type: 'submit' }, 'Add')));
  body.append(header('Memories', search, h('label', { class: 'inline' }, closed, ' include superseded')), add, list);
  const load = async () => {
    const qv = search.value.trim();
    let res;
    try {
      res = await api.get('/memories' + api.q(qv ? { q: qv, limit: 50 } : { limit: 100, include_closed: closed.checked }));
    } catch (err) { failed(list, err, 'Memories'); return; }
    const mems = (res && res.memories) || [];
    fill(list, mems.length ? mems.map(memoryCard) : h('p', { class: 'muted' }, qv ? 'No memory matches.' : 'No memories yet.'));
  };
  const memoryCard = (m) => {
    const card = h('div', { class: 'card mem' + (m.valid_to ? ' closed' : ''), dataset: { id: String(m.id) } });
    const view = () => fill(card,
      h('p', { class: 'mem-text' }, m.text),
      h('div', { class: 'meta-row' },
        pill(m.kind || 'fact'), pill(m.source || '', 'subtle'),
        h('span', { class: 'muted small' }, `#${m.id} · ${fmtTime(m.created_at, true)} · recalled ${m.access_count || 0}×` + (m.score !== undefined ? ` · score ${Number(m.score).toFixed(3)}` : '') + (m.valid_to ? (m.superseded_by ? ` · superseded by #${m.superseded_by}` : ' · superseded') : '')),
        h('span', { class: 'spacer' }),
        m.valid_to ? null : button('Edit', edit, 'btn small'),
        m.valid_to ? null : confirmButton('Forget', 'Forget for good?', async () => {
          try { await api.del(`/memories/${m.id}`); toast('Forgotten.'); load(); } catch (err) { toast(err.message, 'error'); }
        })));
    const edit = () => {
      const ta = h('textarea', { class: 'mem-edit', rows: 3 }, m.text);
      const kind = kindSelect(m.kind, '');
      const err = h('p', { class: 'error-text', hidden: true });
      const save = h('button', { class: 'btn primary small', type: 'submit' }, 'Save');
      const form = h('form', { class: 'mem-form' }, ta, h('div', { class: 'row' }, kind, h('span', { class: 'spacer' }), button('Cancel', view, 'btn small'), save), err);
      form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        save.disabled = true;
        try {
          const updated = await api.put(`/memories/${m.id}`, { text: ta.value, kind: kind.value });
          Object.assign(m, updated || { text: ta.value, kind: kind.value });
          card.dataset.id = String(m.id); // a new text is a new memory; the old one is kept as superseded
          view();
          toast('Saved.');
        } catch (e) {
          err.hidden = false;
          err.textContent = e.status === 409 ? 'Another memory already says this.' : e.message;
        } finally { save.disabled = false; }
      });
      fill(card, form);
      ta.focus();
    };
    view();
    return card;
  };
  add.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (!newText.value.trim()) return;
    try {
      await api.post('/memories', { text: newText.value, kind: newKind.value });
      newText.value = '';
      toast('Remembered.');
      load();
    } catch (err) { toast(err.status === 501 ? 'Memories are not enabled.' : err.message, 'error'); }
  });
  search.addEventListener('input', debounce(load, 250));
  closed.addEventListener('change', load);
  load();
}

// ---- pulse --------------------------------------------------------------------------------

const PULSE_STATUS = ['active', 'completed', 'cancelled'];

function pulseView(body) {
  const all = h('input', { type: 'checkbox', id: 'pulse-all' });
  const list = h('div', { class: 'cards', id: 'pulse-list' });
  const text = h('input', { type: 'text', class: 'grow', placeholder: 'Something in progress…', 'aria-label': 'New pulse item' });
  const prio = prioSelect(5);
  const add = h('form', { class: 'add-form card row' }, text, prio, h('button', { class: 'btn primary', type: 'submit' }, 'Add'));
  body.append(header('Pulse', h('label', { class: 'inline' }, all, ' include closed')), add, list);
  const load = async () => {
    let res;
    try { res = await api.get('/pulse' + api.q({ status: all.checked ? 'all' : '' })); } catch (err) { failed(list, err, 'Pulse'); return; }
    const items = (res && res.items) || [];
    fill(list, items.length ? items.map(item) : h('p', { class: 'muted' }, 'Nothing in progress.'));
  };
  const update = async (it, change) => {
    try { Object.assign(it, await api.put(`/pulse/${it.id}`, change)); } catch (err) { toast(err.message, 'error'); }
    load();
  };
  const item = (it) => {
    const st = h('select', { 'aria-label': 'Status' }, PULSE_STATUS.map((x) => h('option', { value: x, selected: x === it.status }, x)));
    st.addEventListener('change', () => update(it, { status: st.value }));
    const pr = prioSelect(it.priority || 5);
    pr.addEventListener('change', () => update(it, { priority: Number(pr.value) }));
    const txt = h('input', { type: 'text', value: it.text, class: 'grow', 'aria-label': 'Text' });
    txt.addEventListener('change', () => update(it, { text: txt.value }));
    return h('div', { class: 'card pulse-item status-' + String(it.status).replace(/[^a-z]/g, ''), dataset: { id: String(it.id) } },
      h('div', { class: 'row' }, txt, st, pr,
        confirmButton('Delete', 'Really delete?', async () => { try { await api.del(`/pulse/${it.id}`); load(); } catch (err) { toast(err.message, 'error'); } })),
      h('p', { class: 'muted small' }, [it.source && 'from ' + it.source, it.thread && threadLabel(it.thread), 'updated ' + fmtTime(it.updated_at, true), it.completed_at && 'closed ' + fmtTime(it.completed_at, true)].filter(Boolean).join(' · ')));
  };
  add.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (!text.value.trim()) return;
    try { await api.post('/pulse', { text: text.value, priority: Number(prio.value) }); text.value = ''; load(); } catch (err) { toast(err.message, 'error'); }
  });
  all.addEventListener('change', load);
  load();
}

// prioSelect: 1 (urgent) … 10 (low).
function prioSelect(v) {
  return h('select', { 'aria-label': 'Priority', title: 'Priority: 1 urgent … 10 low' },
    Array.from({ length: 10 }, (_, i) => i + 1).map((p) => h('option', { value: p, selected: p === v }, `P${p}${p === 1 ? ' urgent' : p === 10 ? ' low' : ''}`)));
}

// ---- skills -------------------------------------------------------------------------------

function skillsView(body) {
  const list = h('div', { class: 'cards', id: 'skill-list' });
  const editor = h('div', { id: 'skill-editor' });
  body.append(header('Skills', button('New skill', () => open(null))), editor, list);
  const load = async () => {
    let res;
    try { res = await api.get('/skills'); } catch (err) { failed(list, err, 'Skills'); return; }
    const skills = (res && res.skills) || [];
    fill(list, skills.length ? skills.map((sk) => h('button', { type: 'button', class: 'card skill', on: { click: () => open(sk.name) } },
      h('strong', null, sk.name), h('span', { class: 'muted' }, sk.summary || ''),
      h('span', { class: 'muted small' }, `${fmtNum(sk.chars)} chars · ${fmtTime(sk.updated_at, true)}`))) : h('p', { class: 'muted' }, 'No skills yet.'));
  };
  const open = async (name) => {
    let sk = { name: '', content: '' };
    if (name) {
      try { sk = await api.get(`/skills/${encodeURIComponent(name)}`); } catch (err) { toast(err.message, 'error'); return; }
    }
    const nameIn = h('input', { type: 'text', value: sk.name, placeholder: 'skill-name', pattern: '[a-z0-9_-]+', required: true, readonly: !!name, 'aria-label': 'Name' });
    const ta = h('textarea', { class: 'code-edit', rows: 14, spellcheck: 'false' }, sk.content || '');
    const form = h('form', { class: 'card editor' }, h('div', { class: 'row' }, nameIn, h('span', { class: 'spacer' }),
      name ? confirmButton('Delete', 'Really delete?', async () => {
        try { await api.del(`/skills/${encodeURIComponent(name)}`); editor.replaceChildren(); load(); } catch (err) { toast(err.message, 'error'); }
      }) : null,
      button('Close', () => editor.replaceChildren(), 'btn'), h('button', { class: 'btn primary', type: 'submit' }, 'Save')),
    h('p', { class: 'help' }, 'The first line is the summary shown in the prompt\'s table of contents.'), ta);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      try {
        await api.put(`/skills/${encodeURIComponent(nameIn.value.trim())}`, { content: ta.value });
        toast('Saved.');
        load();
      } catch (err) { toast(err.message, 'error'); }
    });
    fill(editor, form);
    (name ? ta : nameIn).focus();
  };
  load();
}

// ---- tasks ----------------------------------------------------------------------------------

const WEEKDAYS = { mon: 'Mon', tue: 'Tue', wed: 'Wed', thu: 'Thu', fri: 'Fri', sat: 'Sat', sun: 'Sun' };

/** describeSchedule explains a schedule (the server's description is preferred). */
export function describeSchedule(sc) {
  if (!sc || typeof sc !== 'object') return '';
  const zone = sc.zone ? ` (${sc.zone})` : '';
  switch (sc.kind) {
    case 'once': return 'once at ' + fmtTime(sc.at, true);
    case 'daily': return `daily at ${sc.time}${zone}`;
    case 'weekly': return `every ${(sc.weekdays || []).map((d) => WEEKDAYS[d] || d).join(', ')} at ${sc.time}${zone}`;
    case 'monthly': return `monthly on day ${sc.day} at ${sc.time}${zone}`;
    case 'interval': return `every ${sc.every}` + (sc.window_start ? ` between ${sc.window_start} and ${sc.window_end}` : '') + zone;
    case 'cron': return `cron ${sc.cron}${zone}`;
    default: return JSON.stringify(sc);
  }
}

const TASK_KINDS = { reminder: 'reminder', ai_task: 'AI task', job: 'job' };

function tasksView(body) {
  const kind = h('select', { 'aria-label': 'Kind' }, h('option', { value: '' }, 'all kinds'),
    Object.entries(TASK_KINDS).filter(([k]) => k !== 'job').map(([k, l]) => h('option', { value: k }, l)));
  const finished = h('input', { type: 'checkbox' });
  const jobs = h('input', { type: 'checkbox' });
  const list = h('div', { class: 'cards', id: 'task-list' });
  body.append(header('Tasks and reminders', kind, h('label', { class: 'inline' }, finished, ' finished'),
    h('label', { class: 'inline' }, jobs, ' jobs'), button('Refresh', () => load())), list);
  const load = async () => {
    let res;
    try { res = await api.get('/tasks' + api.q({ status: finished.checked ? 'all' : '', jobs: jobs.checked })); } catch (err) { failed(list, err, 'Tasks'); return; }
    const tasks = ((res && res.tasks) || []).filter((t) => !kind.value || t.kind === kind.value);
    fill(list, tasks.length ? tasks.map(task) : h('p', { class: 'muted' }, 'Nothing scheduled.'));
  };
  const act = async (f) => { try { await f(); } catch (err) { toast(err.message, 'error'); } load(); };
  const task = (t) => {
    const id = encodeURIComponent(t.id);
    const receipts = h('div', { class: 'receipts' });
    const det = h('details', null, h('summary', null, `Runs (${t.runs || 0}${t.failures ? `, ${t.failures} failed` : ''})`), receipts);
    det.addEventListener('toggle', async () => {
      if (!det.open) return;
      fill(receipts, h('p', { class: 'muted small' }, 'Loading…'));
      try {
        const res = await api.get('/receipts' + api.q({ task: t.id, limit: 50 }));
        const rs = (res && res.receipts) || [];
        fill(receipts, rs.length ? h('ul', { class: 'plain-list' }, rs.map((r) => h('li', null,
          pill(r.outcome, 'o-' + String(r.outcome).replace(/[^a-z]/g, '')), ' ',
          [fmtTime(r.scheduled_at || r.started_at, true), r.count > 1 ? `${r.count} runs` : '', r.catch_up ? 'catch-up' : '',
            r.duration_ms ? `${fmtNum(r.duration_ms)} ms` : '', r.reason].filter(Boolean).join(' · ')))) : h('p', { class: 'muted small' }, 'No runs yet.'));
      } catch (err) { failed(receipts, err, 'Runs'); }
    });
    const live = t.status === 'active' || t.status === 'paused';
    return h('div', { class: 'card task status-' + String(t.status).replace(/[^a-z]/g, ''), dataset: { id: t.id } },
      h('div', { class: 'row' }, pill(TASK_KINDS[t.kind] || t.kind), h('span', { class: 'grow task-text' }, t.text || t.ai_prompt || t.job || ''),
        pill(t.status, t.status === 'active' ? 'ok' : ''),
        live && t.status === 'active' ? button('Pause', () => act(() => api.post(`/tasks/${id}/pause`)), 'btn small') : null,
        live && t.status === 'paused' ? button('Resume', () => act(() => api.post(`/tasks/${id}/resume`)), 'btn small') : null,
        live && t.kind !== 'job' ? confirmButton('Cancel', 'Really cancel?', () => act(() => api.del(`/tasks/${id}`))) : null),
      h('p', { class: 'muted small' }, [t.description || describeSchedule(t.schedule), t.next_run ? 'next ' + fmtTime(t.next_run, true) : '',
        t.last_run ? 'last ' + fmtTime(t.last_run, true) + (t.last_outcome ? ` (${t.last_outcome})` : '') : '', t.thread ? threadLabel(t.thread) : ''].filter(Boolean).join(' · ')),
      det);
  };
  kind.addEventListener('change', load);
  finished.addEventListener('change', load);
  jobs.addEventListener('change', load);
  load();
}

// ---- workflows --------------------------------------------------------------------------------

const cls = (v) => String(v || '').replace(/[^a-z_]/g, '');

function workflowsView(body) {
  const active = h('input', { type: 'checkbox' });
  const list = h('div', { class: 'wf-list', id: 'wf-list' });
  const detail = h('div', { class: 'wf-detail', id: 'wf-detail' });
  body.append(header('Workflows', h('label', { class: 'inline' }, active, ' unfinished only'), button('Refresh', () => load())), list, detail);
  let selected = '';
  const load = async () => {
    let res;
    try { res = await api.get('/workflows' + api.q({ active: active.checked, limit: 50 })); } catch (err) { failed(list, err, 'Workflows'); detail.replaceChildren(); return; }
    const wfs = (res && res.workflows) || [];
    if (!wfs.length) { fill(list, h('p', { class: 'muted' }, 'No workflows yet.')); detail.replaceChildren(); return; }
    fill(list, wfs.map((wf) => h('button', {
      type: 'button', class: 'chip wf' + (wf.id === selected ? ' active' : ''),
      on: { click: () => { selected = wf.id; load(); } },
    }, pill(wf.state, 'w-' + cls(wf.state)), ' ', wf.id, ' ', h('span', { class: 'muted small' }, `${(wf.nodes || []).length} nodes`))));
    const wf = wfs.find((w) => w.id === selected) || wfs[0];
    selected = wf.id;
    showWorkflow(wf);
  };
  const showWorkflow = (wf) => {
    const info = h('div', { class: 'node-info', id: 'node-info' }, h('p', { class: 'muted small' }, 'Select a node to see its objective and result.'));
    const counts = {};
    for (const n of wf.nodes || []) counts[n.state] = (counts[n.state] || 0) + 1;
    const finishedWf = ['completed', 'failed', 'cancelled', 'timeout'].includes(wf.state);
    // edges: dependencies, and nested sub-sessions under their parent
    const nodes = (wf.nodes || []).map((n) => ({ ...n, status: n.state, depends_on: [...(n.depends_on || []), ...(n.parent ? [n.parent] : [])] }));
    fill(detail,
      h('div', { class: 'row' }, h('strong', null, wf.id), pill(wf.state, 'w-' + cls(wf.state)),
        h('span', { class: 'muted small' }, [wf.root_thread && threadLabel(wf.root_thread), fmtTime(wf.created_at, true), Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(', '),
          wf.merged_from && wf.merged_from.length ? 'merged from ' + wf.merged_from.join(', ') : ''].filter(Boolean).join(' · ')),
        h('span', { class: 'spacer' }),
        finishedWf ? null : confirmButton('Cancel', 'Really cancel?', async () => {
          try {
            const res = await api.post(`/workflows/${encodeURIComponent(wf.id)}/cancel`);
            toast(`Cancelled ${((res && res.cancelled) || []).length} sub-sessions.`);
          } catch (err) { toast(err.message, 'error'); }
          load();
        })),
      h('div', { class: 'graph-wrap' }, draw(nodes, (n) => fill(info,
        h('h3', null, n.id, ' ', pill(n.state, 'n-' + cls(n.state))),
        n.objective ? h('p', null, n.objective) : null,
        h('p', { class: 'muted small' }, [n.mode && 'mode ' + n.mode, n.profile && 'profile ' + n.profile, n.waiting && 'waiting for ' + n.waiting.replace('_', ' '),
          (wf.nodes.find((x) => x.id === n.id).depends_on || []).length ? 'after ' + wf.nodes.find((x) => x.id === n.id).depends_on.join(', ') : '',
          n.parent && 'spawned by ' + n.parent, n.not_before && 'not before ' + fmtTime(n.not_before, true),
          n.started_at && 'started ' + fmtTime(n.started_at, true), n.finished_at && 'finished ' + fmtTime(n.finished_at, true),
          n.tool_calls ? `${n.tool_calls} tool calls` : '', n.usage ? `${fmtNum(n.usage.input_tokens)} → ${fmtNum(n.usage.output_tokens)} tok` : '',
          n.continuation_of && 'continues ' + n.continuation_of, n.continued_by && 'continued by ' + n.continued_by].filter(Boolean).join(' · ')),
        n.error ? h('p', { class: 'error-text' }, n.error) : null,
        n.result ? h('pre', { class: 'plain' }, n.result) : null))),
      legend(), info);
  };
  active.addEventListener('change', load);
  load();
}

function legend() {
  return h('div', { class: 'legend' }, ['pending', 'running', 'completed', 'failed', 'timeout', 'cancelled'].map((st) =>
    h('span', { class: 'legend-item status-' + st }, s('svg', { width: 10, height: 10, viewBox: '0 0 10 10', 'aria-hidden': 'true' }, s('circle', { cx: 5, cy: 5, r: 5, class: 'state-dot' })), ' ', st)));
}

// ---- world --------------------------------------------------------------------------------------

// jsonError explains a JSON.parse failure with a line and column.
export function jsonError(text) {
  try {
    const v = JSON.parse(text);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return 'The world state must be a JSON object.';
    return '';
  } catch (err) {
    const m = /position (\d+)/.exec(err.message);
    if (m) {
      const pos = Number(m[1]);
      const before = text.slice(0, pos);
      const line = before.split('\n').length;
      const col = pos - before.lastIndexOf('\n');
      return `Invalid JSON at line ${line}, column ${col}: ${err.message.replace(/ in JSON at position \d+.*$/, '')}`;
    }
    return 'Invalid JSON: ' + err.message;
  }
}

function worldView(body) {
  const ta = h('textarea', { class: 'code-edit', id: 'world-json', rows: 22, spellcheck: 'false', 'aria-label': 'World state (JSON)' });
  const msg = h('p', { class: 'form-status', id: 'world-status', role: 'status' });
  const save = h('button', { class: 'btn primary', type: 'submit', id: 'world-save' }, 'Save');
  const form = h('form', { class: 'editor' }, ta, h('div', { class: 'row' }, msg, h('span', { class: 'spacer' }),
    button('Format', () => { try { ta.value = JSON.stringify(JSON.parse(ta.value), null, 2); validate(); } catch { /* shown by validate */ } }),
    button('Reload', () => load()), save));
  body.append(header('World state'), form);
  let original = '';
  const validate = () => {
    const e = jsonError(ta.value);
    msg.className = 'form-status' + (e ? ' error-text' : '');
    msg.textContent = e || (ta.value !== original ? 'Unsaved changes.' : '');
    save.disabled = !!e || ta.value === original;
    ta.classList.toggle('invalid', !!e);
  };
  const load = async () => {
    try {
      const doc = await api.get('/world');
      original = ta.value = JSON.stringify(doc, null, 2);
      validate();
    } catch (err) { failed(body, err, 'World state'); }
  };
  ta.addEventListener('input', validate);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (jsonError(ta.value)) return;
    save.disabled = true;
    try {
      const doc = await api.put('/world', JSON.parse(ta.value));
      original = ta.value = JSON.stringify(doc, null, 2);
      validate();
      msg.textContent = 'Saved.';
    } catch (err) {
      msg.className = 'form-status error-text';
      msg.textContent = 'Not saved: ' + err.message;
      save.disabled = false;
    }
  });
  load();
}

// ---- usage ----------------------------------------------------------------------------------------

function usageView(body) {
  const out = h('div', { id: 'usage-out' });
  body.append(header('Token usage', h('span', { class: 'muted small' }, 'last 30 days, per role'), button('Refresh', () => load())), out);
  const load = async () => {
    let res;
    try { res = await api.get('/usage'); } catch (err) { failed(out, err, 'Usage'); return; }
    const rows = (res && res.usage) || [];
    if (!rows.length) { fill(out, h('p', { class: 'muted' }, 'No model calls yet.')); return; }
    const roles = new Map();
    for (const r of rows) {
      const t = roles.get(r.role) || { role: r.role, input: 0, output: 0, calls: 0, failures: 0 };
      t.input += r.input_tokens || 0; t.output += r.output_tokens || 0; t.calls += r.calls || 0; t.failures += r.failures || 0;
      roles.set(r.role, t);
    }
    const totals = [...roles.values()].sort((a, b) => (b.input + b.output) - (a.input + a.output));
    fill(out, usageChart(totals),
      h('div', { class: 'tablewrap' }, h('table', { class: 'data', id: 'usage-table' },
        h('thead', null, h('tr', null, ['Day', 'Role', 'Backend', 'Model', 'Calls', 'Failures', 'Input', 'Output'].map((c, i) => h('th', { class: i >= 4 ? 'num' : '' }, c)))),
        h('tbody', null, rows.map((r) => h('tr', null,
          h('td', null, r.day), h('td', null, r.role), h('td', null, r.backend || ''), h('td', null, r.model || ''),
          h('td', { class: 'num' }, fmtNum(r.calls)), h('td', { class: 'num' }, fmtNum(r.failures)),
          h('td', { class: 'num' }, fmtNum(r.input_tokens)), h('td', { class: 'num' }, fmtNum(r.output_tokens))))))));
  };
  load();
}

// usageChart draws one horizontal bar per role, split into input and output.
function usageChart(totals) {
  const max = Math.max(1, ...totals.map((t) => t.input + t.output));
  const rowH = 26, labelW = 110, barW = 360, numW = 120;
  const svg = s('svg', { class: 'usage-chart', viewBox: `0 0 ${labelW + barW + numW} ${totals.length * rowH + 8}`, role: 'img', 'aria-label': 'Tokens per role' });
  totals.forEach((t, i) => {
    const y = 4 + i * rowH;
    const wi = (t.input / max) * barW, wo = (t.output / max) * barW;
    svg.append(
      s('text', { x: 0, y: y + 15, class: 'chart-label' }, t.role.length > 14 ? t.role.slice(0, 13) + '…' : t.role),
      s('rect', { x: labelW, y: y + 3, width: Math.max(wi, 0.5), height: 16, rx: 3, class: 'bar-in' }),
      s('rect', { x: labelW + wi, y: y + 3, width: Math.max(wo, 0.5), height: 16, rx: 3, class: 'bar-out' }),
      s('text', { x: labelW + barW + 8, y: y + 15, class: 'chart-num' }, `${fmtNum(t.input + t.output)} tok`));
  });
  return h('figure', { class: 'chart' }, svg,
    h('figcaption', { class: 'muted small' }, h('span', { class: 'key key-in' }), ' input  ', h('span', { class: 'key key-out' }), ' output'));
}
