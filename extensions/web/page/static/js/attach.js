// Attachments of the composer. Files and images dropped on the
// conversation, pasted into the box or chosen with the paperclip are
// uploaded at once (POST /threads/{thread}/attachments: the file
// base64-encoded in a JSON body) into the workspace and shown as chips
// above the box; the message names them, and its bubble shows them as
// chips (also after a reload: GET …/messages lists a message's
// attachments). When the conversation's model cannot see images, a note
// under the chips says so. Files given while no conversation is shown (an
// archived one is read-only; the page is still starting) wait in the tray
// and upload into the next conversation shown, to go with its first
// message.

import { h, s, $, fill, toast } from './dom.js';
import * as api from './api.js';
import * as models from './models.js';

const st = {
  thread: () => '',
  pending: [], // {name, size, kind, media_type, path, state: waiting | uploading | ready | failed, error, thread, file}
};

// icon is a small picture or page outline (no emoji: not every system has the font).
const icon = (kind) => s('svg', { class: 'att-icon', viewBox: '0 0 24 24', 'aria-hidden': 'true' }, kind === 'image'
  ? [s('rect', { x: 3, y: 5, width: 18, height: 14, rx: 2 }), s('path', { d: 'M3 16l5-5 4 4 3-3 6 6' })]
  : [s('path', { d: 'M6 3h8l4 4v14H6z' }), s('path', { d: 'M14 3v4h4' })]);

const fmtSize = (n) => (n >= 1 << 20 ? (n / (1 << 20)).toFixed(1) + ' MB' : n >= 1024 ? Math.round(n / 1024) + ' KB' : n + ' bytes');

/** init adds the paperclip, the tray and the drop and paste handlers. */
export function init({ currentThread }) {
  st.thread = currentThread;
  models.onChange(render);
  const file = h('input', { type: 'file', id: 'attach-input', multiple: true, hidden: true, tabindex: '-1' });
  const btn = h('button', { type: 'button', id: 'attach', class: 'icon-btn attach', 'aria-label': 'Attach files', title: 'Attach files or images (you can also drop or paste them)' },
    s('svg', { viewBox: '0 0 24 24', 'aria-hidden': 'true' }, s('path', { d: 'M21 11.5l-8.6 8.6a5 5 0 01-7.1-7.1l8.6-8.6a3.5 3.5 0 015 5l-8.6 8.6a2 2 0 01-2.8-2.8l7.9-7.9' })));
  $('composer').prepend(btn, file);
  $('composer').before(h('div', { id: 'attach-tray', class: 'attach-tray', hidden: true }));
  btn.addEventListener('click', () => file.click());
  file.addEventListener('change', () => { add(file.files); file.value = ''; });
  const conv = document.querySelector('.conversation');
  conv.addEventListener('dragover', (ev) => {
    if (!ev.dataTransfer || ![...ev.dataTransfer.types].includes('Files')) return;
    ev.preventDefault();
    conv.classList.add('dropping');
  });
  conv.addEventListener('dragleave', (ev) => { if (ev.target === conv || !conv.contains(ev.relatedTarget)) conv.classList.remove('dropping'); });
  conv.addEventListener('drop', (ev) => {
    conv.classList.remove('dropping');
    if (!ev.dataTransfer || !ev.dataTransfer.files.length) return;
    ev.preventDefault();
    add(ev.dataTransfer.files);
  });
  $('input').addEventListener('paste', (ev) => {
    const files = ev.clipboardData ? [...ev.clipboardData.files] : [];
    if (!files.length) return;
    ev.preventDefault(); // a pasted image would otherwise paste nothing, or its name
    add(files);
  });
}

/**
 * add uploads files to the shown conversation; with none shown they wait
 * for the next one (see claim).
 */
export function add(files) {
  const thread = st.thread();
  for (const f of files) {
    if (st.pending.length >= 10) { toast('At most 10 attachments per message.', 'error'); break; }
    const p = { name: f.name || 'pasted', size: f.size, kind: /^image\//.test(f.type) ? 'image' : 'file', media_type: f.type, path: '', state: 'waiting', error: '', thread, file: f };
    st.pending.push(p);
    if (thread) upload(p);
  }
  render();
}

async function upload(p) {
  const f = p.file;
  p.file = null;
  p.state = 'uploading';
  try {
    const data = await base64(f);
    const res = await api.post(`/threads/${api.tid(p.thread)}/attachments`, { name: p.name, media_type: f.type || '', data }, { timeout: 120000 });
    Object.assign(p, { path: res.path, kind: res.kind, media_type: res.media_type, name: res.name, state: 'ready' });
  } catch (err) {
    p.state = 'failed';
    p.error = err.message;
  }
  render();
}

function base64(f) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result).replace(/^data:[^,]*,/, ''));
    r.onerror = () => reject(r.error || new Error('could not read the file'));
    r.readAsDataURL(f);
  });
}

/**
 * take returns the ready attachments for the message being sent and
 * empties the tray; null while an upload is still running (the user is
 * told).
 */
export function take() {
  if (st.pending.some((p) => p.state === 'uploading' || p.state === 'waiting')) {
    toast('Wait a moment: an attachment is still uploading.');
    return null;
  }
  const ready = st.pending.filter((p) => p.state === 'ready' && p.thread === st.thread())
    .map((p) => ({ kind: p.kind, path: p.path, name: p.name, media_type: p.media_type }));
  st.pending = [];
  render();
  return ready;
}

/**
 * shown is called with each conversation shown: the files waiting for a
 * conversation upload into it; those of other conversations are dropped.
 */
export function shown(thread) {
  for (const p of st.pending) {
    if (p.thread || p.state !== 'waiting') continue;
    p.thread = thread;
    upload(p);
  }
  st.pending = st.pending.filter((p) => p.thread === thread);
  render();
}

/** render redraws the tray (and the model's image note). */
export function render() {
  const tray = $('attach-tray');
  if (!tray) return;
  tray.hidden = st.pending.length === 0;
  const images = st.pending.some((p) => p.kind === 'image' && p.state !== 'failed');
  const blind = images && models.acceptsImages() === false;
  fill(tray,
    h('div', { class: 'chips' }, st.pending.map((p) => chip(p, () => {
      st.pending = st.pending.filter((x) => x !== p);
      render();
    }))),
    blind ? h('p', { id: 'attach-note', class: 'attach-note small' },
      'This conversation\'s model cannot see images: it gets each image\'s name and where it is saved. Choose a model that accepts images below to show it the picture.') : null);
}

function chip(p, remove) {
  return h('span', { class: 'att-chip ' + p.kind + (p.state === 'failed' ? ' failed' : ''), dataset: { state: p.state, kind: p.kind }, title: p.error || p.name },
    icon(p.kind),
    h('span', { class: 'att-name' }, p.name),
    h('span', { class: 'att-size muted' }, p.state === 'waiting' ? 'waiting for a conversation…' : p.state === 'uploading' ? 'uploading…' : p.state === 'failed' ? 'failed: ' + p.error : fmtSize(p.size)),
    remove ? h('button', { type: 'button', class: 'att-remove', 'aria-label': 'Remove ' + p.name, on: { click: remove } }, '×') : null);
}

/** chips shows a message's attachments (in its bubble). */
export function chips(atts) {
  return h('div', { class: 'chips msg-atts' }, atts.map((a) =>
    h('span', { class: 'att-chip ' + a.kind, dataset: { kind: a.kind }, title: 'Saved in the workspace as ' + a.path },
      icon(a.kind),
      h('span', { class: 'att-name' }, a.name || a.path))));
}
