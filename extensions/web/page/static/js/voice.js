// Voice on the page: the microphone button records a voice message
// (MediaRecorder), uploads it like an attachment (POST
// /threads/{thread}/attachments) and sends it at once; the server has it
// transcribed and answers it as typed text, and a "transcript" frame shows
// what was heard in the message's bubble. When replies are spoken (the
// conversation's voice_replies, /voice), "voice" frames name the audio of
// each part; the reply gets a play button that fetches them with the token
// and plays them in order.

import { h, s, $, toast } from './dom.js';
import * as api from './api.js';

const MAX_SECONDS = 300; // a recording stops by itself after five minutes

const st = {
  thread: () => '',
  send: null,      // (attachments) => void: sends a message with them
  recorder: null,  // the MediaRecorder while recording
  chunks: [],
  timer: null,
};

const micIcon = () => s('svg', { viewBox: '0 0 24 24', 'aria-hidden': 'true' },
  s('rect', { x: 9, y: 3, width: 6, height: 11, rx: 3 }), s('path', { d: 'M5 11a7 7 0 0014 0M12 18v3' }));

/** init adds the microphone button to the composer (when the browser can record). */
export function init({ currentThread, send }) {
  st.thread = currentThread;
  st.send = send;
  if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia || typeof MediaRecorder === 'undefined') return;
  const btn = h('button', { type: 'button', id: 'mic', class: 'icon-btn mic', 'aria-label': 'Record a voice message', 'aria-pressed': 'false', title: 'Record a voice message (click again to send it)' }, micIcon());
  btn.addEventListener('click', () => (st.recorder ? stop() : start()));
  const attachBtn = $('attach');
  if (attachBtn) attachBtn.after(btn); else $('composer').prepend(btn);
}

async function start() {
  const thread = st.thread();
  if (!thread) return;
  let stream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({ audio: true });
  } catch (err) {
    toast('The microphone is not available: ' + (err && err.message ? err.message : err), 'error');
    return;
  }
  const type = ['audio/webm;codecs=opus', 'audio/ogg;codecs=opus', 'audio/webm'].find((t) => MediaRecorder.isTypeSupported(t)) || '';
  const rec = new MediaRecorder(stream, type ? { mimeType: type } : undefined);
  st.recorder = rec;
  st.chunks = [];
  rec.addEventListener('dataavailable', (ev) => {
    if (!ev.data || !ev.data.size) return;
    st.chunks.push(ev.data);
    const btn = $('mic');
    if (btn) btn.dataset.bytes = String(st.chunks.reduce((n, c) => n + c.size, 0)); // what is recorded so far
  });
  rec.addEventListener('stop', () => {
    stream.getTracks().forEach((t) => t.stop());
    const blob = new Blob(st.chunks, { type: rec.mimeType || type || 'audio/webm' });
    st.chunks = [];
    upload(thread, blob);
  });
  rec.start(250); // a chunk every quarter second: the button shows that sound arrives
  setRecording(true);
  st.timer = setTimeout(stop, MAX_SECONDS * 1000);
}

function stop() {
  clearTimeout(st.timer);
  const rec = st.recorder;
  st.recorder = null;
  setRecording(false);
  if (rec && rec.state !== 'inactive') rec.stop();
}

function setRecording(on) {
  const btn = $('mic');
  if (!btn) return;
  btn.classList.toggle('recording', on);
  btn.setAttribute('aria-pressed', on ? 'true' : 'false');
  btn.setAttribute('aria-label', on ? 'Stop and send the voice message' : 'Record a voice message');
}

async function upload(thread, blob) {
  if (!blob.size) { toast('Nothing was recorded.', 'error'); return; }
  const ext = /ogg/.test(blob.type) ? 'ogg' : 'webm';
  try {
    const data = await new Promise((resolve, reject) => {
      const r = new FileReader();
      r.onload = () => resolve(String(r.result).replace(/^data:[^,]*,/, ''));
      r.onerror = () => reject(r.error || new Error('could not read the recording'));
      r.readAsDataURL(blob);
    });
    const res = await api.post(`/threads/${api.tid(thread)}/attachments`, { name: 'voice-message.' + ext, media_type: blob.type.split(';')[0], data }, { timeout: 120000 });
    st.send(thread, [{ kind: res.kind, path: res.path, name: 'Voice message', media_type: res.media_type }]);
  } catch (err) {
    toast('The voice message could not be sent: ' + err.message, 'error');
  }
}

/** playButton is the play button of a reply with spoken parts ({audio, part, parts}). */
export function playButton(parts) {
  const btn = h('button', { type: 'button', class: 'act play', dataset: { act: 'play', state: 'ready' }, title: 'Play the spoken reply' }, '▶ Play');
  btn.addEventListener('click', () => play(btn, parts));
  return btn;
}

async function play(btn, parts) {
  if (btn.dataset.state === 'playing') return;
  btn.dataset.state = 'loading';
  try {
    for (const p of [...parts].sort((a, b) => (a.part || 0) - (b.part || 0))) {
      const url = URL.createObjectURL(await fetchAudio(p.audio));
      try {
        const audio = new Audio(url);
        await audio.play();
        btn.dataset.state = 'playing';
        btn.textContent = '■ Playing';
        await new Promise((resolve) => { audio.onended = resolve; audio.onerror = resolve; });
      } finally {
        URL.revokeObjectURL(url);
      }
    }
    btn.dataset.state = 'played';
  } catch (err) {
    btn.dataset.state = 'failed';
    toast('The spoken reply could not be played: ' + err.message, 'error');
  }
  btn.textContent = '▶ Play';
}

// fetchAudio gets a spoken reply's file with the token (an <audio src>
// would carry only the cookie, which web.auth: token does not need).
async function fetchAudio(path) {
  const headers = {};
  const token = api.getToken();
  if (token) headers.Authorization = 'Bearer ' + token;
  const res = await fetch(path, { headers, credentials: 'same-origin' });
  if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
  return res.blob();
}
