// BERTScore word task (thesis 5.1, Figure 5.5): each content word of the summary is judged against the
// source word BERTScore aligned it to; focusing a word lights up the whole source words its pieces (encoder
// tokens) align to, and the status line and the pieces list say what is lit and each piece's similarity.
// The word-level view comes from the server (protocols/alignment.py), one per unit as `alignment`.
(function () {
  "use strict";

  const { alignmentText, similarityText } = window.FaithAnnoText;

  FaithAnno.register("words", (frame) => {
    const state = frame.state;
    const units = state.units;
    const byIndex = frame.unitByIndex;
    const sourceEl = document.getElementById("source");
    const infoEl = document.getElementById("focus-info");
    const piecesEl = document.getElementById("pieces");
    const piecesTitleEl = document.getElementById("pieces-title");
    const piecesListEl = document.getElementById("pieces-list");
    // A condition without the metric's evidence (studies' conditions): no source word lights up, nothing
    // names an alignment; the annotator judges each word against the source document.
    const evidence = state.metricEvidence !== false;

    const sourceRanges = new Map();
    for (const unit of units) {
      for (const [start, end] of unit.alignment.sources) sourceRanges.set(start + "-" + end, { start, end });
    }
    frame.renderText(sourceEl, state.document, Array.from(sourceRanges.values()), (range, text) =>
      frame.element("span", {
        className: "src-token",
        "data-start": range.start,
        "data-end": range.end,
        text,
      })
    );
    const sourceEls = Array.from(sourceEl.querySelectorAll(".src-token"));

    // The drawn source words that overlap [start, end) (a word drawn inside a longer one is drawn once).
    function drawn(start, end) {
      return sourceEls.filter((el) => Number(el.dataset.start) < end && start < Number(el.dataset.end));
    }

    function light(index) {
      for (const el of sourceEl.querySelectorAll(".src-token.lit")) el.classList.remove("lit");
      if (index === null || index === undefined) return;
      const lit = [];
      for (const [start, end] of byIndex.get(index).alignment.sources) {
        for (const el of drawn(start, end)) {
          el.classList.add("lit");
          if (!lit.includes(el)) lit.push(el);
        }
      }
      frame.scrollIntoView(lit);
    }

    function showPieces(word) {
      piecesEl.hidden = false;
      piecesTitleEl.textContent =
        "Pieces of “" + word.text + "” (" + word.pieces.length + ") and the source word each one aligns to";
      piecesListEl.replaceChildren(
        ...word.pieces.map((piece) => {
          let target = "a special token";
          if (piece.source) {
            target = "“" + piece.source[2] + "”";
            const place = word.sources.findIndex((s) => s[0] === piece.source[0] && s[1] === piece.source[1]);
            if (word.sources.length > 1) target += " (place " + (place + 1) + " of " + word.sources.length + ")";
          }
          return frame.element("li", {
            text: "“" + piece.text + "” → " + target + ", similarity " + similarityText(piece.similarity),
          });
        })
      );
    }

    const view = frame.unitButtons({
      container: document.getElementById("summary"),
      className: "unit",
      buttonAttributes: (unit) => ({
        onmouseenter: () => light(unit.index),
        onmouseleave: () => light(view.current()),
      }),
      groupLabel: "Judgement for the focused word",
      describe: (unit) => (evidence ? unit.text + ", aligned to " + unit.aligned_text : unit.text),
      onSelect(unit) {
        light(unit.index);
        if (!evidence) {
          infoEl.textContent = "Summary word “" + unit.text + "”: judge it against the source document.";
          return;
        }
        infoEl.textContent = "Summary word " + alignmentText(unit.alignment);
        showPieces(unit.alignment);
      },
      showAgainWhenDone: true,
      noun: "words",
      nextLabel: "next word (Tab moves through every control)",
      previousLabel: "previous word (Shift+Tab goes back)",
      choiceLabel: (c) => c.label + " (then the next word without a label)",
    });
    // The pieces list on demand with the keyboard: i opens it (the focus goes to its title, so it is read
    // out) and closes it again (the focus returns to the word).
    function togglePieces() {
      const index = view.current();
      if (index === null || !evidence) return false;
      piecesEl.open = !piecesEl.open;
      if (piecesEl.open) piecesTitleEl.focus();
      else document.querySelector('#summary .unit[data-index="' + index + '"]').focus();
      return true;
    }
    view.task.keys.push({ keys: ["i"], label: "show or hide the pieces of the current word with their similarities", run: togglePieces });
    if (!units.length) infoEl.textContent = "This item has no words to judge.";
    return view.task;
  });
})();
