// Unit tests of the page's JavaScript modules, run inside the real browser by
// browser_test.go on a page served with the production Content-Security-Policy
// (Trusted Types enforced). The expression evaluates to a promise of
// {passed: [names], failures: ["name: why"]}.
(async () => {
  const md = await import('/static/js/markdown.js');
  const graph = await import('/static/js/graph.js');
  const debug = await import('/static/js/debug.js');
  const passed = [];
  const failures = [];

  const renderTo = (text) => {
    const div = document.createElement('div');
    div.append(md.render(text));
    return div;
  };
  // Nothing dangerous may ever appear, whatever the input.
  const safe = (div) => {
    const bad = div.querySelector('script, img, iframe, object, embed, style, link, svg, math, form, video, audio, source, base, meta');
    if (bad) return 'dangerous element <' + bad.tagName.toLowerCase() + '>';
    for (const el of div.querySelectorAll('*')) {
      for (const a of el.attributes) {
        if (/^on/i.test(a.name)) return `event handler attribute ${a.name} on <${el.tagName.toLowerCase()}>`;
        if (a.name === 'style') return 'style attribute';
        if ((a.name === 'href' || a.name === 'src') && !/^(https?:|mailto:)/.test(a.value)) return `unsafe ${a.name}="${a.value}"`;
      }
      if (el.tagName === 'A') {
        if (!/\bnoopener\b/.test(el.rel)) return 'link without rel=noopener';
        if (el.target !== '_blank') return 'link without target=_blank';
      }
    }
    return '';
  };
  const test = (name, input, check) => {
    try {
      const div = renderTo(input);
      const why = safe(div) || (check ? check(div) : '');
      if (why) failures.push(`${name}: ${why} — rendered ${JSON.stringify(div.innerHTML)}`);
      else passed.push(name);
    } catch (err) {
      failures.push(`${name}: threw ${err && err.stack || err}`);
    }
  };
  const has = (sel, n = 1) => (div) => (div.querySelectorAll(sel).length >= n ? '' : `expected ${n}× ${sel}`);
  const text = (want) => (div) => (div.textContent.includes(want) ? '' : `text ${JSON.stringify(div.textContent)} lacks ${JSON.stringify(want)}`);
  const all = (...checks) => (div) => { for (const c of checks) { const w = c(div); if (w) return w; } return ''; };
  const none = (sel) => (div) => (div.querySelector(sel) ? `unexpected ${sel}` : '');
  const linkTo = (href) => (div) => {
    const a = div.querySelector('a');
    return a && a.getAttribute('href') === href ? '' : `expected a link to ${href}, got ${a && a.getAttribute('href')}`;
  };

  // --- injection payloads: shown as text, never as markup
  test('img onerror', '<img src=x onerror="alert(1)">', all(none('img'), text('<img src=x onerror="alert(1)">')));
  test('script tag', '<script>alert(document.cookie)</script>', all(none('script'), text('<script>alert(document.cookie)</script>')));
  test('svg onload', '<svg onload=alert(1)><circle/></svg>', all(none('svg'), text('<svg onload=alert(1)>')));
  test('iframe', '<iframe src="javascript:alert(1)"></iframe>', none('iframe'));
  test('html in a heading', '# <b onmouseover=alert(1)>hi</b>', all(has('h1'), none('b'), text('<b onmouseover=alert(1)>hi</b>')));
  test('html in a list', '- <img src=x onerror=alert(1)>\n- two', all(has('li', 2), none('img')));
  test('html in a table', '| a | b |\n|---|---|\n| <script>x</script> | <img src=x onerror=alert(1)> |', all(has('td', 2), none('script'), none('img')));
  test('html in inline code', 'run `<script>alert(1)</script>` now', all(has('code'), none('script'), text('<script>alert(1)</script>')));
  test('html in a code block', '```html\n<img src=x onerror=alert(1)>\n```', all(has('pre code'), none('img'), text('<img src=x onerror=alert(1)>')));
  test('entity stays literal', '&lt;b&gt; &amp;', text('&lt;b&gt; &amp;'));
  test('javascript link', '[click](javascript:alert(1))', all(none('a'), text('click')));
  test('javascript link, mixed case', '[click](JaVaScRiPt:alert(1))', none('a'));
  test('javascript link, tab inside', '[click](java\tscript:alert(1))', none('a'));
  test('javascript link, leading space', '[click]( javascript:alert(1))', none('a'));
  test('javascript link, entity', '[click](javascript&#58;alert(1))', none('a'));
  test('javascript link, newline', '[click](java\nscript:alert(1))', none('a[href^="java"]'));
  test('data link', '[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)', none('a'));
  test('vbscript link', '[x](vbscript:msgbox(1))', none('a'));
  test('file link', '[x](file:///etc/passwd)', none('a'));
  test('relative link', '[x](/api/v1/logout)', none('a'));
  test('protocol-relative link', '[x](//evil.example/)', none('a'));
  test('javascript autolink', '<javascript:alert(1)>', all(none('a'), text('<javascript:alert(1)>')));
  test('image is not loaded', '![cat](https://evil.example/track.png)', all(none('img'), has('a.image-link'), text('cat')));
  test('image with javascript', '![x](javascript:alert(1))', all(none('img'), none('a')));
  test('quote breaking the href', '[x](https://a.example/"onmouseover="alert(1))', (div) => {
    const a = div.querySelector('a');
    if (!a) return '';
    return a.getAttributeNames().join(',') === 'href,rel,target' ? '' : 'extra attributes ' + a.getAttributeNames();
  });
  test('link text is inline markdown, not html', '[<img src=x onerror=alert(1)>](https://example.com)', all(has('a'), none('img')));
  test('deep nesting is bounded', '>'.repeat(5000) + ' deep', text('deep'));
  test('deep list nesting is bounded', Array.from({ length: 300 }, (_, i) => ' '.repeat(i * 2) + '- x').join('\n'), has('li'));
  test('many emphasis markers', '*'.repeat(20000) + 'x', text('x'));
  test('many brackets', '['.repeat(10000) + 'x' + ']'.repeat(10000), text('x'));
  test('nul and control characters', 'a\u0000b\u0007c', text('b'));

  // --- formatting
  test('heading levels', '# One\n## Two\n###### Six', all(has('h1'), has('h2'), has('h6'), text('Six')));
  test('heading closing hashes', '## Title ##', (div) => (div.querySelector('h2').textContent === 'Title' ? '' : 'got ' + div.querySelector('h2').textContent));
  test('hashtag is not a heading', '#hashtag', all(none('h1'), text('#hashtag')));
  test('bold and italic', '**bold** and *it* and __b2__ and _i2_', all(has('strong', 2), has('em', 2)));
  test('bold italic', '***both***', all(has('strong em'), text('both')));
  test('nested emphasis', '*a **b** c*', all(has('em strong'), text('a b c')));
  test('strikethrough', '~~gone~~', has('del'));
  test('snake_case stays', 'call my_func_name now', all(none('em'), text('my_func_name')));
  test('lone star', '2 * 3 * 4', all(none('em'), text('2 * 3 * 4')));
  test('escaped star', '\\*not italic\\*', all(none('em'), text('*not italic*')));
  test('inline code keeps markup chars', '`**x**`', all(has('code'), none('strong'), text('**x**')));
  test('double backtick code', '``a ` b``', (div) => (div.querySelector('code') && div.querySelector('code').textContent === 'a ` b' ? '' : 'code span wrong'));
  test('unordered list', '- one\n- two\n- three', all(has('ul > li', 3), none('li p')));
  test('ordered list with start', '3. three\n4. four', (div) => (div.querySelector('ol') && div.querySelector('ol').getAttribute('start') === '3' ? '' : 'no ol start=3'));
  test('nested list', '- a\n  - a1\n  - a2\n- b', all(has('ul ul > li', 2), has('ul > li', 4)));
  test('list with paragraph continuation', '1. first\n   more text\n2. second', all(has('ol > li', 2), text('more text')));
  test('task list', '- [x] done\n- [ ] todo', all(has('input[type=checkbox][disabled]', 2), has('input:checked')));
  test('blockquote', '> quoted\n> more', all(has('blockquote'), text('more')));
  test('horizontal rule', 'a\n\n---\n\nb', has('hr'));
  test('line breaks', 'one\ntwo', has('p br'));
  test('fenced code with copy button', '```go\nfmt.Println("hi")\n```', all(has('.codeblock pre code.language-go'), has('.codeblock button.copy'), text('fmt.Println("hi")')));
  test('unclosed fence while streaming', 'look:\n```py\nprint(1)', all(has('pre code'), text('print(1)')));
  test('tilde fence', '~~~\ncode\n~~~', has('pre code'));
  test('code block keeps indentation', '```\n  indented\n\tx\n```', (div) => (div.querySelector('code').textContent.startsWith('  indented') ? '' : 'indentation lost'));
  test('table', '| a | b |\n|:--|--:|\n| 1 | 2 |\n| 3 | 4 |', all(has('table'), has('th', 2), has('td', 4), has('td.align-right')));
  test('https link', '[docs](https://example.com/a?b=1&c=2)', all(linkTo('https://example.com/a?b=1&c=2'), text('docs')));
  test('mailto link', '[mail](mailto:me@example.com)', linkTo('mailto:me@example.com'));
  test('autolink', '<https://example.com>', linkTo('https://example.com/'));
  test('bare url', 'see https://example.com/x. ok', all(linkTo('https://example.com/x'), text('/x. ok')));
  test('bare url in parentheses', '(https://example.com/a_(b))', linkTo('https://example.com/a_(b)'));
  test('www url', 'www.example.com', linkTo('https://www.example.com/'));
  test('link with title', '[t](https://example.com "Title")', linkTo('https://example.com/'));
  test('empty input', '', (div) => (div.childNodes.length === 0 ? '' : 'not empty'));
  test('null input', null, (div) => (div.childNodes.length === 0 ? '' : 'not empty'));
  test('windows newlines', 'a\r\n\r\nb', has('p', 2));

  // safeURL directly
  const urls = [
    ['https://example.com', 'https://example.com/'], ['http://x.y/z', 'http://x.y/z'], ['mailto:a@b.c', 'mailto:a@b.c'],
    ['javascript:alert(1)', null], [' JAVASCRIPT:alert(1)', null], ['data:,x', null], ['/relative', null], ['https://', null], ['', null],
  ];
  for (const [input, want] of urls) {
    const got = md.safeURL(input);
    if (got !== want) failures.push(`safeURL(${JSON.stringify(input)}) = ${got}, want ${want}`); else passed.push('safeURL ' + input);
  }

  // --- the workflow graph layout
  try {
    const nodes = [
      { id: 'a' }, { id: 'b', depends_on: ['a'] }, { id: 'c', depends_on: ['a'] },
      { id: 'd', depends_on: ['b', 'c', 'ghost'] }, { id: 'loop1', depends_on: ['loop2'] }, { id: 'loop2', depends_on: ['loop1'] },
    ];
    const { pos, edges } = graph.layout(nodes);
    const L = (id) => pos.get(id).layer;
    if (!(L('a') === 0 && L('b') === 1 && L('c') === 1 && L('d') === 2)) failures.push('graph layers: ' + JSON.stringify([...pos]));
    else passed.push('graph layers');
    if (edges.some(([f]) => f === 'ghost')) failures.push('graph: unknown dependency drawn'); else passed.push('graph unknown deps');
    if (pos.size !== nodes.length) failures.push('graph: a node in a cycle was lost'); else passed.push('graph cycle');
    const svg = graph.draw(nodes.map((n, i) => ({ ...n, status: ['completed', 'running', 'failed', 'pending', 'x<y', 'timeout'][i] })), () => {});
    if (svg.querySelectorAll('g.node').length !== nodes.length) failures.push('graph: drawn nodes');
    else if (!svg.querySelector('g.status-running') || !svg.querySelector('g.status-failed')) failures.push('graph: node states not drawn');
    else if (svg.querySelector('[class*="<"]')) failures.push('graph: status not sanitised');
    else passed.push('graph draw');
  } catch (err) {
    failures.push('graph threw ' + (err && err.stack || err));
  }

  // --- world-state JSON validation
  const cases = [['{"a":1}', ''], ['[]', 'must be a JSON object'], ['{"a":', 'Invalid JSON'], ['{\n  "a": 1,\n}', 'line 3']];
  for (const [input, want] of cases) {
    const got = debug.jsonError(input);
    if (want === '' ? got !== '' : !got.includes(want)) failures.push(`jsonError(${JSON.stringify(input)}) = ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
    else passed.push('jsonError ' + input);
  }
  const weekly = debug.describeSchedule({ kind: 'weekly', weekdays: ['mon', 'thu'], time: '08:30' });
  if (weekly !== 'every Mon, Thu at 08:30') failures.push('describeSchedule weekly: ' + weekly);
  else passed.push('describeSchedule');

  // --- approval cards: an outcome is final. A "pending" that arrives after
  // it (the waiting list fetched before the answer, answered after the
  // outcome's frame; or the card drawn again by a reload of the thread)
  // must not bring the Approve button back.
  try {
    const chat = await import('/static/js/chat.js');
    const card = () => document.querySelector('.msg.approval[data-approval="ap-test"]');
    const frame = (state) => ({ type: 'approval', thread: 'web:t', approval: 'ap-test', name: 'fetch_url', arguments: { url: 'http://x/' }, text: 'why', state });
    chat.showApproval(frame('pending'));
    if (!card()?.querySelector('button[data-answer="approve"]')) failures.push('approval: a pending card has no Approve button');
    chat.showApproval(frame('approved'));
    chat.showApproval(frame('pending'));
    if (card()?.querySelector('button[data-answer="approve"]')) failures.push('approval: a stale pending brought the buttons back after the outcome');
    else if (!card()?.querySelector('[data-state="approved"]')) failures.push('approval: the outcome is not shown');
    else passed.push('approval outcome is final');
    card().remove(); // drawn again (a reload of the thread): still the outcome
    chat.showApproval(frame('pending'));
    if (!card()?.querySelector('[data-state="approved"]')) failures.push('approval: a card drawn again after the outcome shows it pending');
    else passed.push('approval outcome kept when drawn again');
    card()?.remove();
  } catch (err) {
    failures.push('approval threw ' + (err && err.stack || err));
  }

  // Trusted Types: the CSP must make HTML-string sinks throw.
  try {
    document.createElement('div').innerHTML = '<b>x</b>';
    failures.push('innerHTML assignment did not throw: Trusted Types are not enforced');
  } catch {
    passed.push('trusted types enforced');
  }
  return { passed, failures };
})()
