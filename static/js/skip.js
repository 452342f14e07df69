// "Cannot judge" (issue 13): a dialog asks why (broken text, not English, other) and for a note, sends it to
// the item's skip URL and goes on to the next item. It opens by its button only (no single-key shortcut),
// and while it is open no key reaches the frame's shortcuts: a "1" typed or pressed on a reason is never
// a label, "n" never leaves the item, Ctrl+Enter never submits the item behind the dialog.
(function () {
  "use strict";

  function boot() {
    const stateEl = document.getElementById("annotate-state");
    const button = document.getElementById("cannot-judge");
    const dialog = document.getElementById("skip-dialog");
    if (!stateEl || !button || !dialog) return;
    const state = JSON.parse(stateEl.textContent);
    const form = document.getElementById("skip-form");
    const note = document.getElementById("skip-note");
    const error = document.getElementById("skip-error");
    const send = document.getElementById("skip-send");

    function csrfToken() {
      const input = document.querySelector("input[name=csrfmiddlewaretoken]");
      return input ? input.value : "";
    }

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
        const response = await fetch(state.skipUrl, {
          method: "POST",
          headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
          body: JSON.stringify({ reason: checked.value, note: text }),
          credentials: "same-origin",
        });
        const body = await response.json().catch(() => ({}));
        if (!response.ok) {
          error.textContent = (body.errors || ["The server refused: " + response.status]).join(" ");
          send.disabled = false;
          return;
        }
        if (state.draftKey) localStorage.removeItem(state.draftKey);
        window.location.assign(body.next || state.dashboardUrl);
      } catch {
        error.textContent = "Not saved: the connection failed. Try again.";
        send.disabled = false;
      }
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
  else boot();
})();
