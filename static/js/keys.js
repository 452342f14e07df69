// What the keyboard-driven pages share (the annotation frame, frame.js, and the adjudication pages,
// adjudicate.js and adjudicate_whole.js): which keys an entry answers, whether the focus is in a field where
// keys are typed, the help table of the keys, and their saves: JSON posted to the API under the session, and
// what a refusal says.
(function () {
  "use strict";

  const ALIASES = { "←": "ArrowLeft", "→": "ArrowRight", "↑": "ArrowUp", "↓": "ArrowDown", Del: "Delete" };

  // entry: {keys: ["→", "j", "Shift+←", ...], label, run(event)}.
  function matches(entry, event) {
    return entry.keys.some((key) => {
      if (key === "Shift+←") return event.shiftKey && event.key === "ArrowLeft";
      if (key === "Shift+→") return event.shiftKey && event.key === "ArrowRight";
      if (event.shiftKey && (key === "←" || key === "→")) return false;
      return event.key === (ALIASES[key] || key);
    });
  }

  // The keyboard rule: a single-key shortcut acts only while the focus is outside every editable field,
  // so a key meant as a shortcut can never end up in typed text.
  function editable(target) {
    return (
      target instanceof HTMLTextAreaElement ||
      target instanceof HTMLSelectElement ||
      (target instanceof HTMLInputElement && !["checkbox", "radio", "button", "submit", "reset"].includes(target.type)) ||
      (target instanceof HTMLElement && target.isContentEditable)
    );
  }

  // One row per entry in the help table's body: the keys, then what they do.
  function fillHelp(body, entries, element) {
    for (const entry of entries) {
      const keys = element("th", { scope: "row" });
      entry.keys.forEach((key, i) => {
        if (i) keys.append(" / ");
        keys.append(element("kbd", { text: key }));
      });
      body.append(element("tr", {}, [keys, element("td", { text: entry.label })]));
    }
  }

  // A shortcut pressed outside the fields: the first entry that answers the key runs (an entry whose run
  // returns false lets the key through). Alt/Ctrl/Meta combinations, and Enter on a button or a link, are
  // left to the browser.
  function runShortcut(entries, event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const target = event.target;
    if (event.key === "Enter" && target instanceof HTMLElement && target.closest("button, a, summary")) return;
    for (const entry of entries) {
      if (matches(entry, event)) {
        if (entry.run(event) !== false) event.preventDefault();
        return;
      }
    }
  }

  // The keys' help dialog opens with its title focused.
  function openHelp(dialog) {
    if (dialog.open) return;
    dialog.showModal();
    document.getElementById("help-title").focus({ preventScroll: true });
  }

  function csrfToken() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  // The pages' saves all go to the API under the session: JSON with the CSRF token. Resolves to
  // {ok, status, answer} (answer: the parsed JSON body, {} when there is none); rejects when the connection fails.
  async function postJson(url, body, options) {
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken() },
      body: JSON.stringify(body),
      credentials: "same-origin",
      ...(options || {}),
    });
    const answer = await response.json().catch(() => ({}));
    return { ok: response.ok, status: response.status, answer };
  }

  // What a refusal says, in one line: the service's {"errors": [...]}, or the API's {field: [messages]}
  // (the field named), or {"detail": ...}; `fallback` when the answer says nothing.
  function errorText(answer, fallback) {
    const lines = [];
    for (const [key, value] of Object.entries(answer || {})) {
      const messages = (Array.isArray(value) ? value : [value]).map((m) => (typeof m === "string" ? m : JSON.stringify(m)));
      const named = key !== "errors" && key !== "detail" && key !== "non_field_errors" && key !== "field";
      if (key !== "field") lines.push(...messages.map((m) => (named ? key + ": " + m : m)));
    }
    return lines.join(" ") || fallback;
  }

  // An adjudication decision, posted with the version of the final label it was made on: resolves to the saved
  // final label, or to null after `announce` said why not (stale: someone decided since; refused; no
  // connection). `what` names the decision for the reload advice.
  async function postDecision(url, body, announce, what) {
    try {
      const { ok, status, answer } = await postJson(url, body);
      if (ok) return answer.final;
      const reload = status === 409 ? " Reload the page to see the current " + what + "." : "";
      announce("Not saved: " + errorText(answer, "the server refused (" + status + ").") + reload);
    } catch {
      announce("Not saved: the connection failed; try again.");
    }
    return null;
  }

  window.FaithAnnoKeys = { csrfToken, editable, errorText, fillHelp, matches, openHelp, postDecision, postJson, runShortcut };
})();
