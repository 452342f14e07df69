// Drawing texts with highlighted ranges, shared by the annotation task views (frame.js) and the
// inspector (inspect.js). Offsets from the server are 0-based, end-exclusive and count Unicode code
// points; JavaScript strings count UTF-16 units, so every slice goes through codePointText.
(function () {
  "use strict";

  function codePointText(text) {
    const points = Array.from(text);
    return {
      length: points.length,
      slice(start, end) {
        return points.slice(start, end).join("");
      },
    };
  }

  function element(tag, attributes, children) {
    const el = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "text") el.textContent = value;
      else if (name === "className") el.className = value;
      else if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
      else el.setAttribute(name, value === true ? "" : value);
    }
    for (const child of children || []) el.append(child);
    return el;
  }

  // Draw `text` into `container`, wrapping each range {start, end} in makeElement(range, rangeText).
  function renderText(container, text, ranges, makeElement) {
    const points = codePointText(text);
    const sorted = ranges.slice().sort((a, b) => a.start - b.start || a.end - b.end);
    const fragment = document.createDocumentFragment();
    let position = 0;
    for (const range of sorted) {
      if (range.start < position) continue; // overlapping ranges cannot be drawn twice
      if (range.start > position) fragment.append(points.slice(position, range.start));
      fragment.append(makeElement(range, points.slice(range.start, range.end)));
      position = range.end;
    }
    fragment.append(points.slice(position, points.length));
    container.replaceChildren(fragment);
  }

  // Draw `text` in two layers: `blocks` (non-overlapping ranges, e.g. sentences or tokens) become the
  // elements makeBlock(range) returns; `marks` ({start, end, className, title}) may overlap each other and
  // the blocks: the text is cut at every boundary and each piece covered by marks becomes a <mark> with
  // all their classes. Returns the <mark> elements in text order.
  function renderLayers(container, text, blocks, marks, makeBlock) {
    const points = Array.from(text);
    const clamp = (value) => Math.max(0, Math.min(points.length, value));
    const cuts = new Set([0, points.length]);
    for (const range of blocks.concat(marks)) {
      cuts.add(clamp(range.start));
      cuts.add(clamp(range.end));
    }
    const bounds = Array.from(cuts).sort((a, b) => a - b);
    const sortedBlocks = blocks.slice().sort((a, b) => a.start - b.start || a.end - b.end);
    const fragment = document.createDocumentFragment();
    const drawn = [];
    let next = 0;
    let open = null;
    for (let i = 0; i < bounds.length - 1; i++) {
      const start = bounds[i];
      const end = bounds[i + 1];
      if (open && start >= open.range.end) open = null;
      while (next < sortedBlocks.length && sortedBlocks[next].end <= start) next++;
      if (!open && next < sortedBlocks.length && sortedBlocks[next].start <= start) {
        open = { range: sortedBlocks[next], el: makeBlock(sortedBlocks[next]) };
        fragment.append(open.el);
        next++;
      }
      const covering = marks.filter((mark) => mark.start < end && start < mark.end);
      let node = points.slice(start, end).join("");
      if (covering.length) {
        const titles = covering.map((mark) => mark.title).filter(Boolean);
        node = element("mark", { className: covering.map((mark) => mark.className).join(" "), title: titles.join("; ") || null }, [node]);
        drawn.push(node);
      }
      (open ? open.el : fragment).append(node);
    }
    container.replaceChildren(fragment);
    return drawn;
  }

  function similarityText(value) {
    return typeof value === "number" ? value.toFixed(2) : "none";
  }

  // What a BERTScore word is lit to, in words (the task view's and the inspector's status line). `word` is
  // the server's word-level alignment (protocols/alignment.py alignment_state): the whole source words, the
  // word's similarity (its lowest piece) and each piece's similarity, e.g.
  // "“measles” → “measles” (0.88, lowest piece; lit in 2 places); pieces: me 0.88, as 0.93, les 0.92".
  function alignmentText(word) {
    const names = Array.from(new Set(word.sources.map((source) => source[2])));
    const details = [similarityText(word.score)];
    if (word.pieces.length > 1) details[0] += ", lowest piece";
    if (word.sources.length > names.length) details.push("lit in " + word.sources.length + " places");
    const target = names.length ? "“" + names.join("”, “") + "”" : "a special token";
    let text = "“" + word.text + "” → " + target + " (" + details.join("; ") + ")";
    if (word.pieces.length > 1) {
      text += "; pieces: " + word.pieces.map((piece) => piece.text + " " + similarityText(piece.similarity)).join(", ");
    }
    return text;
  }

  window.FaithAnnoText = { alignmentText, codePointText, element, renderText, renderLayers, similarityText };
})();
