// What pages ask for with data attributes instead of inline event handlers (the Content-Security-Policy
// allows no inline script): data-autosubmit sends a control's form when its value changes, and
// data-select-on-focus selects a field's text when it gets the focus (for copying), and
// data-shown-when="name=value" shows an element only while the form's control `name` has that value (the
// server validates regardless; without script everything stays shown).
(function () {
  "use strict";
  const showConditionalParts = () => {
    for (const part of document.querySelectorAll("[data-shown-when]")) {
      const [name, value] = part.dataset.shownWhen.split("=");
      const form = part.closest("form");
      const control = form ? form.elements.namedItem(name) : null;
      part.hidden = !control || control.value !== value;
    }
  };
  document.addEventListener("change", (event) => {
    const control = event.target.closest("[data-autosubmit]");
    if (control && control.form) control.form.submit();
    if (event.target.form) showConditionalParts();
  });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", showConditionalParts);
  } else {
    showConditionalParts();
  }
  document.addEventListener("focusin", (event) => {
    if (event.target.matches("[data-select-on-focus]")) event.target.select();
  });
})();
