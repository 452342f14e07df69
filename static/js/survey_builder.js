// The survey builder of the public-study form: each textarea[data-survey-builder] holds a survey's questions
// as JSON (what the server reads); with script, rows of controls edit it (a question's key, kind, text,
// choices and whether it is required) and write the JSON back on every change. Without script the JSON is
// edited by hand. The server checks everything either way.
(function () {
  "use strict";

  const KINDS = [
    ["single", "Single choice"],
    ["multiple", "Multiple choice"],
    ["text", "Text"],
    ["likert", "Likert (5 points)"],
  ];
  const element = window.FaithAnnoText.element;
  let made = 0;

  function labelled(text, control) {
    made += 1;
    control.id = `survey-control-${made}`;
    return element("div", { className: "field" }, [element("label", { for: control.id, text }), control]);
  }

  function build(textarea) {
    let questions;
    try {
      questions = JSON.parse(textarea.value.trim() || "[]");
    } catch {
      return; // not JSON (yet): the researcher edits it by hand, the server says what is wrong
    }
    if (!Array.isArray(questions)) return;
    const name = textarea.dataset.surveyBuilder;
    const list = element("ol", { className: "survey-questions" });
    const write = () => {
      const rows = [...list.children].map((row) => row.read());
      textarea.value = rows.length ? JSON.stringify(rows, null, 1) : "";
    };
    const addRow = (question) => {
      const key = element("input", { type: "text", value: question.key || "", maxlength: 40, className: "survey-key" });
      const kind = element("select", { className: "survey-kind" });
      for (const [value, text] of KINDS) kind.append(element("option", { value, text }));
      kind.value = question.kind || "single";
      const text = element("input", { type: "text", value: question.text || "", className: "survey-text" });
      const choices = element("input", {
        type: "text",
        value: (question.choices || []).join("; "),
        className: "survey-choices",
      });
      const required = element("input", { type: "checkbox", checked: question.required !== false, className: "survey-required" });
      const remove = element("button", { type: "button", text: "Remove question" });
      const row = element("li", { className: "card-inset survey-question" }, [
        labelled("Key (a-z, 0-9, _)", key),
        labelled("Kind", kind),
        labelled("Question", text),
        labelled("Choices, separated by ; (single and multiple choice; Likert: empty for the 5-point scale)", choices),
        labelled("Required", required),
        remove,
      ]);
      row.read = () => {
        const read = { key: key.value.trim(), text: text.value.trim(), kind: kind.value, required: required.checked };
        const given = choices.value.split(";").map((choice) => choice.trim()).filter(Boolean);
        if (kind.value !== "text" && (kind.value !== "likert" || given.length)) read.choices = given;
        return read;
      };
      row.addEventListener("input", write);
      row.addEventListener("change", write);
      remove.addEventListener("click", () => {
        row.remove();
        write();
      });
      list.append(row);
    };
    questions.forEach(addRow);
    const add = element("button", { type: "button", text: "Add a question", className: "survey-add", "data-survey": name });
    add.addEventListener("click", () => {
      addRow({ kind: "single", required: true });
      write();
      list.lastElementChild.querySelector("input").focus();
    });
    textarea.hidden = true;
    textarea.after(list, add);
  }

  for (const textarea of document.querySelectorAll("textarea[data-survey-builder]")) build(textarea);
})();
