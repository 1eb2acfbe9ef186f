// Entry module: sign-in, the view router (#chat/<thread>, #debug/<section>,
// #setup) and the connection indicator.

import { $, fill } from './dom.js';
import * as api from './api.js';
import * as chat from './chat.js';
import * as debug from './debug.js';
import * as setup from './setup.js';
import * as drawer from './drawer.js';
import * as models from './models.js';
import * as assistant from './assistant.js';

const VIEWS = ['loading', 'login', 'chat', 'assistant', 'debug', 'setup'];
let started = false;
let conn = null;
let info = null;

function showView(name) {
  for (const v of VIEWS) $('view-' + v).hidden = v !== name;
  $('app').dataset.view = name;
  for (const t of ['chat', 'assistant', 'debug', 'setup']) {
    const tab = $('tab-' + t);
    if (t === name) tab.setAttribute('aria-current', 'page'); else tab.removeAttribute('aria-current');
  }
  if (name !== 'debug') debug.hide();
  if (name !== 'assistant') assistant.hide();
}

function parseHash() {
  let hash = location.hash.replace(/^#\/?/, '');
  const slash = hash.indexOf('/');
  const view = slash === -1 ? hash : hash.slice(0, slash);
  const rest = slash === -1 ? '' : hash.slice(slash + 1);
  let arg = rest;
  try { arg = decodeURIComponent(rest); } catch { /* keep raw */ }
  return { view, arg };
}

function route() {
  if (!started) return;
  const { view, arg } = parseHash();
  switch (view) {
    case 'debug':
      showView('debug');
      debug.show(arg);
      break;
    case 'assistant':
      showView('assistant');
      assistant.show(arg);
      break;
    case 'setup':
      showView('setup');
      setup.show();
      break;
    case 'archive':
      showView('chat');
      chat.showSegment(arg);
      break;
    default:
      showView('chat');
      chat.showThread(arg);
  }
}

function setConn(state) {
  // first connection: a mark for measuring the page's start-up
  if (state === 'online' && !performance.getEntriesByName('reverie-online').length) performance.mark('reverie-online');
  const el = $('conn');
  el.dataset.state = state;
  el.querySelector('.conn-label').textContent = state === 'online' ? 'online' : state === 'connecting' ? 'connecting…' : 'offline';
  el.title = state === 'online' ? 'Connected' : 'Not connected: retrying automatically (click to retry now)';
}

function showLogin(message) {
  showView('login');
  const err = $('login-error');
  err.hidden = !message;
  err.textContent = message || '';
  $('login-token').focus();
}

async function onLogin(ev) {
  ev.preventDefault();
  const input = $('login-token');
  const t = input.value.trim();
  if (!t) return;
  const btn = ev.submitter || $('login-form').querySelector('button');
  btn.disabled = true;
  try {
    await api.login(t);
    input.value = '';
    if (started) {
      conn.retryNow();
      route();
    } else {
      await boot();
    }
  } catch (err) {
    showLogin(err.status === 401 ? 'That token is not right.' : 'Could not sign in: ' + err.message);
  } finally {
    btn.disabled = false;
  }
}

async function boot() {
  showView('loading');
  if (api.getToken()) {
    try {
      await api.login(api.getToken());
    } catch (err) {
      if (err.status === 401) { showLogin('The saved token is not valid any more. Paste the current one.'); return; }
      if (err.status === 0) { bootError(err); return; }
      // other answers (authentication switched off, …): carry on
    }
  }
  try {
    info = await api.get('/info');
  } catch (err) {
    if (err.status === 401) { showLogin(); return; }
    bootError(err);
    return;
  }
  start();
}

function bootError(err) {
  showView('loading');
  const v = $('view-loading');
  v.removeAttribute('aria-busy');
  const retry = document.createElement('button');
  retry.className = 'btn';
  retry.type = 'button';
  retry.textContent = 'Try again';
  retry.addEventListener('click', boot);
  const p = document.createElement('p');
  p.className = 'error-text';
  p.textContent = 'Reverie cannot be reached: ' + err.message;
  fill(v, p, retry);
}

function start() {
  started = true;
  conn = new api.Chat();
  conn.onState = setConn;
  conn.reauth = async () => { if (api.getToken()) await api.login(api.getToken()); };
  chat.onThreadShown(models.show);
  models.init(info);
  chat.initChat({ chat: conn, info });
  const onFrame = conn.onFrame;
  conn.onFrame = (f) => {
    onFrame(f);
    if (f.type === 'done' || f.type === 'error') models.refresh(f.thread);
  };
  debug.init({ info });
  assistant.init({ info });
  setup.init({ info, onSaved: refreshInfo });
  $('tab-setup').hidden = info.features && info.features.setup === false;
  $('conn').addEventListener('click', () => conn.retryNow());
  // Fragment navigation fires both hashchange and popstate (and back after
  // a pushState fires popstate, with or without hashchange): route on
  // popstate only, once per navigation.
  window.addEventListener('popstate', () => { if (!drawer.onPopState()) route(); });
  document.addEventListener('visibilitychange', () => { if (!document.hidden) conn.retryNow(); });
  window.addEventListener('online', () => conn.retryNow());
  conn.connect();
  if (info.models_configured === false && !location.hash) history.replaceState(null, '', '#setup');
  Promise.all([chat.refreshThreads(), chat.refreshDeleted()]).finally(route);
}

async function refreshInfo() {
  try {
    info = await api.get('/info');
    chat.setInfo(info);
  } catch { /* keep the old one */ }
}

// With web.auth: none only the setup form and approval answers answer 401:
// they always need the token.
api.onUnauthorized(() => showLogin(info && info.auth === 'none'
  ? 'This needs the access token, even with authentication off (changing the setup, answering an approval request): paste the one Reverie printed at its first start (kept in secrets/web_token in the data directory).'
  : 'Please sign in again.'));
$('login-form').addEventListener('submit', onLogin);
api.initToken();
boot();
