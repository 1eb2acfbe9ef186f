// The setup screen: the configuration forms of GET /api/v1/setup (the
// language model first, then those of extensions such as Matrix or
// Telegram). "Test & save" posts the values; the server tests them with a
// real call before saving anything.

import { h, $, fill } from './dom.js';
import * as api from './api.js';

let ctx = { info: null, onSaved: () => {} };

export function init(c) { ctx = c; }

// shown counts show() calls: only the latest one renders. A fragment-only
// navigation fires both hashchange and popstate, and a second render would
// replace the form under the user's fingers.
let shown = 0;

export async function show() {
  const body = $('setup-body');
  const me = ++shown;
  fill(body, h('p', { class: 'muted' }, 'Loading…'));
  let res;
  try {
    res = await api.get('/setup');
  } catch (err) {
    if (me !== shown) return;
    fill(body, h('h1', null, 'Setup'),
      h('p', { class: err.status === 501 ? 'muted' : 'error-text' },
        err.status === 501 ? 'Setup is not enabled in this build.' : 'Could not load the setup forms: ' + err.message));
    return;
  }
  if (me !== shown) return;
  const forms = (res && res.forms) || [];
  fill(body,
    h('h1', null, 'Setup'),
    h('p', { class: 'muted' }, res && res.configured
      ? 'Reverie is configured. You can change the settings below; new values are tested before they are saved.'
      : 'Tell Reverie which language model to use. The values are tested with a real call before they are saved.'),
    forms.length ? forms.map(formView) : h('p', { class: 'muted' }, 'Nothing to set up.'),
    h('div', { class: 'card row' },
      h('div', { class: 'grow' }, h('strong', null, 'This browser'),
        h('p', { class: 'muted small' }, 'Signing out forgets the access token here and ends the session cookie.')),
      h('button', { class: 'btn', type: 'button', id: 'sign-out', on: { click: signOut } }, 'Sign out')));
}

async function signOut() {
  await api.logout();
  location.hash = '';
  location.reload();
}

function formView(f) {
  const id = (k) => `setup-${f.id}-${k}`;
  const status = h('p', { class: 'form-status', role: 'status', 'aria-live': 'polite' });
  const fields = (f.fields || []).map((fd) => {
    const label = h('label', { for: id(fd.key) }, fd.label || fd.key, fd.required ? h('span', { class: 'req', 'aria-hidden': 'true' }, ' *') : null);
    let input;
    if (fd.kind === 'select') {
      input = h('select', { id: id(fd.key), name: fd.key, required: !!fd.required },
        (fd.options || []).map((o) => h('option', { value: o, selected: o === fd.default }, o)));
    } else {
      input = h('input', {
        id: id(fd.key), name: fd.key, required: !!fd.required,
        type: fd.kind === 'secret' ? 'password' : fd.kind === 'url' ? 'url' : 'text',
        autocomplete: fd.kind === 'secret' ? 'new-password' : 'off', spellcheck: 'false',
        placeholder: fd.kind === 'secret' && f.configured ? 'unchanged' : (fd.default || ''),
        value: fd.kind === 'secret' ? '' : (fd.default || ''),
      });
    }
    return h('div', { class: 'field' }, label, input, fd.help ? h('p', { class: 'help' }, fd.help) : null);
  });
  // A form without fields only shows what is configured and tests it.
  const testOnly = !fields.length;
  const btn = h('button', { class: 'btn primary', type: 'submit' }, testOnly ? 'Test' : 'Test & save');
  const form = h('form', { class: 'card setup-form', dataset: { form: f.id } },
    h('h2', null, f.title || f.id, f.configured ? h('span', { class: 'pill ok' }, 'configured') : h('span', { class: 'pill' }, 'not configured')),
    f.description ? h('p', { class: 'muted' }, f.description) : null,
    fields, testOnly && !f.configured ? null : h('div', { class: 'actions' }, btn), status);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const values = {};
    for (const fd of f.fields || []) {
      const el = form.elements.namedItem(fd.key);
      if (!el) continue;
      if (fd.kind === 'secret' && !el.value && f.configured) continue; // keep the saved secret
      values[fd.key] = el.value;
    }
    btn.disabled = true;
    status.className = 'form-status';
    status.textContent = 'Testing…';
    try {
      const res = await api.post(`/setup/${encodeURIComponent(f.id)}`, { values }, { timeout: 90000 });
      status.className = 'form-status ok';
      status.textContent = (res && res.message) || 'Saved.';
      if (testOnly) return;
      form.querySelector('h2 .pill').replaceWith(h('span', { class: 'pill ok' }, 'configured'));
      await ctx.onSaved();
      if (f.id === 'models') status.append(' ', h('a', { href: '#chat' }, 'Start chatting →'));
    } catch (err) {
      status.className = 'form-status error-text';
      status.textContent = testOnly ? 'The test failed: ' + err.message
        : err.status === 422 ? 'The test failed, nothing was saved: ' + err.message : 'Could not save: ' + err.message;
    } finally {
      btn.disabled = false;
      // The result is right under the button: keep it on screen (a
      // phone's form is taller than the screen).
      status.scrollIntoView({ block: 'nearest' });
    }
  });
  return form;
}
