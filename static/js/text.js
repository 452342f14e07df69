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

  window.FaithAnnoText = { codePointText, element, renderText, renderLayers };
})();
