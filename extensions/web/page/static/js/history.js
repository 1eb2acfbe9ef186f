// The History section of the debug panel: the changes to the data dir's
// versioned files (MEMORIES.txt, BASE_PROMPT.txt, the world state, skills,
// prompts), newest first; a change opens to show its diff (as text: each
// line is a text node, + and - lines coloured by class); "Restore this
// version" (clicked twice to confirm) puts every versioned file back as it
// was after that change, recorded as a new change. The list refreshes after
// a restore and whenever a history.restored event arrives (a restore from
// another tab or client).

import { h, fill, fmtTime, toast } from './dom.js';
import * as api from './api.js';

const PATHS = [
  ['', 'all files'],
  ['MEMORIES.txt', 'MEMORIES.txt'],
  ['world_state.json', 'world state'],
  ['skills', 'skills'],
  ['prompts', 'prompts'],
  ['BASE_PROMPT.txt', 'BASE_PROMPT.txt'],
];

const LIMIT = 100;

/** subject is the first line of a commit message. */
export const subject = (msg) => String(msg || '').split('\n')[0];

function fileList(files) {
  const f = files || [];
  return f.length <= 3 ? f.join(', ') : `${f.slice(0, 3).join(', ')} +${f.length - 3} more`;
}

/**
 * patchLines classifies the lines of a unified diff (git's format):
 * 'meta' (diff/index/mode lines), 'file' (---/+++ headers), 'hunk' (@@),
 * 'add', 'del', 'ctx', 'note' (\ No newline at end of file). Inside a hunk
 * a line is judged by its first character only, so a removed line that
 * reads "-- x" is 'del', not a header.
 */
export function patchLines(patch) {
  const out = [];
  let header = true;
  const lines = String(patch || '').split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  for (const line of lines) {
    let kind;
    if (line.startsWith('diff ')) { header = true; kind = 'meta'; }
    else if (line.startsWith('@@')) { header = false; kind = 'hunk'; }
    else if (header) kind = line.startsWith('--- ') || line.startsWith('+++ ') ? 'file' : 'meta';
    else if (line[0] === '+') kind = 'add';
    else if (line[0] === '-') kind = 'del';
    else if (line[0] === '\\') kind = 'note';
    else kind = 'ctx';
    out.push({ kind, text: line });
  }
  return out;
}

function renderPatch(patch) {
  return h('pre', { class: 'diff', tabindex: '0', 'aria-label': 'Changes' },
    patchLines(patch).map((l) => h('span', { class: 'd-' + l.kind }, l.text || ' ')));
}

/**
 * historyView fills body. ui holds the panel's helpers (header, button,
 * confirmButton, failed, pill) and live: whether the event stream is
 * available. It returns the cleanup function.
 */
export function historyView(body, ui) {
  const { header, button, confirmButton, failed, pill } = ui;
  const path = h('select', { id: 'hist-path', 'aria-label': 'Files' }, PATHS.map(([v, l]) => h('option', { value: v }, l)));
  const list = h('div', { class: 'hist-list', id: 'hist-list' });
  body.append(
    header('History', path, button('Refresh', () => load())),
    h('p', { class: 'muted small hist-help' }, 'Every change to MEMORIES.txt, BASE_PROMPT.txt, the world state, skills and prompts. ' +
      'Restoring a version puts every one of these files back as it was then and records that as a new change, so a restore can be undone the same way.'),
    list);

  let gen = 0;
  let stopped = false;
  const load = async () => {
    const mine = ++gen;
    let res;
    try {
      res = await api.get('/history' + api.q({ path: path.value, limit: LIMIT }));
    } catch (err) {
      if (mine === gen && !stopped) failed(list, err, 'History');
      return;
    }
    if (mine !== gen || stopped) return;
    const revs = (res && res.revisions) || [];
    const current = path.value === '' && revs.length ? revs[0].hash : '';
    fill(list, revs.length ? revs.map((r) => change(r, r.hash === current)) : h('p', { class: 'muted' }, 'No changes recorded yet.'));
  };

  const change = (r, current) => {
    const diff = h('div', { class: 'hist-body' });
    const det = h('details', { class: 'card hist', dataset: { hash: r.hash, short: r.short } },
      h('summary', null,
        h('span', { class: 'hist-subject' }, subject(r.message)),
        current ? pill('current', 'ok') : null,
        h('span', { class: 'hist-meta muted small' }, [fmtTime(r.time, true), r.short, fileList(r.files)].filter(Boolean).join(' · '))),
      diff);
    det.addEventListener('toggle', () => { if (det.open && !diff.firstChild) showDiff(r, current, diff); });
    return det;
  };

  const showDiff = async (r, current, el) => {
    fill(el, h('p', { class: 'muted small' }, 'Loading…'));
    let d;
    try { d = await api.get('/history/' + encodeURIComponent(r.hash)); } catch (err) { failed(el, err, 'Change'); return; }
    const rest = String(d.message || '').split('\n').slice(1).join('\n').trim();
    fill(el,
      rest ? h('p', { class: 'hist-msg' }, rest) : null,
      d.patch ? renderPatch(d.patch) : h('p', { class: 'muted small' }, 'No file content changed.'),
      d.truncated ? h('p', { class: 'muted small' }, 'The diff is too long to show in full; it stops here.') : null,
      h('div', { class: 'row hist-actions' },
        h('span', { class: 'muted small grow' }, current
          ? 'This is the current version.'
          : 'Put every versioned file back as it was after this change (recorded as a new change).'),
        current ? null : confirmButton('Restore this version', 'Restore? Click again', () => restore(r))));
  };

  const restore = async (r) => {
    try {
      const res = await api.post(`/history/${encodeURIComponent(r.hash)}/restore`, undefined, { timeout: 120000 });
      toast(res && res.revision
        ? `Restored ${r.short} as ${res.revision.short}.`
        : `Nothing to restore: the files already match ${r.short}.`);
    } catch (err) {
      toast('Not restored: ' + err.message, 'error');
    }
    path.value = '';
    load();
  };

  let close = null;
  if (ui.live) {
    close = api.events('history.', {
      onEvent: () => { if (!stopped) load(); },
      onState: (st) => { if (st === 'closed' && close) { close(); close = null; } },
    });
  }
  path.addEventListener('change', load);
  load();
  return () => { stopped = true; gen++; if (close) close(); close = null; };
}
