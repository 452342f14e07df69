// Maynez et al.'s protocol: mark the hallucinated spans of the summary, each intrinsic or extrinsic.
// Spans snap to words and are stored as character offsets into the summary (code points, end exclusive).
// Mouse: drag over words. Keyboard: the summary box has a word cursor; Shift+arrows extend a selection.
(function () {
  "use strict";

  FaithAnno.register("spans", (frame) => {
    const state = frame.state;
    const words = state.words; // [[start, end], ...] in code points
    const types = state.choices; // intrinsic / extrinsic
    const summaryEl = document.getElementById("summary");
    const cursorEl = document.getElementById("span-cursor");
    const listEl = document.getElementById("span-list");
    const emptyEl = document.getElementById("no-spans");
    const completeEl = document.getElementById("spans-complete");
    document.getElementById("source").textContent = state.document;
    const text = frame.codePointText(state.summary);

    const initial = frame.draft || { spans: frame.saved.spans, complete: frame.state.submitted };
    // spans as word ranges {first, last, label}, kept sorted (and apart, unless the server allows overlap)
    const spans = [];
    for (const span of initial.spans || []) {
      const first = words.findIndex((w) => w[0] === span.start);
      const last = words.findIndex((w) => w[1] === span.end);
      if (first !== -1 && last >= first && types.some((t) => t.value === span.label)) spans.push({ first, last, label: span.label });
    }
    completeEl.checked = Boolean(initial.complete);
    let cursor = 0;
    let anchor = null; // start of a keyboard selection
    let picked = null; // the last words selected by mouse or touch (a tap on a button may clear the selection)

    frame.renderText(
      summaryEl,
      state.summary,
      words.map(([start, end], i) => ({ start, end, i })),
      (range, piece) => frame.element("span", { className: "w", "data-i": range.i, text: piece })
    );
    const wordEls = Array.from(summaryEl.querySelectorAll(".w"));

    const typeGroup = document.getElementById("span-types");
    for (const type of types) {
      typeGroup.append(
        frame.element("button", {
          type: "button",
          className: "choice choice-" + type.value,
          "data-value": type.value,
          "aria-keyshortcuts": type.key,
          onclick: () => markSelection(type.value),
        }, [frame.element("kbd", { text: type.key }), " Mark as " + type.label.toLowerCase()])
      );
    }

    function nativeWords() {
      const native = window.getSelection();
      if (!native || native.isCollapsed || !summaryEl.contains(native.anchorNode) || !summaryEl.contains(native.focusNode)) return null;
      const touched = wordEls.filter((el) => native.containsNode(el, true)).map((el) => Number(el.dataset.i));
      return touched.length ? [Math.min(...touched), Math.max(...touched)] : null;
    }
    function selection() {
      // The keyboard selection, else the mouse or touch selection in the summary, else the word at the cursor.
      if (anchor !== null) return [Math.min(anchor, cursor), Math.max(anchor, cursor)];
      return nativeWords() || picked || [cursor, cursor];
    }
    document.addEventListener("selectionchange", () => {
      const touched = nativeWords();
      if (touched) picked = touched;
    });
    function spanAt(i) {
      return spans.findIndex((s) => s.first <= i && i <= s.last);
    }
    function spanText(span) {
      return text.slice(words[span.first][0], words[span.last][1]);
    }
    function typeLabel(value) {
      return (types.find((t) => t.value === value) || { label: value }).label;
    }
    function markSelection(label) {
      const [first, last] = selection();
      if (!words.length) return;
      const clashing = spans.filter((s) => s.first <= last && first <= s.last);
      if (clashing.length === 1 && clashing[0].first === first && clashing[0].last === last) {
        clashing[0].label = label; // the same span again: change its type
      } else if (clashing.length && !state.spansMayOverlap) {
        frame.announce("That selection overlaps a marked span; remove the span first (Delete) or select other words.");
        return;
      } else {
        spans.push({ first, last, label });
        spans.sort((a, b) => a.first - b.first);
      }
      anchor = null;
      picked = null;
      cursor = last;
      const native = window.getSelection();
      if (native) native.removeAllRanges();
      completeEl.checked = false; // the list changed: confirm again
      draw();
      frame.changed();
      summaryEl.focus();
    }
    function removeSpan(position) {
      const [removed] = spans.splice(position, 1);
      completeEl.checked = false;
      draw();
      frame.changed();
      frame.announce("Removed the span “" + spanText(removed) + "”.");
    }
    function draw() {
      const [first, last] = anchor !== null ? selection() : [-1, -2];
      wordEls.forEach((el, i) => {
        const at = spanAt(i);
        el.className = "w" + (at !== -1 ? " span-mark span-" + spans[at].label : "") + (i === cursor ? " cursor" : "") + (i >= first && i <= last ? " selecting" : "");
      });
      listEl.replaceChildren(
        ...spans.map((span, position) => {
          const select = frame.element("select", { "aria-label": "Type of span " + (position + 1) + " “" + spanText(span) + "”" });
          for (const type of types) {
            const option = frame.element("option", { value: type.value, text: type.label });
            option.selected = type.value === span.label;
            select.append(option);
          }
          select.addEventListener("change", () => {
            span.label = select.value;
            const focused = document.activeElement === select;
            draw();
            // draw() replaced the select: keep the focus in its successor, or the next key would act as a shortcut.
            if (focused) listEl.querySelectorAll("select")[position].focus();
            frame.changed();
          });
          const remove = frame.element("button", { type: "button", className: "small", "aria-label": "Remove span " + (position + 1) + " “" + spanText(span) + "”", text: "Remove", onclick: () => removeSpan(position) });
          return frame.element("li", { className: "span-" + span.label }, [frame.element("q", { text: spanText(span) }), " ", select, " ", remove]);
        })
      );
      emptyEl.hidden = spans.length > 0;
      const at = spanAt(cursor);
      const word = words.length ? text.slice(words[cursor][0], words[cursor][1]) : "";
      cursorEl.textContent =
        (anchor !== null ? "Selecting “" + text.slice(words[selection()[0]][0], words[selection()[1]][1]) + "”. " : "") +
        (words.length ? "Word " + (cursor + 1) + " of " + words.length + ": “" + word + "”" : "") +
        (at !== -1 ? ", inside the " + typeLabel(spans[at].label).toLowerCase() + " span “" + spanText(spans[at]) + "”" : "");
    }
    function moveCursor(step, extend) {
      if (!words.length) return;
      picked = null;
      if (extend && anchor === null) anchor = cursor;
      if (!extend) anchor = null;
      cursor = Math.max(0, Math.min(words.length - 1, cursor + step));
      draw();
    }

    summaryEl.addEventListener("mouseup", () => {
      anchor = null;
      const native = window.getSelection();
      if (native && !native.isCollapsed) {
        const [first, last] = selection();
        cursor = last;
        cursorEl.textContent = "Selected “" + text.slice(words[first][0], words[last][1]) + "”: press " + types.map((t) => t.key).join(" or ") + ", or a button below, to mark it.";
      }
    });
    summaryEl.addEventListener("click", (event) => {
      const word = event.target.closest(".w");
      const native = window.getSelection();
      if (word && (!native || native.isCollapsed)) {
        cursor = Number(word.dataset.i);
        anchor = null;
        picked = null;
        draw();
      }
    });
    completeEl.addEventListener("change", () => frame.changed());

    draw();
    // The word cursor answers the arrows in the summary, and while nothing has the focus (as on load).
    const inSummary = () => document.activeElement === summaryEl || document.activeElement === document.body;
    return {
      keys: [
        { keys: ["→"], label: "in the summary: next word", run: () => (inSummary() ? moveCursor(1, false) : false) },
        { keys: ["←"], label: "in the summary: previous word", run: () => (inSummary() ? moveCursor(-1, false) : false) },
        { keys: ["Shift+→"], label: "extend the selection to the right", run: () => (inSummary() ? moveCursor(1, true) : false) },
        { keys: ["Shift+←"], label: "extend the selection to the left", run: () => (inSummary() ? moveCursor(-1, true) : false) },
        ...types.map((t) => ({ keys: [t.key], label: "mark the selection (or the word at the cursor) as " + t.label.toLowerCase(), run: () => markSelection(t.value) })),
        { keys: ["Delete", "Backspace"], label: "remove the span at the cursor", run: () => (spanAt(cursor) === -1 ? false : removeSpan(spanAt(cursor))) },
        { keys: ["s"], label: "go to the summary", run: () => summaryEl.focus() },
        { keys: ["f"], label: "confirm that every hallucination is marked", run: () => { completeEl.checked = !completeEl.checked; frame.changed(); } },
      ],
      snapshot: () => ({ spans: spans.map((s) => ({ start: words[s.first][0], end: words[s.last][1], label: s.label })), complete: completeEl.checked }),
      missing() {
        return completeEl.checked
          ? { count: 0, text: spans.length ? spans.length + " span" + (spans.length === 1 ? "" : "s") + " marked" : "No hallucination marked: a faithful summary" }
          : { count: 1, text: "Confirm that every hallucinated span is marked (f)" };
      },
      showMissing: () => completeEl.focus(),
      submission: () => ({ spans: spans.map((s) => ({ start: words[s.first][0], end: words[s.last][1], label: s.label })) }),
    };
  });
})();
