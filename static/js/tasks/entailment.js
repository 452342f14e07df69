// Top-k entailment task (thesis 5.1, Figure 5.6): for each summary sentence its k most similar source
// sentences are highlighted in the full document (and scrolled into view); a five-point scale says how
// many of the sentence's facts they hold.
(function () {
  "use strict";

  FaithAnno.register("entailment", (frame) => {
    const state = frame.state;
    const units = state.units;
    const sourceEl = document.getElementById("source");
    const infoEl = document.getElementById("focus-info");
    const position = (unit) => units.indexOf(unit) + 1;
    // A condition without the metric's evidence: no source sentence is highlighted.
    const evidence = state.metricEvidence !== false;

    const sentences = (state.documentSentences || []).map(([start, end], index) => ({ start, end, index }));
    frame.renderText(sourceEl, state.document, sentences, (range, text) =>
      frame.element("span", { className: "src-sentence", "data-sentence": range.index, text })
    );

    return frame.unitButtons({
      container: document.getElementById("summary"),
      className: "unit sentence-unit",
      groupLabel: evidence
        ? "How many facts of the current sentence are in the highlighted source sentences"
        : "How many facts of the current sentence are in the source document",
      describe: (unit) => "Sentence " + position(unit) + ": " + unit.text,
      labelledClass: "labelled",
      onSelect(unit) {
        for (const el of sourceEl.querySelectorAll(".src-sentence.top")) el.classList.remove("top", "top-1", "top-2", "top-3");
        const top = unit.top || [];
        const lit = [];
        top.forEach((entry, rank) => {
          const el = sourceEl.querySelector('.src-sentence[data-sentence="' + entry.index + '"]');
          if (!el) return;
          el.classList.add("top", "top-" + Math.min(rank + 1, 3));
          el.dataset.rank = String(rank + 1);
          lit.push(el);
        });
        frame.scrollIntoView(lit); // all of them when they fit in the pane, else the most similar one
        infoEl.textContent = evidence
          ? "Sentence " + position(unit) + " of " + units.length + ": " + top.length + " source sentence" + (top.length === 1 ? "" : "s") + " highlighted."
          : "Sentence " + position(unit) + " of " + units.length + ": find its facts in the source document.";
      },
      noun: "sentences",
      nextLabel: "next summary sentence",
      previousLabel: "previous summary sentence",
      choiceLabel: (c) => c.label,
      // The first open sentence is current (the keys act on it) without taking the focus.
      startAtFirstOpen: true,
    }).task;
  });
})();
