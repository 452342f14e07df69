// "Cannot judge" (issue 13): a dialog asks why (broken text, not English, other) and for a note, sends it to
// the page's skip endpoint (data-skip-url: the API's, through frame.js's postJson) and goes on to the next
// item (data-done-url). It opens by its button only (no single-key shortcut), and while it is open no key
// reaches the frame's shortcuts: a "1" typed or pressed on a reason is never a label, "n" never leaves the
// item, Ctrl+Enter never submits the item behind the dialog.
(function () {
  "use strict";

  function boot() {
    const stateEl = document.getElementById("annotate-state");
    const button = document.getElementById("cannot-judge");
    const dialog = document.getElementById("skip-dialog");
    const frameEl = document.getElementById("annotate");
    const endpoints = frameEl ? frameEl.dataset : {};
    if (!stateEl || !button || !dialog || !endpoints.skipUrl) return;
    const state = JSON.parse(stateEl.textContent);
    const form = document.getElementById("skip-form");
    const note = document.getElementById("skip-note");
    const error = document.getElementById("skip-error");
    const send = document.getElementById("skip-send");

    button.addEventListener("click", () => {
      error.textContent = "";
      dialog.showModal();
      dialog.scrollTop = 0;
      const first = form.querySelector("input[name=reason]:checked") || form.querySelector("input[name=reason]");
      if (first) first.focus();
    });
    document.getElementById("skip-cancel").addEventListener("click", () => dialog.close());
    dialog.addEventListener("keydown", (event) => {
      // Esc still closes the dialog (the browser's default action); only the frame's shortcuts are kept out.
      event.stopPropagation();
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        form.requestSubmit();
      }
    });

    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const checked = form.querySelector("input[name=reason]:checked");
      const text = note.value.trim();
      if (!checked) {
        error.textContent = "Choose why you cannot judge the item.";
        form.querySelector("input[name=reason]").focus();
        return;
      }
      if (checked.value === "other" && !text) {
        error.textContent = "Say in the note why you cannot judge the item.";
        note.focus();
        return;
      }
      send.disabled = true;
      error.textContent = "Saving…";
      try {
        const { ok, status, answer } = await window.FaithAnno.postJson(endpoints.skipUrl, { reason: checked.value, note: text });
        if (!ok) {
          error.textContent = window.FaithAnno.errorText(answer, "The server refused: " + status);
          send.disabled = false;
          return;
        }
        if (state.draftKey) localStorage.removeItem(state.draftKey);
        window.location.assign(endpoints.doneUrl);
      } catch {
        error.textContent = "Not saved: the connection failed. Try again.";
        send.disabled = false;
      }
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
  else boot();
})();
