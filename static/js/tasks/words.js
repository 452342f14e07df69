// BERTScore word task (thesis 5.1, Figure 5.5): each content word of the summary is judged against the
// source word BERTScore aligned it to; focusing a word lights its source word up.
(function () {
  "use strict";

  FaithAnno.register("words", (frame) => {
    const state = frame.state;
    const units = state.units;
    const byIndex = frame.unitByIndex;
    const labels = frame.initialLabels();

    const sourceEl = document.getElementById("source");
    const summaryEl = document.getElementById("summary");
    const infoEl = document.getElementById("focus-info");
    let current = null;

    const sourceRanges = new Map();
    for (const unit of units) {
      for (const [start, end] of unit.aligned || []) sourceRanges.set(start + "-" + end, { start, end });
    }
    frame.renderText(sourceEl, state.document, Array.from(sourceRanges.values()), (range, text) =>
      frame.element("span", { className: "src-token", "data-range": range.start + "-" + range.end, text })
    );
    frame.renderText(
      summaryEl,
      state.summary,
      units.map((unit) => ({ start: unit.start, end: unit.end, unit })),
      (range, text) =>
        frame.element("button", {
          type: "button",
          className: "unit",
          "data-index": range.unit.index,
          text,
          onfocus: () => select(range.unit.index),
          onclick: () => select(range.unit.index),
          onmouseenter: () => light(range.unit.index),
          onmouseleave: () => light(current),
        })
    );
    const choices = frame.choiceButtons(state.choices, "Judgement for the focused word", (value) => choose(value));
    document.getElementById("choices-slot").replaceWith(choices);
    const choiceEls = Array.from(choices.querySelectorAll(".choice"));
    for (const button of choiceEls) button.disabled = true;

    function unitButton(index) {
      return summaryEl.querySelector('.unit[data-index="' + index + '"]');
    }
    function choiceLabel(value) {
      const choice = state.choices.find((c) => c.value === value);
      return choice ? choice.label : "no label yet";
    }
    function paint(index) {
      const button = unitButton(index);
      const unit = byIndex.get(index);
      const label = labels.get(index);
      button.classList.remove(...state.choices.map((c) => "label-" + c.value));
      if (label) button.classList.add("label-" + label);
      button.setAttribute(
        "aria-label",
        unit.text + ", aligned to " + (unit.aligned_text || "a special token") + ": " + choiceLabel(label)
      );
    }
    function light(index) {
      for (const el of sourceEl.querySelectorAll(".src-token.lit")) el.classList.remove("lit");
      if (index === null || index === undefined) return;
      let first = null;
      for (const [start, end] of byIndex.get(index).aligned || []) {
        const el = sourceEl.querySelector('.src-token[data-range="' + start + "-" + end + '"]');
        if (el) {
          el.classList.add("lit");
          first = first || el;
        }
      }
      if (first) first.scrollIntoView({ block: "nearest", inline: "nearest" });
    }
    function select(index) {
      current = index;
      for (const el of summaryEl.querySelectorAll(".unit.current")) el.classList.remove("current");
      unitButton(index).classList.add("current");
      light(index);
      const unit = byIndex.get(index);
      const similarity = typeof unit.similarity === "number" ? " (similarity " + unit.similarity.toFixed(2) + ")" : "";
      infoEl.textContent =
        "Summary word “" + unit.text + "” ↔ source “" + (unit.aligned_text || "special token") + "”" + similarity;
      for (const button of choiceEls) button.disabled = false;
      frame.pressChoice(choices, labels.get(index));
    }
    function move(step) {
      if (units.length) unitButton(frame.stepUnit(units, current, step)).focus();
    }
    function choose(value) {
      if (current === null) return;
      labels.set(current, value);
      paint(current);
      frame.changed();
      const following = frame.nextUnlabelled(units, labels, current);
      if (following === null) {
        select(current);
        frame.focusSubmit();
      } else {
        unitButton(following).focus();
      }
    }

    for (const unit of units) paint(unit.index);
    if (!units.length) infoEl.textContent = "This item has no words to judge.";

    return {
      keys: [
        { keys: ["→", "j"], label: "next word (Tab moves through every control)", run: () => move(1) },
        { keys: ["←", "k"], label: "previous word (Shift+Tab goes back)", run: () => move(-1) },
        ...state.choices.map((c) => ({
          keys: [c.key],
          label: c.label + " (then the next word without a label)",
          run: () => (current === null ? false : choose(c.value)),
        })),
      ],
      snapshot: () => ({ labels: Object.fromEntries(labels) }),
      missing: () => frame.missingLabels(labels, "words"),
      submission: () => ({ labels: Object.fromEntries(labels) }),
    };
  });
})();
