// Top-k entailment task (thesis 5.1, Figure 5.6): for each summary sentence its k most similar source
// sentences are highlighted in the full document (and scrolled into view); a five-point scale says how
// many of the sentence's facts they hold.
(function () {
  "use strict";

  FaithAnno.register("entailment", (frame) => {
    const state = frame.state;
    const units = state.units;
    const byIndex = frame.unitByIndex;
    const labels = frame.initialLabels();
    const sourceEl = document.getElementById("source");
    const summaryEl = document.getElementById("summary");
    const infoEl = document.getElementById("focus-info");
    let current = null;

    const sentences = (state.documentSentences || []).map(([start, end], index) => ({ start, end, index }));
    frame.renderText(sourceEl, state.document, sentences, (range, text) =>
      frame.element("span", { className: "src-sentence", "data-sentence": range.index, text })
    );
    frame.renderText(
      summaryEl,
      state.summary,
      units.map((unit) => ({ start: unit.start, end: unit.end, unit })),
      (range, text) =>
        frame.element("button", {
          type: "button",
          className: "unit sentence-unit",
          "data-index": range.unit.index,
          text,
          onfocus: () => select(range.unit.index),
          onclick: () => select(range.unit.index),
        })
    );
    const choices = frame.choiceButtons(state.choices, "How many facts of the current sentence are in the highlighted source sentences", (value) => choose(value));
    document.getElementById("choices-slot").replaceWith(choices);
    const choiceEls = Array.from(choices.querySelectorAll(".choice"));
    for (const button of choiceEls) button.disabled = true;

    function unitButton(index) {
      return summaryEl.querySelector('.unit[data-index="' + index + '"]');
    }
    function paint(index) {
      const button = unitButton(index);
      const label = labels.get(index);
      button.classList.remove(...state.choices.map((c) => "label-" + c.value));
      if (label) button.classList.add("label-" + label, "labelled");
      const choice = state.choices.find((c) => c.value === label);
      button.setAttribute("aria-label", "Sentence " + (units.indexOf(byIndex.get(index)) + 1) + ": " + byIndex.get(index).text + ": " + (choice ? choice.label : "no label yet"));
    }
    function select(index) {
      current = index;
      for (const el of summaryEl.querySelectorAll(".unit.current")) el.classList.remove("current");
      unitButton(index).classList.add("current");
      for (const el of sourceEl.querySelectorAll(".src-sentence.top")) el.classList.remove("top", "top-1", "top-2", "top-3");
      const top = byIndex.get(index).top || [];
      let first = null;
      top.forEach((entry, rank) => {
        const el = sourceEl.querySelector('.src-sentence[data-sentence="' + entry.index + '"]');
        if (!el) return;
        el.classList.add("top", "top-" + Math.min(rank + 1, 3));
        el.dataset.rank = String(rank + 1);
        first = first || el;
      });
      frame.scrollIntoView(first);
      infoEl.textContent = "Sentence " + (units.indexOf(byIndex.get(index)) + 1) + " of " + units.length + ": " + top.length + " source sentence" + (top.length === 1 ? "" : "s") + " highlighted.";
      for (const button of choiceEls) button.disabled = false;
      frame.pressChoice(choices, labels.get(index));
    }
    function move(step) {
      if (units.length) unitButton(frame.stepUnit(units, current, step)).focus();
    }
    function choose(value) {
      if (current === null) return false;
      labels.set(current, value);
      paint(current);
      frame.pressChoice(choices, value);
      frame.changed();
      const open = frame.nextUnlabelled(units, labels, current);
      if (open === null) frame.focusSubmit();
      else unitButton(open).focus();
    }

    for (const unit of units) paint(unit.index);
    return {
      keys: [
        { keys: ["→", "j"], label: "next summary sentence", run: () => move(1) },
        { keys: ["←", "k"], label: "previous summary sentence", run: () => move(-1) },
        ...state.choices.map((c) => ({ keys: [c.key], label: c.label, run: () => choose(c.value) })),
      ],
      // The first open sentence is current (the keys act on it) without taking the focus.
      start: () => units.length && select((units.find((u) => !labels.has(u.index)) || units[0]).index),
      snapshot: () => ({ labels: Object.fromEntries(labels) }),
      missing: () => frame.missingLabels(labels, "sentences"),
      submission: () => ({ labels: Object.fromEntries(labels) }),
    };
  });
})();
