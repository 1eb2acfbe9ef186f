// "Your assistant": what Reverie keeps about you and does by itself, in
// plain views (Debug keeps the raw ones): memories (search, add, edit,
// forget, the earlier versions of each), the pulse (its working list),
// reminders and tasks (create, pause, resume, delete, next run, last
// receipts), skills (read, edit, delete) and dreams (the nightly
// consolidation's reports, and revert).

import { h, $, fill, fmtTime, fmtRelative, debounce, toast } from './dom.js';
import * as api from './api.js';
import { currentThread } from './chat.js';
import { render } from './markdown.js';
import { threadLabel } from './titles.js';

const SECTIONS = [
  { id: 'memories', label: 'Memories', feature: 'memories', view: memoriesView },
  { id: 'pulse', label: 'Pulse', feature: 'pulse', view: pulseView },
  { id: 'tasks', label: 'Reminders & tasks', feature: 'tasks', view: tasksView },
  { id: 'skills', label: 'Skills', feature: 'skills', view: skillsView },
  { id: 'dreams', label: 'Dreams', feature: 'dreams', view: dreamsView },
];

let info = null;
let shown = '';
let gen = 0; // renders of older show() calls stop when it moves on

const enabled = (sec) => !(info && info.features && info.features[sec.feature] === false);

export function init(c) {
  info = c.info;
  fill($('assistant-nav'), SECTIONS.map((sec) => h('a', {
    href: '#assistant/' + sec.id, id: 'as-' + sec.id, class: 'debug-link' + (enabled(sec) ? '' : ' off'),
  }, sec.label)));
}

/** show displays a section (default: memories). */
export function show(id) {
  const sec = SECTIONS.find((x) => x.id === id) || SECTIONS[0];
  if (shown === sec.id) return;
  shown = sec.id;
  const me = ++gen;
  for (const x of SECTIONS) {
    const link = $('as-' + x.id);
    if (x === sec) link.setAttribute('aria-current', 'page'); else link.removeAttribute('aria-current');
  }
  const body = $('assistant-body');
  body.replaceChildren();
  body.dataset.section = sec.id;
  if (!enabled(sec)) {
    body.append(h('h2', null, sec.label), h('p', { class: 'muted' }, `${sec.label} is not enabled in this build or configuration.`));
    return;
  }
  sec.view(body, () => me === gen);
}

/** hide forgets the shown section (it is rebuilt when shown again). */
export function hide() { shown = ''; gen++; }

// ---- small parts --------------------------------------------------------------

function head(title, intro, ...tools) {
  return [h('div', { class: 'section-head' }, h('h2', null, title), h('div', { class: 'section-tools' }, tools)),
    intro ? h('p', { class: 'muted small intro' }, intro) : null];
}

const btn = (label, on, cls = 'btn small') => h('button', { type: 'button', class: cls, on: { click: on } }, label);

// confirmBtn asks once ("Click again to …") before running fn.
function confirmBtn(label, question, fn, cls = 'btn small danger') {
  let armed = false;
  let timer = 0;
  const b = h('button', { type: 'button', class: cls }, label);
  b.addEventListener('click', async () => {
    if (!armed) {
      armed = true;
      b.textContent = question;
      timer = setTimeout(() => { armed = false; b.textContent = label; }, 4000);
      return;
    }
    clearTimeout(timer);
    b.disabled = true;
    try { await fn(); } finally { b.disabled = false; armed = false; b.textContent = label; }
  });
  return b;
}

function failedText(err, what) { return h('p', { class: 'error-text' }, `Could not ${what}: ${err.message}`); }

async function run(what, fn) {
  try { return await fn(); } catch (err) { toast(`Could not ${what}: ${err.message}`, 'error'); throw err; }
}

const pill = (text, cls = '') => h('span', { class: 'pill ' + cls }, text);

// ---- memories -------------------------------------------------------------------

const KINDS = ['fact', 'preference', 'episode', 'procedure', 'opinion'];

// What the list shows: what Reverie knows about you first (facts,
// preferences, procedures, opinions); the conversation's episodes — every
// message and reply, stored automatically — behind the filter.
const SHOW = [
  { value: 'facts', label: 'Facts', kinds: KINDS.filter((k) => k !== 'episode') },
  { value: 'episodes', label: 'Episodes', kinds: ['episode'] },
  { value: 'all', label: 'All', kinds: [] },
];

function memoriesView(body, live) {
  const search = h('input', { type: 'search', id: 'mem-search', placeholder: 'Search memories…', 'aria-label': 'Search memories' });
  const show = h('select', { id: 'mem-show', 'aria-label': 'Show' }, SHOW.map((x) => h('option', { value: x.value }, x.label)));
  const list = h('ul', { id: 'mem-list', class: 'as-list' });
  const text = h('textarea', { id: 'mem-new', rows: 2, placeholder: 'Something Reverie should remember about you', 'aria-label': 'New memory' });
  const kind = h('select', { id: 'mem-new-kind', 'aria-label': 'Kind' }, KINDS.map((k) => h('option', { value: k }, k)));
  const add = h('form', { class: 'card as-add', id: 'mem-add' }, text, h('div', { class: 'row' }, kind, h('button', { class: 'btn primary small', type: 'submit' }, 'Remember')));
  add.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (!text.value.trim()) return;
    await run('remember it', () => api.post('/memories', { text: text.value.trim(), kind: kind.value }));
    text.value = '';
    load();
  });
  fill(body, head('Memories', 'What Reverie remembers about you. Search, correct (the earlier text is kept as history) or forget for good. ' +
    'Facts come first; every message and reply is also kept as a conversation episode: choose Episodes to see them.', show, search), add, list);
  const load = async () => {
    const q = search.value.trim();
    const kinds = (SHOW.find((x) => x.value === show.value) || SHOW[0]).kinds;
    const kind = kinds.length ? kinds.join(',') : undefined;
    let res;
    try {
      res = await api.get('/memories' + api.q(q ? { q, kind, limit: 50 } : { kind, limit: 100 }));
    } catch (err) {
      if (live()) fill(list, failedText(err, 'load the memories'));
      return;
    }
    if (!live()) return;
    let ms = (res && res.memories) || [];
    // Everything: what it knows first, then the episodes (each part in the
    // server's order: newest first, or best match first).
    if (!kind) ms = [...ms.filter((m) => m.kind !== 'episode'), ...ms.filter((m) => m.kind === 'episode')];
    fill(list, ms.length ? ms.map((m) => memoryItem(m, load)) : h('li', { class: 'muted' }, q ? 'Nothing found.' : 'No memories yet.'));
  };
  search.addEventListener('input', debounce(load, 250));
  show.addEventListener('change', load);
  load();
}

// memoryText shows a memory's text: an episode (a message or a reply, often
// Markdown) rendered, anything else as written.
function memoryText(m) {
  if (m.kind !== 'episode') return h('p', { class: 'as-text' }, m.text);
  const who = m.speaker || m.role || '';
  return h('div', { class: 'as-text as-episode md' }, who ? h('div', { class: 'muted small as-speaker' }, who) : null, render(m.text));
}

function memoryItem(m, reload) {
  const li = h('li', { class: 'card as-item', dataset: { id: m.id } });
  const view = () => fill(li,
    memoryText(m),
    h('div', { class: 'as-meta' }, pill(m.kind), h('span', { class: 'muted small' }, `${m.source} · ${fmtRelative(m.created_at)}` + (m.access_count ? ` · recalled ${m.access_count}×` : ''))),
    h('div', { class: 'row as-actions' },
      btn('Edit', edit),
      historyToggle(m),
      confirmBtn('Forget', 'Click again to forget', async () => {
        await run('forget it', () => api.del(`/memories/${m.id}`));
        li.remove();
        toast('Forgotten.');
      })));
  const edit = () => {
    const ta = h('textarea', { rows: 3, class: 'as-edit', 'aria-label': 'Memory text' });
    ta.value = m.text;
    const kind = h('select', { 'aria-label': 'Kind' }, KINDS.map((k) => h('option', { value: k, selected: k === m.kind }, k)));
    fill(li, ta, h('div', { class: 'row as-actions' }, kind,
      btn('Save', async () => {
        await run('save it', () => api.put(`/memories/${m.id}`, { text: ta.value.trim(), kind: kind.value }));
        reload();
      }, 'btn primary small'),
      btn('Cancel', view)));
    ta.focus();
  };
  view();
  return li;
}

function historyToggle(m) {
  const d = h('details', { class: 'as-history' }, h('summary', { class: 'btn small' }, 'History'));
  d.addEventListener('toggle', async () => {
    if (!d.open || d.dataset.loaded) return;
    d.dataset.loaded = '1';
    let res;
    try {
      res = await api.get(`/memories/${m.id}/history`);
    } catch (err) {
      d.append(failedText(err, 'load its history'));
      return;
    }
    const vs = (res && res.memories) || [];
    d.append(vs.length
      ? h('ol', { class: 'as-versions' }, vs.map((v) => h('li', null, h('span', { class: 'as-old' }, v.text), ' ',
        h('span', { class: 'muted small' }, `until ${fmtTime(v.valid_to, true)} · ${v.source}`))))
      : h('p', { class: 'muted small' }, 'No earlier versions: this is the text as first remembered.'));
  });
  return d;
}

// ---- pulse ------------------------------------------------------------------------

function pulseView(body, live) {
  const status = h('select', { id: 'pulse-status', 'aria-label': 'Show' },
    ['active', 'completed', 'all'].map((s) => h('option', { value: s }, s)));
  const list = h('ul', { id: 'pulse-list', class: 'as-list' });
  const text = h('input', { id: 'pulse-new', placeholder: 'Something to keep working on', 'aria-label': 'New pulse item' });
  const prio = h('select', { id: 'pulse-new-prio', 'aria-label': 'Priority' }, [1, 2, 3, 4, 5].map((p) => h('option', { value: p, selected: p === 3 }, 'priority ' + p)));
  const add = h('form', { class: 'card row as-add', id: 'pulse-add' }, text, prio, h('button', { class: 'btn primary small', type: 'submit' }, 'Add'));
  add.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (!text.value.trim()) return;
    await run('add it', () => api.post('/pulse', { text: text.value.trim(), priority: Number(prio.value) }));
    text.value = '';
    load();
  });
  fill(body, head('Pulse', 'Reverie\'s working list: what is in progress. It reviews it regularly and brings up what needs you.', status), add, list);
  const load = async () => {
    let res;
    try { res = await api.get('/pulse' + api.q({ status: status.value })); } catch (err) {
      if (live()) fill(list, failedText(err, 'load the pulse'));
      return;
    }
    if (!live()) return;
    const items = (res && res.items) || [];
    fill(list, items.length ? items.map((it) => h('li', { class: 'card as-item', dataset: { id: it.id } },
      h('p', { class: 'as-text' + (it.status !== 'active' ? ' as-done' : '') }, it.text),
      h('div', { class: 'as-meta' }, pill('priority ' + it.priority), it.status !== 'active' ? pill(it.status, 'ok') : null,
        h('span', { class: 'muted small' }, fmtRelative(it.updated_at))),
      h('div', { class: 'row as-actions' },
        it.status === 'active'
          ? btn('Done', async () => { await run('update it', () => api.put(`/pulse/${it.id}`, { status: 'completed' })); load(); })
          : btn('Reopen', async () => { await run('update it', () => api.put(`/pulse/${it.id}`, { status: 'active' })); load(); }),
        confirmBtn('Delete', 'Click again to delete', async () => { await run('delete it', () => api.del(`/pulse/${it.id}`)); load(); }))))
      : h('li', { class: 'muted' }, 'Nothing here.'));
  };
  status.addEventListener('change', load);
  load();
}

// ---- reminders and tasks ------------------------------------------------------------

// What each kind does, in the words the page shows.
const TASK_KINDS = {
  reminder: { label: 'Reminder', does: 'Sends you the text as “Reminder: …”, as is: no model call.' },
  ai: { label: 'AI task', does: 'Runs the text as a prompt with the model when due and sends you the answer.' },
};
const kindLabel = (k) => k === 'ai_task' ? TASK_KINDS.ai.label : k === 'reminder' ? TASK_KINDS.reminder.label : k;

function tasksView(body, live) {
  const list = h('ul', { id: 'task-list', class: 'as-list' });
  fill(body, head('Reminders & tasks', 'Reminders Reverie sends you and prompts it runs on a schedule. Each run leaves a receipt; delivered reminders stay listed here.'),
    taskForm(() => load()), list);
  const load = async () => {
    let res;
    // Done one-time reminders stay listed, with when and where they went.
    try { res = await api.get('/tasks' + api.q({ status: 'active,paused,done' })); } catch (err) {
      if (live()) fill(list, failedText(err, 'load the tasks'));
      return;
    }
    if (!live()) return;
    const ts = (res && res.tasks) || [];
    // Pending first (in next-run order), then the delivered ones, newest first.
    const pending = ts.filter((t) => t.status !== 'done');
    const done = ts.filter((t) => t.status === 'done').sort((a, b) => String(b.last_run || '').localeCompare(String(a.last_run || '')));
    fill(list, ts.length ? [...pending, ...done].map((t) => taskItem(t, load)) : h('li', { class: 'muted' }, 'No reminders or tasks.'));
  };
  load();
}

// where says where a task set now will be delivered.
function where() {
  const th = currentThread();
  return th ? { thread: th, text: `To “${threadLabel(th)}”.` } : { thread: undefined, text: 'To the conversation you wrote in last.' };
}

function taskForm(reload) {
  const text = h('input', { id: 'task-text', placeholder: 'Remind me to…', 'aria-label': 'Reminder text' });
  const kind = h('select', { id: 'task-kind', 'aria-label': 'Kind' }, Object.entries(TASK_KINDS).map(([v, k]) => h('option', { value: v }, k.label)));
  const hint = h('p', { id: 'task-kind-hint', class: 'muted small' });
  const sched = h('select', { id: 'task-schedule', 'aria-label': 'When' },
    h('option', { value: 'once' }, 'once at'), h('option', { value: 'in' }, 'once in'), h('option', { value: 'daily' }, 'every day at'), h('option', { value: 'interval' }, 'every'));
  const at = h('input', { id: 'task-at', type: 'datetime-local', 'aria-label': 'Date and time' });
  const time = h('input', { id: 'task-time', type: 'time', value: '09:00', 'aria-label': 'Time', hidden: true });
  const every = h('input', { id: 'task-every', placeholder: '2h, 90m', 'aria-label': 'Interval', hidden: true, size: 6 });
  const after = h('input', { id: 'task-in', placeholder: '20m, 2h, 1d', 'aria-label': 'After', hidden: true, size: 6 });
  const sync = () => {
    at.hidden = sched.value !== 'once'; time.hidden = sched.value !== 'daily'; every.hidden = sched.value !== 'interval'; after.hidden = sched.value !== 'in';
    const ai = kind.value === 'ai';
    text.placeholder = ai ? 'A prompt to run, e.g. Summarise the news on…' : 'Remind me to…';
    text.setAttribute('aria-label', ai ? 'Prompt' : 'Reminder text');
    hint.textContent = TASK_KINDS[kind.value].does + ' ' + where().text;
  };
  sched.addEventListener('change', sync);
  kind.addEventListener('change', sync);
  text.addEventListener('focus', sync); // the open conversation may have changed
  sync();
  const form = h('form', { class: 'card as-add', id: 'task-add' }, h('div', { class: 'row' }, kind, text), hint,
    h('div', { class: 'row' }, sched, at, after, time, every, h('button', { class: 'btn primary small', type: 'submit' }, 'Create')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const t = text.value.trim();
    if (!t) return;
    const schedule = { kind: sched.value };
    if (sched.value === 'once') {
      if (!at.value) { toast('Choose the date and time.', 'error'); return; }
      schedule.at = new Date(at.value).toISOString();
    } else if (sched.value === 'in') {
      const ms = parseAfter(after.value);
      if (!ms) { toast('Say after how long, e.g. 20m, 2h or 1d.', 'error'); return; }
      schedule.kind = 'once';
      schedule.at = new Date(Date.now() + ms).toISOString();
    } else if (sched.value === 'daily') {
      schedule.time = time.value;
    } else {
      schedule.every = every.value.trim();
    }
    const { thread } = where();
    const body = kind.value === 'ai' ? { ai_prompt: t, thread, schedule } : { text: t, thread, schedule };
    await run('create it', () => api.post('/tasks', body));
    text.value = '';
    toast('Created.');
    reload();
  });
  return form;
}

// parseAfter reads "20m", "2h", "1d", "90s" (or "1h30m") into milliseconds (0: unreadable).
function parseAfter(v) {
  const text = String(v).trim().toLowerCase().replace(/\s+/g, '');
  if (!/^(\d+(s|m|h|d))+$/.test(text)) return 0;
  const unit = { s: 1e3, m: 6e4, h: 36e5, d: 864e5 };
  let ms = 0;
  for (const [, n, u] of text.matchAll(/(\d+)([smhd])/g)) ms += Number(n) * unit[u];
  return ms;
}

// deliveredTo names where a run went: the conversation and its channel.
function deliveredTo(thread) {
  if (!thread) return '';
  const ch = String(thread).split(':')[0];
  const channel = ch === 'cli' ? 'terminal' : ch === 'web' ? 'web page' : ch.charAt(0).toUpperCase() + ch.slice(1);
  return `“${threadLabel(thread)}” (${channel})`;
}

function taskItem(t, reload) {
  const receipts = h('details', { class: 'as-receipts' }, h('summary', { class: 'btn small' }, 'Last runs'));
  receipts.addEventListener('toggle', async () => {
    if (!receipts.open || receipts.dataset.loaded) return;
    receipts.dataset.loaded = '1';
    let res;
    try { res = await api.get('/receipts' + api.q({ task: t.id, limit: 5 })); } catch (err) { receipts.append(failedText(err, 'load the runs')); return; }
    const rs = (res && res.receipts) || [];
    receipts.append(rs.length
      ? h('ul', { class: 'as-versions' }, rs.map((r) => h('li', { dataset: { outcome: r.outcome } },
        pill(r.outcome, r.outcome === 'fired' ? 'ok' : r.outcome === 'failed' ? 'err' : ''), ' ',
        h('span', { class: 'small' }, fmtTime(r.started_at || r.scheduled_at, true)),
        r.delivered_to ? h('span', { class: 'small' }, ' → ' + deliveredTo(r.delivered_to)) : null,
        r.reason && !r.delivered_to ? h('span', { class: 'muted small' }, ' · ' + r.reason) : null)))
      : h('p', { class: 'muted small' }, 'It has not run yet.'));
  });
  const paused = t.status === 'paused';
  const done = t.status === 'done';
  const ai = t.kind === 'ai_task';
  let next;
  if (done) {
    next = t.last_outcome === 'fired'
      ? `Delivered ${fmtTime(t.last_run, true)}${t.delivered_to ? ' to ' + deliveredTo(t.delivered_to) : ''}.`
      : `Ran ${fmtTime(t.last_run, true)}${t.last_outcome ? ' (' + t.last_outcome + ')' : ''}.`;
  } else {
    next = t.next_run && !paused ? `Next: ${fmtTime(t.next_run, true)}` : paused ? 'Paused: it will not run.' : 'No next run.';
  }
  const target = t.thread && t.thread !== 'system' ? deliveredTo(t.thread) : ai ? 'the assistant (a background task)' : 'the conversation you wrote in last';
  return h('li', { class: 'card as-item', dataset: { id: t.id, status: t.status, kind: t.kind } },
    h('p', { class: 'as-text' }, t.text || t.ai_prompt || t.job || t.id),
    h('div', { class: 'as-meta' }, pill(kindLabel(t.kind), ai ? 'subtle' : ''), paused ? pill('paused', 'warn') : null, done ? pill('delivered', 'ok') : null,
      h('span', { class: 'muted small', title: ai ? TASK_KINDS.ai.does : TASK_KINDS.reminder.does }, ai ? 'runs a prompt' : 'sent as is, no model'),
      h('span', { class: 'muted small' }, '· ' + t.description)),
    h('p', { class: 'small as-next' }, next,
      !done && t.last_run ? h('span', { class: 'muted' }, ` · last ${fmtRelative(t.last_run)}${t.last_outcome ? ' (' + t.last_outcome + ')' : ''}`) : null),
    done ? null : h('p', { class: 'muted small as-where' }, 'To ' + target + '.'),
    h('div', { class: 'row as-actions' },
      done ? null : paused
        ? btn('Resume', async () => { await run('resume it', () => api.post(`/tasks/${encodeURIComponent(t.id)}/resume`, {})); reload(); })
        : btn('Pause', async () => { await run('pause it', () => api.post(`/tasks/${encodeURIComponent(t.id)}/pause`, {})); reload(); }),
      receipts,
      done ? null : confirmBtn('Delete', 'Click again to delete', async () => { await run('delete it', () => api.del(`/tasks/${encodeURIComponent(t.id)}`)); reload(); })));
}

// ---- skills -------------------------------------------------------------------------

function skillsView(body, live) {
  const list = h('ul', { id: 'skill-list', class: 'as-list' });
  const name = h('input', { id: 'skill-name', placeholder: 'name (letters, digits, -)', 'aria-label': 'Skill name' });
  const content = h('textarea', { id: 'skill-content', rows: 3, placeholder: 'How to do it, step by step', 'aria-label': 'Skill content' });
  const add = h('form', { class: 'card as-add', id: 'skill-add' }, name, content, h('div', { class: 'row' }, h('button', { class: 'btn primary small', type: 'submit' }, 'Save skill')));
  add.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (!name.value.trim() || !content.value.trim()) return;
    await run('save it', () => api.put(`/skills/${encodeURIComponent(name.value.trim())}`, { content: content.value }));
    name.value = ''; content.value = '';
    load();
  });
  fill(body, head('Skills', 'Procedures Reverie learned (or you taught it); it reads the matching one before acting.'), add, list);
  const load = async () => {
    let res;
    try { res = await api.get('/skills'); } catch (err) {
      if (live()) fill(list, failedText(err, 'load the skills'));
      return;
    }
    if (!live()) return;
    const ss = (res && res.skills) || [];
    fill(list, ss.length ? ss.map((s) => skillItem(s, load)) : h('li', { class: 'muted' }, 'No skills yet.'));
  };
  load();
}

function skillItem(s, reload) {
  const li = h('li', { class: 'card as-item', dataset: { name: s.name } });
  const view = () => fill(li,
    h('p', { class: 'as-text' }, h('strong', null, s.name), ' — ', s.summary),
    h('div', { class: 'as-meta' }, h('span', { class: 'muted small' }, `${s.chars} characters · ${fmtRelative(s.updated_at)}`)),
    h('div', { class: 'row as-actions' }, btn('Open', open),
      confirmBtn('Delete', 'Click again to delete', async () => { await run('delete it', () => api.del(`/skills/${encodeURIComponent(s.name)}`)); reload(); })));
  const open = async () => {
    let full;
    try { full = await api.get(`/skills/${encodeURIComponent(s.name)}`); } catch (err) { li.append(failedText(err, 'open it')); return; }
    const ta = h('textarea', { rows: 10, class: 'as-edit mono', 'aria-label': 'Skill content' });
    ta.value = full.content || '';
    fill(li, h('p', { class: 'as-text' }, h('strong', null, s.name)), ta, h('div', { class: 'row as-actions' },
      btn('Save', async () => { await run('save it', () => api.put(`/skills/${encodeURIComponent(s.name)}`, { content: ta.value })); toast('Saved.'); reload(); }, 'btn primary small'),
      btn('Close', view)));
  };
  view();
  return li;
}

// ---- dreams --------------------------------------------------------------------------

function dreamsView(body, live) {
  const list = h('ul', { id: 'dream-list', class: 'as-list' });
  fill(body, head('Dreams', 'Each night Reverie consolidates its memories, pulse and skills. Every dream can be reverted; /dream starts one now.'), list);
  const load = async () => {
    let res;
    try { res = await api.get('/dreams' + api.q({ limit: 20 })); } catch (err) {
      if (live()) fill(list, failedText(err, 'load the dreams'));
      return;
    }
    if (!live()) return;
    const ds = (res && res.dreams) || [];
    fill(list, ds.length ? ds.map((d) => h('li', { class: 'card as-item', dataset: { id: d.id } },
      h('p', { class: 'as-text' }, h('strong', null, `Dream #${d.id}`), ' ', h('span', { class: 'muted small' }, `${fmtTime(d.started, true)} · ${d.trigger} · ${d.model_calls} model call(s)`),
        d.reverted ? pill('reverted', 'warn') : null),
      h('ul', { class: 'as-components' }, d.components.map((c) => h('li', { dataset: { status: c.status } },
        h('strong', null, c.name), ' ', pill(c.status, c.status === 'ok' ? 'ok' : c.status === 'failed' ? 'err' : ''), c.detail ? h('span', { class: 'muted small' }, ' ' + c.detail) : null,
        c.lines.length ? h('ul', { class: 'as-lines' }, c.lines.map((l) => h('li', { class: 'small' }, l))) : null))),
      d.reverted ? null : d.changes === 0 ? h('p', { class: 'muted small as-nothing' }, 'Nothing was changed, so there is nothing to undo.')
        : h('div', { class: 'row as-actions' }, confirmBtn('Revert', 'Click again to revert', async () => {
        const r = await run('revert it', () => api.post(`/dreams/${d.id}/revert`, {}));
        toast(`Reverted: ${r.undone} change(s) put back.`);
        load();
      }))))
      : h('li', { class: 'muted' }, 'No dreams yet. The first runs tonight, or type /dream in the chat.'));
  };
  load();
}
