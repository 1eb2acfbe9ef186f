// Distils Universal Sentence Encoder Lite into a static table of word-piece
// vectors, the way Model2Vec distils a sentence model: each piece of the
// model's SentencePiece vocabulary goes through the graph alone, the 512-d
// outputs are reduced by PCA, and each row is weighted by how rare its piece
// is. A text's vector is then the mean of its pieces' rows (server.js
// --static serves that), one table lookup per token instead of a transformer.
//
//   node distill.js --out TABLE [--dims 256] [--weight sif|zipf|none] [--a 1e-3]
//                   [--teacher FILE] [--context] [--drop N]
//
// --teacher FILE keeps the 8,000 teacher vectors (16 MB of float32) so that
// trying other dimensions or weights does not run the graph again.
// --context feeds a piece after "▁" (the bare word boundary) rather than
// alone, which is how a suffix piece appears inside a text. --drop N leaves
// out the N largest principal components (SIF's "common direction").
//
// The weights: sif is a/(a+p) with p the piece's unigram probability, the
// exp of its score in vocab.json (the SentencePiece model's own log
// probability); zipf is log(1+rank) with rank the piece's position in the
// vocabulary (pieces are listed most frequent first); none is 1.
//
// TABLE is binary: "RVST", uint32 rows, uint32 dims (little endian), then
// rows*dims float32, row i for piece id i (the six control pieces are zero).
"use strict";

const fs = require("fs");
const use = require("./use");
const { tensor1d, tensor2d } = require("@energetic-ai/core");

function flag(name, def) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : def;
}

const RESERVED = 6; // "<unk>"-like control pieces at the head of vocab.json
const BATCH = 256; // pieces per graph call, one row each

// teacher returns the 512-d output for every piece id (control pieces zero).
async function teacher(model, context) {
  const vocab = model.tokenizer.vocabulary;
  const n = vocab.length;
  const out = new Float32Array(n * use.DIMS);
  const boundary = vocab.findIndex((p) => p[0] === "\u2581");
  if (context && boundary < 0) throw new Error("vocabulary has no bare \u2581 piece for --context");
  for (let s = RESERVED; s < n; s += BATCH) {
    const idx = [];
    const vals = [];
    const end = Math.min(n, s + BATCH);
    for (let id = s; id < end; id++) {
      const row = id - s;
      // A piece that begins a word carries its own boundary; context is for
      // the others.
      if (context && !vocab[id][0].startsWith("\u2581")) {
        idx.push([row, 0]);
        vals.push(boundary);
        idx.push([row, 1]);
      } else idx.push([row, 0]);
      vals.push(id);
    }
    const indices = tensor2d(idx, [idx.length, 2], "int32");
    const values = tensor1d(vals, "int32");
    try {
      const t = await model.model.executeAsync({ indices, values });
      const arr = await t.array();
      t.dispose();
      arr.forEach((v, row) => out.set(v, (s + row) * use.DIMS));
    } finally {
      indices.dispose();
      values.dispose();
    }
    if (((s - RESERVED) / BATCH) % 8 === 0) console.error(`teacher: ${end}/${n}`);
  }
  return out;
}

// jacobi returns the eigenvalues and eigenvectors (columns of v, row-major
// n*n) of the symmetric n*n matrix a, by cyclic Jacobi rotations.
function jacobi(a, n) {
  const v = new Float64Array(n * n);
  for (let i = 0; i < n; i++) v[i * n + i] = 1;
  for (let sweep = 0; sweep < 50; sweep++) {
    let off = 0;
    for (let p = 0; p < n; p++) for (let q = p + 1; q < n; q++) off += a[p * n + q] * a[p * n + q];
    if (off < 1e-22) break;
    for (let p = 0; p < n; p++) {
      for (let q = p + 1; q < n; q++) {
        const apq = a[p * n + q];
        if (Math.abs(apq) < 1e-300) continue;
        const theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const s = t * c;
        for (let k = 0; k < n; k++) {
          const akp = a[k * n + p];
          const akq = a[k * n + q];
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (let k = 0; k < n; k++) {
          const apk = a[p * n + k];
          const aqk = a[q * n + k];
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
        for (let k = 0; k < n; k++) {
          const vkp = v[k * n + p];
          const vkq = v[k * n + q];
          v[k * n + p] = c * vkp - s * vkq;
          v[k * n + q] = s * vkp + c * vkq;
        }
      }
    }
  }
  const vals = new Float64Array(n);
  for (let i = 0; i < n; i++) vals[i] = a[i * n + i];
  return { vals, v };
}

// pca projects the rows first..rows-1 of x (rows*d) onto their top dims
// principal components, centred; the other rows stay zero.
function pca(x, rows, d, first, dims, drop) {
  const m = rows - first;
  const mean = new Float64Array(d);
  for (let r = first; r < rows; r++) for (let j = 0; j < d; j++) mean[j] += x[r * d + j];
  for (let j = 0; j < d; j++) mean[j] /= m;
  const cov = new Float64Array(d * d);
  const row = new Float64Array(d);
  for (let r = first; r < rows; r++) {
    for (let j = 0; j < d; j++) row[j] = x[r * d + j] - mean[j];
    for (let i = 0; i < d; i++) {
      const ri = row[i];
      for (let j = i; j < d; j++) cov[i * d + j] += ri * row[j];
    }
  }
  for (let i = 0; i < d; i++) for (let j = i; j < d; j++) cov[j * d + i] = cov[i * d + j] /= m;
  const { vals, v } = jacobi(cov, d);
  const order = [...vals.keys()].sort((p, q) => vals[q] - vals[p]).slice(drop, drop + dims);
  const total = vals.reduce((s, e) => s + Math.max(e, 0), 0);
  const kept = order.reduce((s, k) => s + vals[k], 0);
  console.error(`pca: ${dims} of ${d} components (from the ${drop + 1}th) keep ${((100 * kept) / total).toFixed(1)}% of the variance`);
  const out = new Float32Array(rows * dims);
  for (let r = first; r < rows; r++) {
    for (let j = 0; j < d; j++) row[j] = x[r * d + j] - mean[j];
    order.forEach((k, c) => {
      let s = 0;
      for (let j = 0; j < d; j++) s += row[j] * v[j * d + k];
      out[r * dims + c] = s;
    });
  }
  return out;
}

function weights(vocab, kind, a) {
  return vocab.map(([, score], id) => {
    if (id < RESERVED) return 0;
    if (kind === "sif") return a / (a + Math.exp(score));
    if (kind === "zipf") return Math.log(1 + id - RESERVED + 1);
    if (kind === "none") return 1;
    throw new Error(`--weight ${kind} is not sif, zipf or none`);
  });
}

async function main() {
  const outFile = flag("--out", "");
  if (!outFile) throw new Error("usage: node distill.js --out TABLE [--dims N] [--weight sif|zipf|none] [--a A] [--teacher FILE] [--context]");
  const dims = Number(flag("--dims", "256"));
  const kind = flag("--weight", "sif");
  const a = Number(flag("--a", "1e-3"));
  const teacherFile = flag("--teacher", "");
  const context = process.argv.includes("--context");
  const drop = Number(flag("--drop", "0"));
  if (!(dims > 0 && dims <= use.DIMS)) throw new Error(`--dims ${dims} is not in 1..${use.DIMS}`);

  const model = await use.load();
  const vocab = model.tokenizer.vocabulary;
  const n = vocab.length;
  let x;
  if (teacherFile && fs.existsSync(teacherFile)) {
    const b = fs.readFileSync(teacherFile);
    if (b.length !== n * use.DIMS * 4) throw new Error(`${teacherFile}: ${b.length} bytes, want ${n * use.DIMS * 4}`);
    x = new Float32Array(b.buffer, b.byteOffset, n * use.DIMS);
    console.error(`teacher: ${n} vectors from ${teacherFile}`);
  } else {
    const t0 = Date.now();
    x = await teacher(model, context);
    console.error(`teacher: ${n - RESERVED} pieces in ${Date.now() - t0} ms`);
    if (teacherFile) fs.writeFileSync(teacherFile, Buffer.from(x.buffer));
  }
  const table = dims === use.DIMS && process.argv.includes("--no-pca") ? Float32Array.from(x) : pca(x, n, use.DIMS, RESERVED, dims, drop);
  const w = weights(vocab, kind, a);
  for (let id = 0; id < n; id++) for (let j = 0; j < dims; j++) table[id * dims + j] *= w[id];
  const head = Buffer.alloc(12);
  head.write("RVST", 0, "ascii");
  head.writeUInt32LE(n, 4);
  head.writeUInt32LE(dims, 8);
  fs.writeFileSync(outFile, Buffer.concat([head, Buffer.from(table.buffer)]));
  console.error(`wrote ${outFile}: ${n} x ${dims}, weight ${kind}${kind === "sif" ? ` a=${a}` : ""}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
