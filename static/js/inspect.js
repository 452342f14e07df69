// The inspector and the comparison page: the document is drawn once with its sentences; each summary
// card colours its BERTScore tokens by similarity (hover or focus lights the whole source words that the
// pieces of the token's word align to, protocols/alignment.py), a slider flags tokens below a threshold,
// and the annotators' hallucinated words are underlined. Buttons
// of class "reveal" (QAGS questions, entailment sentences, entities, ...) carry the offsets they point
// at in data attributes and highlight them in the document and in a copy of the summary.
(function () {
  "use strict";

  const { alignmentText, element, renderLayers, similarityText } = window.FaithAnnoText;

  function readJson(id, fallback) {
    const el = document.getElementById(id);
    return el ? JSON.parse(el.textContent) : fallback;
  }

  // Scroll `container` (not the page) so that `target` is visible.
  function scrollWithin(container, target) {
    if (!container || !target) return;
    const box = container.getBoundingClientRect();
    const rect = target.getBoundingClientRect();
    if (rect.top < box.top || rect.bottom > box.bottom) {
      container.scrollTop += rect.top - box.top - box.height / 3;
    }
  }

  // -- the document ----------------------------------------------------------------------------------
  const documentEl = document.getElementById("document");
  const documentText = readJson("document-text", "") || "";
  const sentences = readJson("document-sentences", []).map(([start, end], index) => ({ start, end, index }));

  function showInDocument(marks) {
    if (!documentEl || !documentText) return [];
    const drawn = renderLayers(documentEl, documentText, sentences, marks, (range) =>
      element("span", { className: "src-sentence", "data-sentence": range.index, "data-number": range.index + 1 })
    );
    scrollWithin(documentEl, drawn[0]);
    return drawn;
  }
  showInDocument([]);

  // -- BERTScore tokens, threshold and human spans of one summary --------------------------------------
  function colour(similarity) {
    if (typeof similarity !== "number") return "";
    const height = Math.max(0, Math.min(1, (similarity - 0.6) / 0.4));
    return "rgba(235, 120, 20, " + (0.75 * (1 - height) + 0.04).toFixed(2) + ")";
  }

  function setupSummary(side, state) {
    const container = document.getElementById("summary-" + side);
    if (!container || !state.tokens.length) return;
    const info = document.getElementById("token-info-" + side);
    const slider = document.getElementById("threshold-" + side);
    const valueEl = document.getElementById("threshold-value-" + side);
    const flaggedEl = document.getElementById("flagged-" + side);
    const annotators = state.humanAnnotators;
    const humanWords = state.humanWords;
    const tokens = state.tokens.map((token, index) => Object.assign({ index }, token));
    const words = state.words || [];
    let focused = null;

    const marks = humanWords.map((word) => ({
      start: word.start,
      end: word.end,
      className: "human human-" + Math.max(1, Math.ceil((4 * word.marked) / Math.max(annotators, 1))),
      title: "marked hallucinated by " + word.marked + " of " + annotators + " annotators",
    }));
    function markedBy(token) {
      const word = humanWords.find((w) => w.start < token.end && token.start < w.end);
      return word ? word.marked : 0;
    }
    renderLayers(container, state.summary, tokens, marks, (token) => {
      const similarity = typeof token.similarity === "number" ? token.similarity.toFixed(2) : "none";
      const el = element("span", {
        className: "tok",
        tabindex: token.index === 0 ? "0" : "-1",
        "data-token": token.index,
        "data-similarity": typeof token.similarity === "number" ? token.similarity : null,
        "aria-label": token.text + ": similarity " + similarity + ", aligned to " + (token.aligned_text || "no source token"),
        onmouseenter: () => light(token.index),
        onmouseleave: () => light(focused),
        onfocus: () => {
          focused = token.index;
          for (const other of container.querySelectorAll(".tok[tabindex='0']")) other.tabIndex = -1;
          el.tabIndex = 0;
          light(token.index);
        },
      });
      el.style.backgroundColor = colour(token.similarity);
      return el;
    });
    const tokenEls = Array.from(container.querySelectorAll(".tok"));

    function light(index) {
      for (const el of container.querySelectorAll(".tok.current")) el.classList.remove("current");
      if (index === null || index === undefined) {
        showInDocument([]);
        info.textContent = "";
        return;
      }
      const token = tokens[index];
      tokenEls[index].classList.add("current");
      // The whole source words of the token's word (all its pieces), named with each piece's similarity;
      // a token outside every word (or an explanation without words) shows its own aligned token.
      const word = typeof token.word === "number" ? words[token.word] : null;
      let parts;
      if (word) {
        for (const other of tokens) {
          if (other.word === token.word && other.index !== index) tokenEls[other.index].classList.add("current");
        }
        showInDocument(word.sources.map(([start, end]) => ({ start, end, className: "lit" })));
        parts = [alignmentText(word)];
        if (word.pieces.length > 1) parts.push("this piece “" + token.text + "” " + similarityText(token.similarity));
      } else {
        const aligned = token.aligned;
        showInDocument(aligned ? [{ start: aligned[0], end: aligned[1], className: "lit" }] : []);
        parts = [
          "“" + token.text + "” → “" + (token.aligned_text || "no source token") + "” (token)",
          "similarity " + similarityText(token.similarity),
        ];
      }
      if (tokenEls[index].classList.contains("flagged")) parts.push("below the threshold");
      if (annotators) parts.push("marked by " + markedBy(token) + " of " + annotators + " annotators");
      info.textContent = parts.join(" · ");
    }

    container.addEventListener("keydown", (event) => {
      const steps = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };
      let target = null;
      if (event.key in steps && focused !== null) target = (focused + steps[event.key] + tokens.length) % tokens.length;
      else if (event.key === "Home") target = 0;
      else if (event.key === "End") target = tokens.length - 1;
      if (target === null) return;
      event.preventDefault();
      tokenEls[target].focus();
    });

    function applyThreshold() {
      const threshold = Number(slider.value);
      let flagged = 0;
      let agreed = 0;
      tokens.forEach((token, index) => {
        const below = typeof token.similarity === "number" && token.similarity < threshold;
        tokenEls[index].classList.toggle("flagged", below);
        if (below) {
          flagged += 1;
          if (markedBy(token)) agreed += 1;
        }
      });
      valueEl.textContent = threshold.toFixed(2);
      let text = flagged + " of " + tokens.length + " tokens flagged (similarity below " + threshold.toFixed(2) + ")";
      if (annotators) text += "; " + agreed + " of them in words annotators marked";
      flaggedEl.textContent = text;
      flaggedEl.dataset.flagged = String(flagged);
    }
    if (slider) {
      slider.addEventListener("input", applyThreshold);
      applyThreshold();
    }
  }

  for (const card of document.querySelectorAll(".summary-card[data-side]")) {
    const side = card.dataset.side;
    const state = readJson("inspect-state-" + side, null);
    if (state) setupSummary(side, state);
  }

  // -- buttons that point at offsets ---------------------------------------------------------------
  function parseRanges(raw) {
    return JSON.parse(raw || "[]").map(([start, end, className]) => ({ start, end, className: className || "answer" }));
  }
  for (const button of document.querySelectorAll("button.reveal")) {
    button.addEventListener("click", () => {
      for (const other of document.querySelectorAll("button.reveal[aria-pressed='true']")) {
        other.setAttribute("aria-pressed", "false");
      }
      button.setAttribute("aria-pressed", "true");
      showInDocument(parseRanges(button.dataset.sourceRanges));
      const target = button.dataset.summaryTarget && document.getElementById(button.dataset.summaryTarget);
      if (target) {
        if (target.dataset.original === undefined) target.dataset.original = target.textContent;
        renderLayers(target, target.dataset.original, [], parseRanges(button.dataset.summaryRanges), () => null);
      }
      const info = button.dataset.infoTarget && document.getElementById(button.dataset.infoTarget);
      if (info) info.textContent = button.dataset.info || "";
    });
  }
})();
