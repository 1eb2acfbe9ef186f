// The conversation drawer of narrow screens (the sidebar on a phone).
//
// The menu button opens it; the scrim, Escape, the back button, choosing a
// conversation, starting a new one and focusing the composer close it.
// Opening it on a narrow screen adds a history entry (the same address,
// state {drawer: true}) so that the back button closes it instead of
// leaving the conversation; navigation events never open it, so it cannot
// come back over the composer (going forward onto that entry leaves it
// closed).

import { $ } from './dom.js';

const NARROW = '(max-width: 760px)';

let swallowPop = false; // the popstate of our own history.back()
let openedAt = '';      // the address the drawer was opened on

export function isOpen() { return $('app').classList.contains('sidebar-open'); }

function set(open) {
  $('app').classList.toggle('sidebar-open', open);
  $('scrim').hidden = !open;
  $('menu').setAttribute('aria-expanded', String(open));
}

const onDrawerEntry = () => !!(history.state && history.state.drawer);

/** open shows the drawer (a history entry on narrow screens). */
export function open() {
  if (isOpen()) return;
  set(true);
  openedAt = location.href;
  if (window.matchMedia(NARROW).matches && !onDrawerEntry()) history.pushState({ drawer: true }, '', location.href);
  const first = $('sidebar').querySelector('a.thread.active, a.thread, button');
  if (first) first.focus({ preventScroll: true });
}

/** close hides the drawer and drops its history entry. */
export function close() {
  if (!isOpen()) return;
  set(false);
  if (onDrawerEntry()) {
    swallowPop = true;
    history.back();
  }
}

export function toggle() { if (isOpen()) close(); else open(); }

/**
 * navigate closes the drawer and goes to href (a fragment): the drawer's
 * history entry is replaced by it, so that back then returns to where the
 * drawer was opened; without one, href is pushed. The caller shows the
 * view (pushState and replaceState fire no event).
 */
export function navigate(href) {
  set(false);
  if (onDrawerEntry()) history.replaceState(null, '', href);
  else history.pushState(null, '', href);
}

/**
 * onPopState is called by the router before routing; true means the event
 * only closed the drawer (back pressed while it was open, or our own
 * close()) and there is nothing to route. A link followed while the
 * drawer is open (a tab) closes it and is routed.
 */
export function onPopState() {
  if (swallowPop) {
    swallowPop = false;
    return true;
  }
  if (isOpen()) {
    set(false);
    return location.href === openedAt; // else a link (a tab) was followed: route it
  }
  return false;
}

/** init wires the button, the scrim, Escape, the composer and resizes. */
export function init() {
  $('menu').addEventListener('click', toggle);
  $('scrim').addEventListener('click', close);
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && isOpen()) {
      ev.preventDefault();
      close();
      $('menu').focus({ preventScroll: true });
    }
  });
  $('input').addEventListener('focus', close);
  window.matchMedia(NARROW).addEventListener('change', (ev) => { if (!ev.matches && isOpen()) close(); });
}
