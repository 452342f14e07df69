// Question-per-sentence protocols: QAGS (each summary sentence supported by the article, yes/no, with a
// required short explanation), FEQA (a decision tree whose follow-up questions appear only when they
// apply) and summary-level factuality. Units carry their own prompt, choices and "requires" condition.
(function () {
  "use strict";

  FaithAnno.register("sentences", (frame) => {
    const state = frame.state;
    const units = state.units;
    const byIndex = frame.unitByIndex;
    const labels = frame.initialLabels();
    const notes = new Map();
    for (const [key, value] of Object.entries((frame.draft || frame.saved).notes || {})) {
      if (byIndex.has(Number(key)) && typeof value === "string") notes.set(Number(key), value);
    }

    const summaryEl = document.getElementById("summary");
    const questionsEl = document.getElementById("questions");
    const sourceEl = document.getElementById("source");
    sourceEl.textContent = state.document;

    // Sentences: FEQA asks several questions per sentence (unit.sentence); the others one per unit.
    const groups = [];
    for (const unit of units) {
      const key = unit.sentence !== undefined ? unit.sentence : unit.index;
      let group = groups.find((g) => g.key === key);
      if (!group) {
        group = { key, start: unit.start, end: unit.end, text: unit.text, units: [] };
        groups.push(group);
      }
      group.units.push(unit);
    }
    const sentenceName = units.length === 1 && state.unitName === "summary" ? "The summary" : null;
    frame.renderText(
      summaryEl,
      state.summary,
      groups.filter((g) => g.start !== null).map((g) => ({ start: g.start, end: g.end, group: g })),
      (range, text) => frame.element("span", { className: "sentence-mark", "data-sentence": range.group.key, text })
    );

    const blocks = new Map();
    groups.forEach((group, number) => {
      const card = frame.element("fieldset", { className: "sentence-card" });
      card.append(frame.element("legend", { text: sentenceName || "Sentence " + (number + 1) + " of " + groups.length }));
      card.append(frame.element("blockquote", { className: "sentence-text", text: group.text }));
      for (const unit of group.units) {
        const promptId = "q-" + unit.index;
        const block = frame.element("div", { className: "question", "data-index": unit.index });
        block.append(frame.element("p", { id: promptId, className: "question-prompt", text: unit.prompt || state.taskName }));
        const choices = frame.choiceButtons(unit.choices, "", (value) => choose(unit.index, value));
        choices.removeAttribute("aria-label");
        choices.setAttribute("aria-labelledby", "q-" + unit.index + " " + promptId);
        block.append(choices);
        let note = null;
        if (state.noteRequired) {
          const noteId = "note-" + unit.index;
          note = frame.element("input", { type: "text", id: noteId, className: "note", maxlength: String(state.maxNoteChars), "aria-keyshortcuts": "e" });
          note.value = notes.get(unit.index) || "";
          note.addEventListener("input", () => {
            if (note.value.trim()) notes.set(unit.index, note.value);
            else notes.delete(unit.index);
            frame.changed();
          });
          note.addEventListener("keydown", (event) => {
            if (event.key === "Enter" && !event.ctrlKey && !event.metaKey) {
              event.preventDefault();
              advance();
            }
          });
          block.append(frame.element("label", { for: noteId, className: "note-label" }, ["Why? A short explanation (required) ", frame.element("kbd", { text: "e" })]), note);
        }
        block.addEventListener("focusin", () => setCurrent(unit.index, false));
        card.append(block);
        blocks.set(unit.index, { block, choices, note });
      }
      questionsEl.append(card);
    });

    // The questions that apply given the answers so far, from each unit's `requires` in the state (the
    // server decides the same way in TaskDefinition.applicable).
    function asked() {
      const result = [];
      const open = new Set();
      for (const unit of units) {
        if (unit.requires) {
          const [parent, triggers] = unit.requires;
          if (!open.has(parent) || !triggers.includes(labels.get(parent))) continue;
        }
        open.add(unit.index);
        result.push(unit);
      }
      return result;
    }
    let current = null;

    function refresh() {
      const visible = new Set(asked().map((u) => u.index));
      for (const [index, parts] of blocks) {
        parts.block.hidden = !visible.has(index);
        frame.pressChoice(parts.choices, labels.get(index));
        parts.block.classList.toggle("done", labels.has(index) && (!state.noteRequired || notes.has(index)));
      }
      // Answers to questions that no longer apply are dropped, as the server would refuse them.
      for (const index of Array.from(labels.keys())) if (!visible.has(index)) labels.delete(index);
      return visible;
    }
    function setCurrent(index, focus) {
      current = index;
      for (const [i, parts] of blocks) parts.block.classList.toggle("current", i === index);
      const unit = byIndex.get(index);
      for (const el of summaryEl.querySelectorAll(".sentence-mark")) {
        el.classList.toggle("current", el.dataset.sentence === String(unit.sentence !== undefined ? unit.sentence : unit.index));
      }
      if (focus) {
        const parts = blocks.get(index);
        (parts.choices.querySelector('[aria-pressed="true"]') || parts.choices.querySelector(".choice")).focus();
      }
    }
    function needsWork(unit) {
      return !labels.has(unit.index) || (state.noteRequired && !notes.has(unit.index));
    }
    function advance() {
      const list = asked();
      const position = list.findIndex((u) => u.index === current);
      const rest = list.slice(position + 1).concat(list.slice(0, position + 1));
      const open = rest.find(needsWork);
      if (!open) return frame.focusSubmit();
      if (open.index === current && labels.has(current)) return; // its explanation is still to write
      setCurrent(open.index, true);
    }
    function choose(index, value) {
      labels.set(index, value);
      setCurrent(index, false);
      refresh();
      frame.changed();
      // The explanation comes next, but the focus stays out of it until the annotator presses e: a
      // shortcut pressed now must act, not become the first letter of the explanation.
      if (blocks.get(index).note && !notes.has(index)) frame.announce("Now write why: press e.");
      else advance();
    }
    function move(step) {
      const list = asked();
      if (!list.length) return;
      const position = list.findIndex((u) => u.index === current);
      const next = position === -1 ? 0 : (position + step + list.length) % list.length;
      setCurrent(list[next].index, true);
    }
    function chooseByKey(key) {
      if (current === null) return false;
      const choice = byIndex.get(current).choices.find((c) => c.key === key);
      if (!choice) return false;
      choose(current, choice.value);
    }

    refresh();
    const keys = Array.from(new Set(units.flatMap((u) => u.choices.map((c) => c.key)))).sort();
    return {
      keys: [
        { keys: ["↓", "j"], label: "next question", run: () => move(1) },
        { keys: ["↑", "k"], label: "previous question", run: () => move(-1) },
        {
          keys,
          label: "choose the answer with that number for the current question (the buttons show the numbers)",
          run: (event) => chooseByKey(event.key),
        },
        ...(state.noteRequired
          ? [
              { keys: ["e"], label: "write the explanation of the current question", run: () => current !== null && blocks.get(current).note.focus() },
              { keys: ["Enter"], label: "in an explanation: go on to the next question" },
            ]
          : []),
      ],
      leaveField(field) {
        if (field.classList.contains("note") && current !== null) setCurrent(current, true);
      },
      start() {
        const open = asked().find(needsWork) || units[0];
        if (open) setCurrent(open.index, false); // the keys act on it without it taking the focus
      },
      showMissing() {
        const open = asked().find(needsWork);
        if (open) setCurrent(open.index, true); // a missing explanation: its question (e writes it)
      },
      snapshot: () => ({ labels: Object.fromEntries(labels), notes: Object.fromEntries(notes) }),
      missing() {
        const list = asked();
        const answers = list.filter((u) => !labels.has(u.index)).length;
        const reasons = state.noteRequired ? list.filter((u) => labels.has(u.index) && !notes.has(u.index)).length : 0;
        const parts = [];
        if (answers) parts.push(answers + " answer" + (answers === 1 ? "" : "s"));
        if (reasons) parts.push(reasons + " explanation" + (reasons === 1 ? "" : "s"));
        return {
          count: units.length ? answers + reasons : 1,
          text: parts.length ? parts.join(" and ") + " still missing" : "All " + list.length + " questions answered",
        };
      },
      submission() {
        const visible = new Set(asked().map((u) => u.index));
        const chosen = Object.fromEntries(Array.from(labels).filter(([i]) => visible.has(i)));
        const body = { labels: chosen };
        if (state.noteRequired) body.notes = Object.fromEntries(Array.from(notes).filter(([i]) => visible.has(i)));
        return body;
      },
    };
  });
})();
