// Conversation titles: threads are labelled by their title everywhere (the
// chat, notifications, the debug panel), never by their raw id, which stays
// available as the element's tooltip.

import * as api from './api.js';

const titles = new Map(); // thread id → title
let loaded = null;

/** setTitles records the titles of a thread list (GET /threads). */
export function setTitles(list) {
  for (const t of list || []) if (t && t.id) titles.set(t.id, t.title || '');
}

/** loadTitles fetches every thread's title once (for the debug panel). */
export function loadTitles() {
  if (!loaded) {
    loaded = Promise.all([
      api.get('/threads' + api.q({ limit: 1000, include_sub_sessions: true })).then((r) => setTitles(r && r.threads)),
      api.get('/threads' + api.q({ limit: 1000, archived: true })).then((r) => setTitles(r && r.threads)),
    ]).catch(() => { loaded = null; });
  }
  return loaded;
}

/** threadLabel is the title of a thread, or a readable fallback. */
export function threadLabel(id) {
  if (!id) return '';
  const t = titles.get(id);
  if (t) return t;
  if (id.startsWith('sub_')) return 'background worker ' + id.slice(4, 12);
  const colon = id.indexOf(':');
  const channel = colon > 0 ? id.slice(0, colon) : '';
  if (channel === 'web') return 'Untitled conversation';
  return channel ? channel[0].toUpperCase() + channel.slice(1) + ' conversation' : 'Conversation';
}
