// Acts on the element a snapshot marked with reference ref (in attribute
// attr): "click" clicks it; "type" replaces its text with text (or picks
// the option of a select whose text or value is text, or checks a box
// for "true"/"on"/"yes") and, with submit, submits its form. Returns
// {ok, error, submitted}.
(attr, action, ref, text, submit) => {
  const el = document.querySelector("[" + attr + '="' + CSS.escape(ref) + '"]');
  if (!el) {
    return { ok: false, error: "no element has the reference " + ref + " on this page: take a new snapshot (references change when the page does)" };
  }
  el.scrollIntoView({ block: "center", inline: "center" });
  if (action === "click") {
    if (el.disabled) return { ok: false, error: "the element " + ref + " is disabled" };
    el.click();
    return { ok: true };
  }
  const fire = (type) => el.dispatchEvent(new Event(type, { bubbles: true }));
  el.focus();
  const tag = el.tagName;
  if (tag === "SELECT") {
    const want = String(text).trim().toLowerCase();
    const opt = Array.from(el.options).find((o) => o.text.trim().toLowerCase() === want || o.value.toLowerCase() === want);
    if (!opt) return { ok: false, error: "the list " + ref + " has no option " + JSON.stringify(text) };
    el.value = opt.value;
  } else if (tag === "INPUT" && (el.type === "checkbox" || el.type === "radio")) {
    el.checked = ["true", "on", "yes", "1", "checked"].includes(String(text).trim().toLowerCase());
  } else if (tag === "INPUT" || tag === "TEXTAREA") {
    if (el.disabled || el.readOnly) return { ok: false, error: "the field " + ref + " cannot be edited" };
    const proto = tag === "INPUT" ? HTMLInputElement.prototype : HTMLTextAreaElement.prototype;
    Object.getOwnPropertyDescriptor(proto, "value").set.call(el, text);
  } else if (el.isContentEditable) {
    el.textContent = text;
  } else {
    return { ok: false, error: "the element " + ref + " is not a field that takes text" };
  }
  fire("input");
  fire("change");
  if (!submit) return { ok: true };
  if (el.form) {
    el.form.requestSubmit();
    return { ok: true, submitted: true };
  }
  return { ok: true, submitted: false };
}
