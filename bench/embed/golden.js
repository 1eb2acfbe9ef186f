// Writes the reference outputs the Go port of USE-lite
// (internal/embed/sentence) is tested against:
//
//   node golden.js tokens  > ../../internal/embed/sentence/testdata/tokens.golden.jsonl
//   node golden.js vectors > ../../internal/embed/sentence/testdata/vectors.golden.jsonl
//
// tokens: one JSON line {"text", "ids"} per text, the ids of
// @energetic-ai/embeddings' tokenizer (unclipped). vectors: one line
// {"text", "ids", "vec"} per text, vec the reference embedding (ids clipped
// to the first 128, as the eval used; a blank text sent as a space, as
// server.js sends it) as base64 little-endian float32.
// Every text is written here (fixed lists and a seeded generator); none comes
// from an evaluation data set.
"use strict";

const { load, tokens, embed } = require("./use.js");

const MAX_TOKENS = 128;

// mulberry32: a small seeded PRNG, so the generated texts are the same on
// every run.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const fixed = [
  "",
  " ",
  "   ",
  "\t\n",
  "\u00a0",
  "a",
  "I",
  "Hello, world!",
  "hello world",
  "HELLO WORLD",
  "The quick brown fox jumps over the lazy dog.",
  "What did I say about my sister's birthday party last weekend?",
  "I adopted a rescue greyhound named Biscuit in March.",
  "My flight to Lisbon leaves at 6:45 am on Tuesday, gate B12.",
  "Remind me: the dentist appointment is at 10:30.",
  "Meeting at 9:00, lunch at 12:30, call at 15:15 :)",
  "Smiley faces :) :( :-) ;) :D and a URL https://example.com/path?q=1&r=2#frag",
  "email me at someone.else@example.org or call +1 (555) 010-9999",
  "Prices: $3.50, €12,99, £7 and ¥1200; 50% off!!!",
  "1234567890",
  "3.14159 2.71828 1e10 -42 +7 0x1F",
  "It's 2024-03-15T10:20:30Z — or is it?",
  "“Smart quotes” and ‘single ones’ and «guillemets»",
  "”5 weird piece",
  "Café, naïve, résumé, façade, jalapeño, Ångström, Øresund, Łódź",
  "Cafe\u0301 with a combining accent",
  "ﬁne ﬂour ligatures and ① ② ③ circled digits, x² and H₂O",
  "Ｆｕｌｌｗｉｄｔｈ ｌｅｔｔｅｒｓ　ａｎｄ　ｓｐａｃｅｓ１２３",
  "Straße, Weißwurst, groß",
  "Привет, как дела? Москва и Санкт-Петербург.",
  "Γειά σου κόσμε, ελληνικά γράμματα.",
  "مرحبا بالعالم",
  "שלום עולם",
  "नमस्ते दुनिया",
  "こんにちは世界、東京タワーに行きました。",
  "你好，世界！我今天去了北京。",
  "안녕하세요 세계",
  "ภาษาไทย ไม่มีช่องว่าง",
  "Emoji 😀😃😄 and flags 🇫🇷🇯🇵 and family 👨‍👩‍👧‍👦 and skin 👍🏽",
  "🎉",
  "🍕🍕🍕 pizza night",
  "Math: ∑ x_i ≤ ∞, ∀ε>0 ∃δ, √2 ≈ 1.414",
  "# Heading\n\n- item one\n- item two\n\n**bold** and _italic_ and `code`",
  "```go\nfunc main() { fmt.Println(\"hi\") }\n```",
  "| col a | col b |\n|---|---|\n| 1 | 2 |",
  "> quoted line\n>> nested quote",
  "[a link](https://example.com) and ![img](x.png)",
  "line one\nline two\r\nline three\ttabbed",
  "multiple    internal     spaces",
  "  leading and trailing spaces  ",
  "trailing newline\n",
  "....!!!???,,,;;;:::---___***",
  "a-b_c.d/e\\f|g~h^i",
  "don't can't won't shouldn't y'all o'clock",
  "e.g. i.e. etc. Mr. Mrs. Dr. St. vs.",
  "COVID-19 GPT-4 iPhone15 Windows11 x86_64 ARM64",
  "supercalifragilisticexpialidocious",
  "pneumonoultramicroscopicsilicovolcanoconiosis is a long word",
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "zzzzzzzzzzzz qqqqqqqq xxxxxxxx",
  "\u0000control\u0001chars\u007f",
  "zero\u200bwidth\u200cjoiners\u200d",
  "soft\u00adhyphen",
  "ideographic\u3000space",
  "Ⅷ Ⅻ ℃ ℉ № ™ ℡ ㎏ ㎞ ¼ ½ ¾",
  "ＡＢＣ ｱｲｳ ﾊﾟﾋﾟ",
  "Ｈｅｌｌｏ",
  "I ❤ NY ☕ ♻ ✓ ✗ ★",
  "Tiếng Việt có dấu",
  "Türkçe ğüşıöç İstanbul",
  "Ελληνικά ΆΈΉ",
  "español: ¿Dónde está la biblioteca? ¡Aquí!",
  "français : « Où est la gare ? »",
  "Deutsch: Die Würde des Menschen ist unantastbar.",
  "português: ação, coração, não",
  "polski: zażółć gęślą jaźń",
  "čeština: příliš žluťoučký kůň",
];

// A few semantically grouped sentences (for the vector golden).
const sentences = [
  "How old is your dog?",
  "What is the age of your puppy?",
  "The stock market fell sharply today.",
  "I love eating fresh strawberries in summer.",
  "My favourite fruit is the strawberry.",
  "The train to Paris was delayed by two hours.",
  "We went hiking in the mountains last weekend.",
  "Can you recommend a good Italian restaurant nearby?",
  "She is learning to play the violin.",
  "The meeting has been moved to Thursday afternoon.",
  "I need to renew my passport before the trip.",
  "He bought a new laptop for his programming work.",
  "The weather forecast says it will rain tomorrow.",
  "Our daughter starts kindergarten in September.",
  "I've been feeling tired and stressed at work lately.",
  "Let's plan a surprise party for Mom's sixtieth birthday.",
  "The recipe calls for two cups of flour and three eggs.",
  "What time does the pharmacy close on Sundays?",
];

function words(r, n) {
  const w = ["the", "a", "cat", "dog", "house", "river", "blue", "quickly", "yesterday", "computer",
    "music", "garden", "friend", "coffee", "doctor", "holiday", "remember", "appointment", "Tuesday",
    "photo", "vacation", "kitchen", "bicycle", "mother", "project", "deadline", "phone", "beach",
    "I", "you", "we", "they", "said", "went", "bought", "liked", "and", "but", "because", "with",
    "42", "3:15", "2019", "$20", ",", ".", "!", "?", "'s", "(", ")", ":", ":)", "-", "\""];
  const out = [];
  for (let i = 0; i < n; i++) out.push(w[Math.floor(r() * w.length)]);
  return out.join(r() < 0.2 ? "  " : " ");
}

// Code points from ranges assigned since Unicode 6 or earlier, so that the
// NFKC of ICU (node) and golang.org/x/text agree.
const ranges = [
  [0x20, 0x7e], [0x20, 0x7e], [0x20, 0x7e], [0x20, 0x7e], [0xa0, 0x17f], [0x300, 0x36f],
  [0x391, 0x3c9], [0x410, 0x44f], [0x5d0, 0x5ea], [0x627, 0x64a], [0x905, 0x939], [0x1e00, 0x1eff],
  [0x2000, 0x206f], [0x2070, 0x209c], [0x20a0, 0x20b5], [0x2100, 0x214f], [0x2150, 0x218b],
  [0x2460, 0x24ff], [0x3041, 0x3096], [0x30a1, 0x30fa], [0x3131, 0x318e], [0x3200, 0x32fe],
  [0x3300, 0x33ff], [0x4e00, 0x4fff], [0xac00, 0xad00], [0xfb00, 0xfb06], [0xff01, 0xffee],
  [0x1f300, 0x1f5ff], [0x1f600, 0x1f64f], [0x1d400, 0x1d7ff],
];

function randomText(r, n) {
  let s = "";
  for (let i = 0; i < n; i++) {
    const [lo, hi] = ranges[Math.floor(r() * ranges.length)];
    s += String.fromCodePoint(lo + Math.floor(r() * (hi - lo + 1)));
  }
  return s;
}

function tokenTexts() {
  const r = rng(46);
  const texts = [...fixed, ...sentences];
  for (let i = 0; i < 120; i++) texts.push(words(r, 1 + Math.floor(r() * 40)));
  for (let i = 0; i < 120; i++) texts.push(randomText(r, 1 + Math.floor(r() * 30)));
  // Very long texts: over the 128-piece clip, one of some thousands of pieces.
  texts.push(words(r, 400));
  texts.push(words(r, 3000));
  texts.push(randomText(r, 2000));
  texts.push(sentences.join(" ").repeat(6));
  return texts;
}

function vectorTexts() {
  const r = rng(4646);
  const texts = [...sentences, "", " \t\n", "a", "🎉", "Café, naïve, résumé", "こんにちは世界",
    "Meeting at 9:00, lunch at 12:30 :)", "# Heading\n\n- item one\n- item two",
    "multiple    internal     spaces"];
  for (let i = 0; i < 10; i++) texts.push(words(r, 5 + Math.floor(r() * 60)));
  texts.push(words(r, 200)); // clipped at 128 pieces
  texts.push(sentences.join(" ").repeat(3)); // clipped too
  return texts;
}

async function main() {
  const mode = process.argv[2];
  const model = await load();
  if (mode === "tokens") {
    for (const text of tokenTexts()) {
      process.stdout.write(JSON.stringify({ text, ids: tokens(model, text, 0) }) + "\n");
    }
    return;
  }
  if (mode === "vectors") {
    const texts = vectorTexts();
    for (const text of texts) {
      // One text a call, as a live turn embeds it; a blank text as a
      // space, as server.js sends it (the graph cannot take no tokens).
      const sent = text.trim() === "" ? " " : text;
      const [vec] = await embed(model, [sent], MAX_TOKENS);
      const buf = Buffer.from(new Float32Array(vec).buffer);
      process.stdout.write(JSON.stringify({ text, ids: tokens(model, sent, MAX_TOKENS), vec: buf.toString("base64") }) + "\n");
    }
    return;
  }
  console.error("usage: node golden.js tokens|vectors");
  process.exit(2);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
