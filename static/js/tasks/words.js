// BERTScore word task (thesis 5.1, Figure 5.5): each content word of the summary is judged against the
// source word BERTScore aligned it to; focusing a word lights its source word up.
(function () {
  "use strict";

  FaithAnno.register("words", (frame) => {
    const state = frame.state;
    const units = state.units;
    const byIndex = frame.unitByIndex;
    const sourceEl = document.getElementById("source");
    const infoEl = document.getElementById("focus-info");

    const sourceRanges = new Map();
    for (const unit of units) {
      for (const [start, end] of unit.aligned || []) sourceRanges.set(start + "-" + end, { start, end });
    }
    frame.renderText(sourceEl, state.document, Array.from(sourceRanges.values()), (range, text) =>
      frame.element("span", { className: "src-token", "data-range": range.start + "-" + range.end, text })
    );

    function light(index) {
      for (const el of sourceEl.querySelectorAll(".src-token.lit")) el.classList.remove("lit");
      if (index === null || index === undefined) return;
      const lit = [];
      for (const [start, end] of byIndex.get(index).aligned || []) {
        const el = sourceEl.querySelector('.src-token[data-range="' + start + "-" + end + '"]');
        if (el) {
          el.classList.add("lit");
          lit.push(el);
        }
      }
      frame.scrollIntoView(lit);
    }

    const view = frame.unitButtons({
      container: document.getElementById("summary"),
      className: "unit",
      buttonAttributes: (unit) => ({
        onmouseenter: () => light(unit.index),
        onmouseleave: () => light(view.current()),
      }),
      groupLabel: "Judgement for the focused word",
      describe: (unit) => unit.text + ", aligned to " + (unit.aligned_text || "a special token"),
      onSelect(unit) {
        light(unit.index);
        const similarity = typeof unit.similarity === "number" ? " (similarity " + unit.similarity.toFixed(2) + ")" : "";
        infoEl.textContent =
          "Summary word “" + unit.text + "” ↔ source “" + (unit.aligned_text || "special token") + "”" + similarity;
      },
      showAgainWhenDone: true,
      noun: "words",
      nextLabel: "next word (Tab moves through every control)",
      previousLabel: "previous word (Shift+Tab goes back)",
      choiceLabel: (c) => c.label + " (then the next word without a label)",
    });
    if (!units.length) infoEl.textContent = "This item has no words to judge.";
    return view.task;
  });
})();
