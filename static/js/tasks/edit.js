// BUMP protocol (seed 003): edit a reference summary minimally so that it holds exactly one error of the
// requested type (or any type, freestyle). The server computes the word diff and the minimal-edit
// warnings with every draft save, so the check shown is the one stored with the submission.
(function () {
  "use strict";

  FaithAnno.register("edit", (frame) => {
    const state = frame.state;
    const reference = state.summary;
    const requested = state.params.error_type || null;
    const editedEl = document.getElementById("edited");
    const diffEl = document.getElementById("edit-diff");
    const warningsEl = document.getElementById("edit-warnings");
    const notPossibleEl = document.getElementById("not-possible");
    const noteEl = document.getElementById("not-possible-note");
    const typeEl = document.getElementById("freestyle-type");
    document.getElementById("source").textContent = state.document;
    document.getElementById("reference").textContent = reference;

    const requestedEl = document.getElementById("requested");
    if (requested) {
      const name = (state.errorTypes.find((t) => t.value === requested) || { label: requested }).label;
      requestedEl.append(frame.element("p", {}, [frame.element("strong", { text: "Introduce exactly one " + name.toLowerCase() + "." })]));
      requestedEl.append(frame.element("ul", {}, state.requestedHelp.map((help) => frame.element("li", { text: help }))));
    } else {
      requestedEl.append(frame.element("p", {}, [frame.element("strong", { text: "Freestyle: introduce exactly one error of any kind." })]));
      document.getElementById("freestyle-type-row").hidden = false;
      typeEl.append(frame.element("option", { value: state.freestyle, text: "I'd rather not say" }));
      for (const type of state.errorTypes) typeEl.append(frame.element("option", { value: type.value, text: type.label }));
    }
    if (!requested) notPossibleEl.closest("label").hidden = true;

    const initial = frame.draft ? frame.draft.edit : frame.saved.edit;
    editedEl.value = initial && typeof initial.text === "string" ? initial.text : reference;
    if (initial && initial.label === state.notPossible) notPossibleEl.checked = true;
    if (initial && typeof initial.note === "string") noteEl.value = initial.note;
    if (!requested && initial && initial.label) typeEl.value = initial.label;
    let diff = null; // the server's last answer for the current text
    let diffFor = null;

    function label() {
      if (requested) return notPossibleEl.checked ? state.notPossible : requested;
      return typeEl.value || state.freestyle;
    }
    function showDiff() {
      document.getElementById("not-possible-row").hidden = !notPossibleEl.checked;
      if (editedEl.value === reference) {
        diffEl.replaceChildren(frame.element("p", { className: "muted", text: "No change yet." }));
        warningsEl.replaceChildren();
        return;
      }
      if (!diff || diffFor !== editedEl.value) {
        diffEl.replaceChildren(frame.element("p", { className: "muted", text: "Checking your changes…" }));
        return;
      }
      if (diff.unchanged) {
        diffEl.replaceChildren(frame.element("p", { className: "muted", text: "Only spacing changed: no word is different yet." }));
      } else {
        diffEl.replaceChildren(
          frame.element("ul", { className: "diff-list" }, diff.changes.map((change) =>
            frame.element("li", {}, [
              frame.element("del", { text: change.old || "∅" }), " → ", frame.element("ins", { text: change.new || "∅" }),
              frame.element("span", { className: "muted", text: " (" + change.words + " word" + (change.words === 1 ? "" : "s") + ")" }),
            ])
          ))
        );
      }
      warningsEl.replaceChildren(...diff.warnings.map((warning) => frame.element("li", { className: "warning", text: "⚠ " + warning })));
    }
    function changed() {
      showDiff();
      frame.changed();
    }
    editedEl.addEventListener("input", changed);
    noteEl.addEventListener("input", changed);
    typeEl.addEventListener("change", changed);
    notPossibleEl.addEventListener("change", changed);
    // Starting again leaves the focus where it was: the annotator enters the editor with e (or a click).
    function reset() {
      editedEl.value = reference;
      changed();
    }
    document.getElementById("reset-edit").addEventListener("click", reset);
    showDiff();

    return {
      keys: [
        { keys: ["e"], label: "edit the summary", run: () => editedEl.focus() },
        { keys: ["r"], label: "start again from the reference summary", run: reset },
        ...(requested
          ? [
              { keys: ["x"], label: "the requested error cannot be introduced here (then say why: w)", run: () => { notPossibleEl.checked = !notPossibleEl.checked; changed(); } },
              { keys: ["w"], label: "write why the error cannot be introduced (after x)", run: () => (notPossibleEl.checked ? noteEl.focus() : false) },
            ]
          : []),
      ],
      serverDraftSaved(answer) {
        if (answer.diff) {
          diff = answer.diff;
          diffFor = answer.edited; // typing may have gone on while the server answered
          showDiff();
          frame.refresh();
        }
      },
      snapshot: () => ({ edit: { text: editedEl.value, label: label(), note: noteEl.value } }),
      missing() {
        if (notPossibleEl.checked && requested) {
          return noteEl.value.trim() ? { count: 0, text: "Marked as not possible" } : { count: 1, text: "Say why the error cannot be introduced" };
        }
        if (editedEl.value.trim() === reference.trim() || (diff && diffFor === editedEl.value && diff.unchanged)) {
          return { count: 1, text: "Edit the summary to introduce the error" };
        }
        return { count: 0, text: diff && diffFor === editedEl.value && diff.warnings.length ? "Ready, but see the warning" : "Ready to submit" };
      },
      submission: () => ({ edit: { text: editedEl.value, label: label(), note: noteEl.value } }),
    };
  });
})();
