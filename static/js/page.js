// What pages ask for with data attributes instead of inline event handlers (the Content-Security-Policy
// allows no inline script): data-autosubmit sends a control's form when its value changes, and
// data-select-on-focus selects a field's text when it gets the focus (for copying).
(function () {
  "use strict";
  document.addEventListener("change", (event) => {
    const control = event.target.closest("[data-autosubmit]");
    if (control && control.form) control.form.submit();
  });
  document.addEventListener("focusin", (event) => {
    if (event.target.matches("[data-select-on-focus]")) event.target.select();
  });
})();
