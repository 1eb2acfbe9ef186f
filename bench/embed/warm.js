// Fills server.js's cache ahead of an evaluation: every distinct turn text
// and question of a LongMemEval-format file (a JSON array of questions with
// haystack_sessions) or a LoCoMo-format file, sent in batches of 32, which
// the model embeds at a lower cost per text than the evaluation's one text
// per request. The vectors are the same either way (each text is its own
// row of the sparse batch); the evaluation then finds them in the cache.
//
//   node warm.js FILE [--url http://127.0.0.1:8931/v1] [--batch 32]
"use strict";

const fs = require("fs");

function flag(name, def) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : def;
}

function texts(data) {
  const out = [];
  const add = (t) => typeof t === "string" && out.push(t);
  for (const item of data) {
    if (Array.isArray(item.haystack_sessions)) {
      add(item.question);
      for (const s of item.haystack_sessions) for (const turn of s) add(turn.content);
      continue;
    }
    // LoCoMo: conversation.session_N is a list of {speaker, text}.
    for (const [k, v] of Object.entries(item.conversation || {})) {
      if (/^session_\d+$/.test(k) && Array.isArray(v)) for (const turn of v) add(turn.text);
    }
    for (const q of item.qa || []) add(q.question);
  }
  return [...new Set(out)];
}

async function main() {
  const file = process.argv[2];
  if (!file) throw new Error("usage: node warm.js FILE [--url URL] [--batch N]");
  const url = flag("--url", "http://127.0.0.1:8931/v1") + "/embeddings";
  const batch = Number(flag("--batch", "32"));
  const all = texts(JSON.parse(fs.readFileSync(file, "utf8")));
  const t0 = Date.now();
  for (let i = 0; i < all.length; i += batch) {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "use-lite", input: all.slice(i, i + batch) }),
      signal: AbortSignal.timeout(600000),
    });
    if (!res.ok) throw new Error(`embed texts ${i}..: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
    const done = Math.min(i + batch, all.length);
    if (done % (batch * 20) === 0 || done === all.length)
      console.error(`${done}/${all.length} texts, ${((Date.now() - t0) / done).toFixed(1)} ms/text`);
  }
}

main().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
