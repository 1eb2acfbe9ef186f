// A small, safe Markdown renderer for model output.
//
// It builds DOM nodes directly: every piece of text becomes a text node, so
// model output is never parsed as HTML (raw HTML such as <img onerror> or
// <script> is shown as the literal text it is). Links are created only for
// absolute http:, https: and mailto: URLs, with rel="noopener noreferrer
// nofollow" and target="_blank"; images are rendered as links (nothing is
// loaded from model-chosen addresses). Supported: ATX headings, paragraphs
// (single newlines are line breaks, as in chat), **bold**, *italic*,
// ~~strike~~, `inline code`, fenced code blocks (``` or ~~~, with a copy
// button; an unclosed fence while streaming renders as code), block
// quotes, nested bullet and numbered lists, task-list boxes, pipe tables,
// horizontal rules, autolinks and bare URLs, backslash escapes.
//
// render(text) → DocumentFragment. It is total: any input renders, nesting
// is bounded, and the work is roughly linear in the input.

const MAX_DEPTH = 12;
const SAFE_SCHEMES = new Set(['http:', 'https:', 'mailto:']);
const PUNCT = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';

/** safeURL returns the normalised URL if it is absolute http(s)/mailto, else null. */
export function safeURL(raw) {
  const str = String(raw ?? '').trim();
  if (!str || str.length > 4096) return null;
  let u;
  try { u = new URL(str); } catch { return null; }
  if (!SAFE_SCHEMES.has(u.protocol)) return null;
  if (u.protocol !== 'mailto:' && !u.hostname) return null;
  return u.href;
}

/** render turns Markdown text into a DocumentFragment. */
export function render(text, doc = document) {
  const frag = doc.createDocumentFragment();
  const src = String(text ?? '').replace(/\r\n?/g, '\n').replace(/\t/g, '    ').replace(/\u0000/g, '\uFFFD');
  blocks(src.split('\n'), frag, doc, 0);
  return frag;
}

// ---- blocks ---------------------------------------------------------------

const RE_BLANK = /^\s*$/;
const RE_FENCE = /^ {0,3}(`{3,}|~{3,})[ ]*([^\s`]*)[^`]*$/;
const RE_HEADING = /^ {0,3}(#{1,6})(?:[ ]+(.*))?$/;
const RE_HR = /^ {0,3}(?:(?:-[ ]*){3,}|(?:\*[ ]*){3,}|(?:_[ ]*){3,})$/;
const RE_QUOTE = /^ {0,3}>[ ]?(.*)$/;
const RE_ITEM = /^( *)([-*+]|\d{1,9}[.)])(?:[ ]+(.*))?$/;
const RE_TABLE_SEP = /^ *\|? *:?-+:? *(?:\| *:?-+:? *)*\|? *$/;

function indentOf(line) {
  let n = 0;
  while (n < line.length && line[n] === ' ') n++;
  return n;
}

function listItem(line) {
  const m = RE_ITEM.exec(line);
  if (!m) return null;
  const ordered = /\d/.test(m[2][0]);
  const content = m[3] ?? '';
  return {
    indent: m[1].length,
    ordered,
    start: ordered ? parseInt(m[2], 10) : 1,
    content,
    // column where the item's content starts (for continuation lines)
    col: m[1].length + m[2].length + 1,
  };
}

function startsBlock(line) {
  return RE_FENCE.test(line) || RE_HEADING.test(line) || RE_HR.test(line) || RE_QUOTE.test(line) || !!listItem(line);
}

function blocks(lines, parent, doc, depth) {
  let i = 0;
  const n = lines.length;
  while (i < n) {
    const line = lines[i];
    if (RE_BLANK.test(line)) { i++; continue; }
    if (depth >= MAX_DEPTH) {
      parent.append(para(lines.slice(i).join('\n'), doc, depth));
      return;
    }
    let m;
    if ((m = RE_FENCE.exec(line))) {
      const fence = m[1];
      const lang = m[2] || '';
      const indent = indentOf(line);
      const body = [];
      i++;
      while (i < n && !isClosingFence(lines[i], fence)) {
        body.push(stripIndent(lines[i], indent));
        i++;
      }
      i++; // the closing fence (or past the end while streaming)
      parent.append(codeBlock(body.join('\n'), lang, doc));
      continue;
    }
    if ((m = RE_HEADING.exec(line))) {
      const el = doc.createElement('h' + m[1].length);
      let title = (m[2] ?? '').trimEnd();
      const closing = /(^|[ ])#+$/.exec(title); // optional closing hashes
      if (closing) title = title.slice(0, closing.index).trimEnd();
      inline(title, el, doc, depth);
      parent.append(el);
      i++;
      continue;
    }
    if (RE_HR.test(line)) {
      parent.append(doc.createElement('hr'));
      i++;
      continue;
    }
    if (RE_QUOTE.test(line)) {
      const inner = [];
      while (i < n && (m = RE_QUOTE.exec(lines[i]))) { inner.push(m[1]); i++; }
      const q = doc.createElement('blockquote');
      blocks(inner, q, doc, depth + 1);
      parent.append(q);
      continue;
    }
    const item = listItem(line);
    if (item) {
      i = list(lines, i, item, parent, doc, depth);
      continue;
    }
    if (line.includes('|') && i + 1 < n && RE_TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes('-')) {
      i = table(lines, i, parent, doc, depth);
      continue;
    }
    // paragraph: until a blank line or the start of another block
    const buf = [line.trim()];
    i++;
    while (i < n && !RE_BLANK.test(lines[i]) && !startsBlock(lines[i])) { buf.push(lines[i].trim()); i++; }
    parent.append(para(buf.join('\n'), doc, depth));
  }
}

function isClosingFence(line, fence) {
  const t = line.trim();
  return t.length >= fence.length && t[0] === fence[0] && [...t].every((c) => c === fence[0]) && indentOf(line) < 4;
}

function stripIndent(line, n) {
  let k = 0;
  while (k < n && line[k] === ' ') k++;
  return line.slice(k);
}

function para(text, doc, depth) {
  const p = doc.createElement('p');
  inline(text, p, doc, depth);
  return p;
}

function codeBlock(code, lang, doc) {
  const wrap = doc.createElement('div');
  wrap.className = 'codeblock';
  const bar = doc.createElement('div');
  bar.className = 'codebar';
  const label = doc.createElement('span');
  label.className = 'lang';
  label.textContent = lang.slice(0, 40);
  const btn = doc.createElement('button');
  btn.type = 'button';
  btn.className = 'copy';
  btn.textContent = 'Copy';
  btn.setAttribute('aria-label', 'Copy code');
  bar.append(label, btn);
  const pre = doc.createElement('pre');
  const c = doc.createElement('code');
  if (/^[\w+#.-]{1,40}$/.test(lang)) c.className = 'language-' + lang;
  c.textContent = code;
  pre.append(c);
  wrap.append(bar, pre);
  return wrap;
}

// list parses a list starting at lines[i] and returns the index after it.
function list(lines, i, first, parent, doc, depth) {
  const n = lines.length;
  const el = doc.createElement(first.ordered ? 'ol' : 'ul');
  if (first.ordered && first.start !== 1) el.setAttribute('start', String(first.start));
  let cur = null; // lines of the current item
  let col = 0;
  const items = [];
  while (i < n) {
    const line = lines[i];
    const it = listItem(line);
    if (it && it.ordered === first.ordered && it.indent <= first.indent + 1 && it.indent + 1 >= first.indent) {
      cur = [it.content];
      col = it.col;
      items.push(cur);
      i++;
      continue;
    }
    if (it && it.indent < first.indent) break; // an outer list continues
    if (it && it.indent <= first.indent + 1) break; // another kind of list
    if (RE_BLANK.test(line)) {
      // a blank line continues the list only if more of it follows
      let j = i + 1;
      while (j < n && RE_BLANK.test(lines[j])) j++;
      if (j >= n) { i = j; break; }
      const next = listItem(lines[j]);
      const sameList = next && next.ordered === first.ordered && Math.abs(next.indent - first.indent) <= 1;
      if (!sameList && indentOf(lines[j]) <= first.indent) break;
      cur.push('');
      i++;
      continue;
    }
    const ind = indentOf(line);
    if (ind > first.indent) {
      cur.push(stripIndent(line, Math.min(ind, col)));
      i++;
      continue;
    }
    // lazy continuation of the item's paragraph
    if (!startsBlock(line) && cur.length && !RE_BLANK.test(cur[cur.length - 1])) {
      cur.push(line.trim());
      i++;
      continue;
    }
    break;
  }
  for (const itemLines of items) {
    const li = doc.createElement('li');
    const task = /^\[([ xX])\][ ]+/.exec(itemLines[0]);
    if (task) {
      const box = doc.createElement('input');
      box.type = 'checkbox';
      box.disabled = true;
      box.checked = task[1] !== ' ';
      li.className = 'task';
      li.append(box);
      itemLines[0] = itemLines[0].slice(task[0].length);
    }
    blocks(itemLines, li, doc, depth + 1);
    // tight items: unwrap a single paragraph
    if (li.childElementCount === (task ? 2 : 1) && li.lastElementChild.tagName === 'P') {
      const p = li.lastElementChild;
      p.replaceWith(...p.childNodes);
    }
    el.append(li);
  }
  parent.append(el);
  return i;
}

function splitRow(line) {
  let t = line.trim();
  if (t.startsWith('|')) t = t.slice(1);
  if (t.endsWith('|') && !t.endsWith('\\|')) t = t.slice(0, -1);
  const cells = [];
  let cell = '';
  let code = false;
  for (let k = 0; k < t.length; k++) {
    const c = t[k];
    if (c === '\\' && t[k + 1] === '|') { cell += '|'; k++; continue; }
    if (c === '`') code = !code;
    if (c === '|' && !code) { cells.push(cell.trim()); cell = ''; continue; }
    cell += c;
  }
  cells.push(cell.trim());
  return cells;
}

function table(lines, i, parent, doc, depth) {
  const head = splitRow(lines[i]);
  const aligns = splitRow(lines[i + 1]).map((c) => {
    const l = c.startsWith(':'), r = c.endsWith(':');
    return l && r ? 'center' : r ? 'right' : l ? 'left' : '';
  });
  const wrap = doc.createElement('div');
  wrap.className = 'tablewrap';
  const tbl = doc.createElement('table');
  const thead = doc.createElement('thead');
  const tr = doc.createElement('tr');
  head.forEach((c, k) => tr.append(cell('th', c, aligns[k], doc, depth)));
  thead.append(tr);
  tbl.append(thead);
  const tbody = doc.createElement('tbody');
  i += 2;
  while (i < lines.length && lines[i].includes('|') && !RE_BLANK.test(lines[i])) {
    const row = doc.createElement('tr');
    const cells = splitRow(lines[i]);
    for (let k = 0; k < head.length; k++) row.append(cell('td', cells[k] ?? '', aligns[k], doc, depth));
    tbody.append(row);
    i++;
  }
  tbl.append(tbody);
  wrap.append(tbl);
  parent.append(wrap);
  return i;
}

function cell(tag, text, align, doc, depth) {
  const c = doc.createElement(tag);
  if (align) c.className = 'align-' + align;
  inline(text, c, doc, depth + 1);
  return c;
}

// ---- inline ---------------------------------------------------------------

// sticky: matched at lastIndex without copying the rest of the text
const RE_AUTOLINK = /<((?:https?:\/\/|mailto:)[^\s<>]{1,4096})>/iy;
const RE_BARE_URL = /(?:https?:\/\/|www\.)[^\s<>"]{1,4096}/iy;

function isWordChar(c) {
  return !!c && /[\p{L}\p{N}]/u.test(c);
}

// inline renders inline Markdown of s into parent.
function inline(s, parent, doc, depth) {
  let buf = '';
  const flush = () => {
    if (buf) { parent.append(doc.createTextNode(buf)); buf = ''; }
  };
  if (depth >= MAX_DEPTH) { parent.append(doc.createTextNode(s)); return; }
  // delimiters known to have no closing occurrence after some position
  const noClose = new Map();
  const findClose = (delim, from, ok) => {
    const lim = noClose.get(delim);
    if (lim !== undefined && from >= lim) return -1;
    let j = s.indexOf(delim, from);
    while (j !== -1 && !ok(j)) j = s.indexOf(delim, j + 1);
    if (j === -1) noClose.set(delim, Math.min(from, lim ?? Infinity));
    return j;
  };
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (c === '\\' && i + 1 < s.length && PUNCT.includes(s[i + 1])) {
      buf += s[i + 1];
      i += 2;
      continue;
    }
    if (c === '\n') {
      flush();
      parent.append(doc.createElement('br'));
      i++;
      continue;
    }
    if (c === '`') {
      let k = i;
      while (s[k] === '`') k++;
      const run = s.slice(i, k);
      const j = findClose(run, k, (j) => s[j - 1] !== '`' && s[j + run.length] !== '`');
      if (j === -1) { buf += run; i = k; continue; }
      let code = s.slice(k, j).replace(/\n/g, ' ');
      if (code.length > 2 && code[0] === ' ' && code[code.length - 1] === ' ' && code.trim()) code = code.slice(1, -1);
      flush();
      const el = doc.createElement('code');
      el.textContent = code;
      parent.append(el);
      i = j + run.length;
      continue;
    }
    if ((c === '[' || (c === '!' && s[i + 1] === '[')) && depth < MAX_DEPTH) {
      const image = c === '!';
      const l = parseLink(s, image ? i + 1 : i);
      if (l) {
        flush();
        const href = safeURL(l.url);
        if (href) {
          const a = link(href, doc);
          if (image) {
            a.className = 'image-link';
            a.textContent = l.text ? `image: ${l.text}` : 'image';
          } else {
            inline(l.text, a, doc, depth + 1);
          }
          parent.append(a);
        } else {
          // unsafe or relative target: keep the label, drop the link
          const span = doc.createElement('span');
          span.className = 'dead-link';
          span.title = 'link removed (only http, https and mailto links are allowed)';
          inline(l.text || l.url, span, doc, depth + 1);
          parent.append(span);
        }
        i = l.end;
        continue;
      }
    }
    if (c === '<') {
      RE_AUTOLINK.lastIndex = i;
      const m = RE_AUTOLINK.exec(s);
      const href = m && safeURL(m[1]);
      if (href) {
        flush();
        const a = link(href, doc);
        a.textContent = m[1];
        parent.append(a);
        i += m[0].length;
        continue;
      }
    }
    if ((c === 'h' || c === 'H' || c === 'w' || c === 'W') && !isWordChar(s[i - 1])) {
      RE_BARE_URL.lastIndex = i;
      const m = RE_BARE_URL.exec(s);
      if (m) {
        let url = trimURL(m[0]);
        const href = safeURL(/^www\./i.test(url) ? 'https://' + url : url);
        if (href) {
          flush();
          const a = link(href, doc);
          a.textContent = url;
          parent.append(a);
          i += url.length;
          continue;
        }
      }
    }
    if (c === '*' || c === '_' || c === '~') {
      let k = i;
      while (s[k] === c) k++;
      const runLen = k - i;
      if (c === '~' && runLen !== 2) { buf += s.slice(i, k); i = k; continue; }
      const len = c === '~' ? 2 : Math.min(runLen, 3);
      const delim = c.repeat(len);
      const next = s[i + len];
      const opens = next !== undefined && !/\s/.test(next) && !(c === '_' && isWordChar(s[i - 1]));
      if (opens && runLen <= 3) {
        const j = findClose(delim, i + len + 1, (j) =>
          !/\s/.test(s[j - 1]) && s[j + len] !== c && s[j - 1] !== c &&
          !(c === '_' && isWordChar(s[j + len])));
        if (j !== -1) {
          flush();
          let el;
          if (c === '~') el = doc.createElement('del');
          else if (len === 1) el = doc.createElement('em');
          else if (len === 2) el = doc.createElement('strong');
          else { el = doc.createElement('strong'); const em = doc.createElement('em'); el.append(em); }
          inline(s.slice(i + len, j), el.firstChild && len === 3 ? el.firstChild : el, doc, depth + 1);
          parent.append(el);
          i = j + len;
          continue;
        }
      }
      buf += s.slice(i, k);
      i = k;
      continue;
    }
    buf += c;
    i++;
  }
  flush();
}

function link(href, doc) {
  const a = doc.createElement('a');
  a.href = href;
  a.rel = 'noopener noreferrer nofollow';
  a.target = '_blank';
  return a;
}

// trimURL drops trailing punctuation that usually ends a sentence, and a
// closing parenthesis without an opening one inside the URL.
function trimURL(u) {
  for (;;) {
    const last = u[u.length - 1];
    if ('.,;:!?\'"*_~'.includes(last)) { u = u.slice(0, -1); continue; }
    if (last === ')') {
      const open = (u.match(/\(/g) || []).length;
      const close = (u.match(/\)/g) || []).length;
      if (close > open) { u = u.slice(0, -1); continue; }
    }
    return u;
  }
}

// parseLink parses [text](url "title") at s[i] === '['. It returns
// {text, url, end} or null.
function parseLink(s, i) {
  let depth = 0;
  let j = i;
  const limit = Math.min(s.length, i + 2000);
  for (; j < limit; j++) {
    const c = s[j];
    if (c === '\\') { j++; continue; }
    if (c === '[') depth++;
    else if (c === ']') { depth--; if (depth === 0) break; }
    else if (c === '\n' && s[j + 1] === '\n') return null;
  }
  if (j >= limit || s[j] !== ']' || s[j + 1] !== '(') return null;
  const text = s.slice(i + 1, j);
  let k = j + 2;
  while (s[k] === ' ') k++;
  let url = '';
  if (s[k] === '<') {
    const e = s.indexOf('>', k);
    if (e === -1) return null;
    url = s.slice(k + 1, e);
    k = e + 1;
  } else {
    let p = 0;
    const start = k;
    const ulimit = Math.min(s.length, k + 4100);
    for (; k < ulimit; k++) {
      const c = s[k];
      if (c === '\\') { k++; continue; }
      if (c === '(') p++;
      else if (c === ')') { if (p === 0) break; p--; }
      else if (c === ' ' || c === '\n') break;
    }
    url = s.slice(start, k);
  }
  while (s[k] === ' ') k++;
  if (s[k] === '"' || s[k] === "'") {
    const q = s[k];
    const e = s.indexOf(q, k + 1);
    if (e === -1) return null;
    k = e + 1;
    while (s[k] === ' ') k++;
  }
  if (s[k] !== ')') return null;
  return { text, url, end: k + 1 };
}

/**
 * installCopy makes the copy buttons of code blocks under root work (one
 * delegated listener).
 */
export function installCopy(root) {
  root.addEventListener('click', async (ev) => {
    const btn = ev.target instanceof Element ? ev.target.closest('.codeblock .copy') : null;
    if (!btn) return;
    const code = btn.closest('.codeblock').querySelector('code').textContent;
    let ok = false;
    try {
      await navigator.clipboard.writeText(code);
      ok = true;
    } catch {
      // No clipboard API (plain http on a LAN address): select the text so
      // that the user can copy it.
      const sel = window.getSelection();
      const range = document.createRange();
      range.selectNodeContents(btn.closest('.codeblock').querySelector('code'));
      sel.removeAllRanges();
      sel.addRange(range);
      try { ok = document.execCommand('copy'); } catch { ok = false; }
    }
    btn.textContent = ok ? 'Copied' : 'Select + copy';
    setTimeout(() => { btn.textContent = 'Copy'; }, 1500);
  });
}
