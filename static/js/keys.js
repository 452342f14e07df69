// Keyboard shortcuts shared by the keyboard-driven pages (the annotation frame, frame.js, and the
// adjudication page, adjudicate.js): which keys an entry answers, whether the focus is in a field where
// keys are typed, the help table of the keys, and the CSRF token the pages' posts carry.
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

  function csrfToken() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  window.FaithAnnoKeys = { csrfToken, editable, fillHelp, matches };
})();
