// The page as text for the model: headings, paragraphs, links, form fields
// and buttons, each element that can be acted on marked with a short
// reference ("e12") kept in the attribute named by the first argument.
// Returns {title, url, text, truncated, ready}; ready is false while the
// document is still loading.
(attr, maxChars) => {
  const out = [];
  let size = 0;
  let truncated = false;
  let next = 1;
  for (const el of document.querySelectorAll("[" + attr + "]")) {
    el.removeAttribute(attr);
  }
  const push = (line) => {
    if (truncated) return;
    line = line.replace(/\s+/g, " ").trim();
    if (!line) return;
    if (size + line.length > maxChars) {
      truncated = true;
      return;
    }
    out.push(line);
    size += line.length + 1;
  };
  const ref = (el) => {
    const r = "e" + next++;
    el.setAttribute(attr, r);
    return r;
  };
  const hidden = (el) => {
    if (el.hidden || el.getAttribute("aria-hidden") === "true") return true;
    const s = getComputedStyle(el);
    return s.display === "none" || s.visibility === "hidden";
  };
  const label = (el) => {
    const byFor = el.id && document.querySelector('label[for="' + CSS.escape(el.id) + '"]');
    const t = (byFor && byFor.innerText) || el.getAttribute("aria-label") || el.placeholder ||
      (el.closest("label") && el.closest("label").innerText) || el.name || "";
    return t.replace(/\s+/g, " ").trim().slice(0, 80);
  };
  const quote = (s) => JSON.stringify(String(s).slice(0, 200));
  let inline = "";
  const flush = () => {
    push(inline);
    inline = "";
  };
  const blocks = new Set(["P", "DIV", "SECTION", "ARTICLE", "MAIN", "HEADER", "FOOTER", "NAV", "ASIDE", "LI", "UL", "OL",
    "TR", "TABLE", "FORM", "FIELDSET", "BLOCKQUOTE", "PRE", "BR", "HR", "DL", "DT", "DD", "FIGURE", "FIGCAPTION", "BODY"]);
  const walk = (node) => {
    if (truncated) return;
    if (node.nodeType === Node.TEXT_NODE) {
      inline += " " + node.textContent;
      return;
    }
    if (node.nodeType !== Node.ELEMENT_NODE) return;
    const el = node;
    const tag = el.tagName;
    if (["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "SVG", "HEAD"].includes(tag)) return;
    if (hidden(el)) return;
    if (/^H[1-6]$/.test(tag)) {
      flush();
      push("#".repeat(Number(tag[1])) + " " + el.innerText);
      return;
    }
    if (tag === "A" && el.href) {
      inline += " [link " + ref(el) + " " + quote(el.innerText.trim() || el.title || el.href) + " -> " + el.href + "]";
      return;
    }
    if (tag === "BUTTON" || (tag === "INPUT" && ["submit", "button", "reset", "image"].includes(el.type))) {
      inline += " [button " + ref(el) + " " + quote(el.innerText || el.value || el.getAttribute("aria-label") || el.type) +
        (el.disabled ? " disabled" : "") + "]";
      return;
    }
    if (tag === "INPUT" && el.type === "hidden") return;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable && el.contentEditable === "true") {
      flush();
      let d = "[field " + ref(el) + " " + (tag === "INPUT" ? el.type : tag.toLowerCase());
      const l = label(el);
      if (l) d += " label=" + quote(l);
      if (tag === "SELECT") {
        d += " options=" + quote(Array.from(el.options).map((o) => o.text.trim()).join(" | "));
        d += " selected=" + quote(el.selectedOptions.length ? el.selectedOptions[0].text.trim() : "");
      } else if (el.type === "checkbox" || el.type === "radio") {
        d += el.checked ? " checked" : " unchecked";
      } else if (el.type === "password") {
        d += el.value ? " value=(hidden)" : "";
      } else if (tag === "INPUT" || tag === "TEXTAREA") {
        if (el.value) d += " value=" + quote(el.value);
      } else {
        d += " value=" + quote(el.innerText);
      }
      if (el.disabled) d += " disabled";
      push(d + "]");
      return;
    }
    if (tag === "IFRAME" || tag === "FRAME") {
      flush();
      push("[frame " + (el.src || "(inline)") + "]");
      return;
    }
    if (tag === "IMG" && el.alt) {
      inline += " [image " + quote(el.alt) + "]";
      return;
    }
    const block = blocks.has(tag);
    if (block) flush();
    for (const c of (el.shadowRoot ? el.shadowRoot.childNodes : el.childNodes)) walk(c);
    if (block) flush();
  };
  if (document.body) walk(document.body);
  flush();
  return { title: document.title, url: location.href, text: out.join("\n"), truncated, ready: document.readyState === "complete" };
}
