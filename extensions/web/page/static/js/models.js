// The model picker, above the composer: the conversation's model (one of
// the model router's backends, or the main role's; stored per conversation
// with PUT /threads/{thread}/model), and, folded behind "Details" until
// asked for, the roles and their models and how much of the model's context
// window the conversation fills with its token use so far
// (GET /threads/{thread}/model).

import { h, $, fill, toast } from './dom.js';
import * as api from './api.js';

const st = {
  on: false,
  list: null,    // GET /models
  thread: '',
  model: null,   // GET /threads/{thread}/model of st.thread
  seq: 0,
};

const changed = [];
/** onChange registers fn, called when the shown conversation's model changes. */
export function onChange(fn) { changed.push(fn); }

const fmt = (n) => (n >= 10000 ? Math.round(n / 1000) + 'k' : n >= 1000 ? (n / 1000).toFixed(1) + 'k' : String(n || 0));

/** init adds the bar when the agent offers the models feature. */
export function init(info) {
  st.on = !!(info && info.features && info.features.models);
  if (!st.on || $('model-bar')) return;
  // The roles and the context window's use are folded behind "Details"
  // until asked for; the choice is remembered.
  const open = detailsOpen();
  const extra = h('span', { id: 'model-extra', class: 'model-extra', hidden: !open },
    h('details', { id: 'model-roles', class: 'model-roles' }, h('summary', null, 'Roles'), h('div', { id: 'model-roles-body', class: 'model-roles-body' })),
    h('span', { id: 'model-usage', class: 'model-usage' },
      h('meter', { id: 'model-meter', min: '0', max: '1', value: '0' }),
      h('span', { id: 'model-usage-text', class: 'muted small' })));
  const more = h('button', {
    type: 'button', id: 'model-more', class: 'btn small model-more', 'aria-controls': 'model-extra', 'aria-expanded': String(open),
    title: 'Show or hide the model roles and how full the context window is', on: { click: () => setDetails(extra.hidden) },
  }, open ? 'Less' : 'Details');
  const bar = h('div', { id: 'model-bar', class: 'model-bar' },
    h('label', { for: 'model-select', class: 'sr-only' }, 'Model for this conversation'),
    h('select', { id: 'model-select', title: 'Model for this conversation', on: { change: choose } }),
    extra, more);
  $('composer').before(bar);
  loadList();
}

const DETAILS_KEY = 'reverie.model-details';

function detailsOpen() {
  try { return localStorage.getItem(DETAILS_KEY) === 'open'; } catch { return false; /* private mode */ }
}

/** setDetails shows or folds the roles and the token meter, and remembers it. */
function setDetails(open) {
  $('model-extra').hidden = !open;
  const more = $('model-more');
  more.setAttribute('aria-expanded', String(open));
  more.textContent = open ? 'Less' : 'Details';
  try { localStorage.setItem(DETAILS_KEY, open ? 'open' : 'folded'); } catch { /* private mode */ }
}

async function loadList() {
  try {
    st.list = await api.get('/models');
  } catch (err) {
    if (err.status !== 401) $('model-usage-text').textContent = 'Models: ' + err.message;
    return;
  }
  render();
}

/** acceptsImages reports whether the conversation's model sees images (null: unknown). */
export function acceptsImages() {
  if (!st.on || !st.model) return null;
  return !!(st.model.effective && st.model.effective.vision);
}

/** current is the shown conversation's model (GET /threads/{thread}/model) or null. */
export function current() { return st.model; }

/** show loads the conversation's model and token use. */
export async function show(thread) {
  if (!st.on || !thread) return;
  const seq = ++st.seq;
  if (thread !== st.thread) { st.thread = thread; st.model = null; render(); }
  let m;
  try {
    m = await api.get(`/threads/${api.tid(thread)}/model`);
  } catch (err) {
    if (seq === st.seq && err.status !== 401) $('model-usage-text').textContent = 'Model: ' + err.message;
    return;
  }
  if (seq !== st.seq || thread !== st.thread) return;
  st.model = m;
  render();
}

/** refresh reloads the token use after a reply on thread. */
export function refresh(thread) { if (thread && thread === st.thread) show(thread); }

function label(b) {
  const name = b.name.endsWith('/' + b.model) || b.name === b.model ? b.name : `${b.name} · ${b.model}`;
  return `${name} (${fmt(b.context_size)}${b.vision ? ', images' : ''})`;
}

function render() {
  const sel = $('model-select');
  if (!sel) return;
  const backends = (st.list && st.list.backends) || [];
  const main = ((st.list && st.list.roles) || []).find((r) => r.role === 'main');
  const first = main && main.backends.length ? backends.find((b) => b.name === main.backends[0]) : null;
  const chosen = st.model ? st.model.backend : '';
  fill(sel,
    h('option', { value: '' }, first ? `Default: ${label(first)}` : 'Default (no model configured)'),
    backends.map((b) => h('option', { value: b.name }, label(b))));
  sel.value = chosen;
  sel.disabled = !st.model || backends.length === 0;

  const roles = (st.list && st.list.roles) || [];
  fill($('model-roles-body'), h('table', { class: 'kv' }, h('tbody', null,
    roles.map((r) => h('tr', { dataset: { role: r.role } },
      h('th', null, r.role),
      h('td', null, r.backends.length ? r.backends.join(' → ') : 'none', r.falls_back_to ? h('span', { class: 'muted' }, ` (as ${r.falls_back_to})`) : null))))));

  for (const fn of changed) fn();
  const m = st.model;
  const eff = m && m.effective;
  const meter = $('model-meter');
  const text = $('model-usage-text');
  if (!m || !eff) {
    meter.hidden = true;
    text.textContent = m ? 'No model is configured.' : '';
    return;
  }
  const size = eff.context_size || 0;
  meter.hidden = false;
  meter.max = Math.max(size, 1);
  meter.value = Math.min(m.context_tokens || 0, meter.max);
  meter.high = meter.max * 0.8;
  const pct = size ? Math.round(100 * (m.context_tokens || 0) / size) : 0;
  text.textContent = `${fmt(m.context_tokens)} / ${fmt(size)} tokens (${pct}%)`;
  $('model-usage').title = `Context window: the last reply read ${m.context_tokens || 0} of ${size} tokens. ` +
    `This conversation: ${m.input_tokens || 0} tokens in, ${m.output_tokens || 0} out, in ${m.calls || 0} model calls.`;
}

async function choose() {
  const sel = $('model-select');
  const thread = st.thread;
  const backend = sel.value;
  sel.disabled = true;
  try {
    st.model = await api.put(`/threads/${api.tid(thread)}/model`, { backend });
    toast(backend ? `This conversation now uses ${backend}.` : 'This conversation uses the default model again.');
  } catch (err) {
    toast('Could not change the model: ' + err.message, 'error');
  } finally {
    if (thread === st.thread) render();
  }
}
