// A crowd worker's pages (loaded only in a crowd session): pastes into explanations are reported, the
// instructions' example windows open, and the end page returns the worker to their platform.
(function () {
  "use strict";

  function csrfToken() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  const session = document.getElementById("crowd-session");
  const item = window.location.pathname.match(/^\/annotate\/(\d+)\/$/);
  if (session && item) {
    // Explanations are the notes of the units; anything pasted into one is counted on the server.
    document.addEventListener("paste", (event) => {
      const target = event.target;
      if (!(target instanceof HTMLElement) || !target.matches("#annotate .note")) return;
      fetch(session.dataset.pasteUrl, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
        body: JSON.stringify({ assignment: Number(item[1]) }),
        credentials: "same-origin",
      }).catch(() => {});
    }, true);
  }

  for (const button of document.querySelectorAll("button.open-examples")) {
    button.addEventListener("click", () => {
      const dialog = document.getElementById(button.dataset.dialog);
      if (dialog) dialog.showModal();
    });
  }

  const end = document.getElementById("end");
  if (end && end.dataset.redirect) {
    window.setTimeout(() => window.location.assign(end.dataset.redirect), 1500);
  }
})();
