// The adjudication page of a span or edit task's item, decided whole. Spans: every annotator's spans and the
// majority drawn over the summary, one row each (j/k choose a row, c copies its spans into the final draft,
// t takes them as they are); the final draft is edited with a word cursor as in the annotators' span view
// (arrows, Shift+arrows, a type's number marks the selection, replacing what it overlaps; Delete removes)
// and Enter saves it. Edits: j/k choose an annotator's edit, t takes it, e writes one's own. Both: a accepts
// the majority, u leaves the item unresolved. Every post names the version it was made on (409 when stale).
(function () {
  "use strict";

  const { codePointText, element, renderText } = window.FaithAnnoText;
  const { editable, fillHelp, openHelp: showHelp, postDecision, runShortcut } = window.FaithAnnoKeys;

  function boot() {
    const stateEl = document.getElementById("adjudication-state");
    if (!stateEl) return;
    const state = JSON.parse(stateEl.textContent);
    const isSpans = state.kind === "spans";
    const rows = Array.from(document.querySelectorAll("tr.marking"));
    const noteEl = document.getElementById("final-note");
    const statusEl = document.getElementById("adjudication-status");
    const decisionEl = document.getElementById("final-decision");
    const helpEl = document.getElementById("help");
    const types = state.choices;
    let chosen = 0;
    let saving = false;

    function announce(text) {
      statusEl.textContent = text;
    }

    function typeLabel(value) {
      return (types.find((t) => t.value === value) || { label: value }).label;
    }

    function sourceSpans(row) {
      const name = row.dataset.source;
      if (!name) return state.majority.data.spans || [];
      const rater = state.raters.find((r) => r.name === name);
      return rater ? rater.spans || [] : [];
    }

    function drawDecision() {
      const final = state.final;
      if (!final.status) {
        decisionEl.textContent = "none yet";
        return;
      }
      let what = final.label || "unresolved";
      if (isSpans && final.data && final.data.spans) {
        what += final.data.spans.length ? ": " + final.data.spans.map((s) => "“" + s.text + "” (" + typeLabel(s.label).toLowerCase() + ")").join(", ") : " (no span)";
      } else if (final.data && final.data.edited) {
        what += ": “" + final.data.edited + "”" + (final.data.from ? " (from " + final.data.from + ")" : " (own edit)");
      }
      decisionEl.textContent = what + " — " + final.status + (final.method ? ": " + final.method : "") + (final.by ? " by " + final.by : "");
    }

    function choose(position) {
      if (!rows.length) return;
      chosen = Math.max(0, Math.min(rows.length - 1, position));
      rows.forEach((row, i) => {
        if (i === chosen) row.setAttribute("aria-current", "true");
        else row.removeAttribute("aria-current");
      });
      const name = rows[chosen].dataset.source;
      announce("Chosen: " + (name || "the majority") + ".");
    }

    async function save(decision) {
      if (saving) return;
      saving = true;
      try {
        const body = Object.assign({ version: state.final.version, note: noteEl.value }, decision);
        const final = await postDecision(state.saveUrl, body, announce, "decision");
        if (!final) return;
        state.final = final;
        drawDecision();
        announce("Saved: " + (final.label || "unresolved") + ". n opens the next item.");
      } finally {
        saving = false;
      }
    }

    function takeChosen() {
      const name = rows.length ? rows[chosen].dataset.source : "";
      if (name) return save({ annotator: name });
      return save({ accept: "majority" });
    }

    const specific = isSpans ? spanEditor() : editEditor();

    function go(url) {
      if (url) window.location.assign(url);
    }

    const openHelp = () => showHelp(helpEl);

    const keys = [
      { keys: ["j", "↓"], label: "next row (annotator" + (isSpans ? " or the majority)" : ")"), run: () => choose(chosen + 1) },
      { keys: ["k", "↑"], label: "previous row", run: () => choose(chosen - 1) },
      ...specific.keys,
      { keys: ["t"], label: "take the chosen row's " + (isSpans ? "spans" : "edit") + " as the final decision", run: takeChosen },
      { keys: ["a"], label: "accept the majority of the annotators", run: () => save({ accept: "majority" }) },
      { keys: ["u"], label: "leave the item unresolved", run: () => save({ accept: "unresolved" }) },
      { keys: ["m"], label: "write a note on the final decision (Esc leaves the field)", run: () => noteEl.focus() },
      { keys: ["n"], label: "next item of the queue", run: () => go(state.nextUrl) },
      { keys: ["p"], label: "previous item of the queue", run: () => go(state.previousUrl) },
      { keys: ["?"], label: "this help", run: openHelp },
    ];
    fillHelp(document.getElementById("help-rows"), keys, element);

    document.addEventListener("keydown", (event) => {
      if (helpEl.open || event.defaultPrevented) return;
      const target = event.target;
      if (editable(target)) {
        if (specific.fieldKey && specific.fieldKey(event)) {
          event.preventDefault();
          return;
        }
        if (event.key === "Escape") {
          event.preventDefault();
          target.blur();
          (specific.home || rows[chosen] || document.body).focus();
        }
        return;
      }
      runShortcut(keys, event);
    });

    rows.forEach((row, i) => row.addEventListener("click", () => choose(i)));
    document.getElementById("take-chosen").addEventListener("click", takeChosen);
    document.getElementById("accept-majority").addEventListener("click", () => save({ accept: "majority" }));
    document.getElementById("mark-unresolved").addEventListener("click", () => save({ accept: "unresolved" }));
    document.getElementById("open-help").addEventListener("click", openHelp);
    document.getElementById("close-help").addEventListener("click", () => helpEl.close());
    noteEl.value = state.final.note || "";
    drawDecision();
    choose(0);
    if (specific.home) specific.home.focus();

    // --- spans ------------------------------------------------------------------------------------------
    function spanEditor() {
      const words = state.words; // [[start, end], ...] in code points
      const text = codePointText(state.summary);
      const summaryEl = document.getElementById("final-summary");
      const cursorEl = document.getElementById("final-cursor");
      const listEl = document.getElementById("final-span-list");
      let cursor = 0;
      let anchor = null;
      let draft = [];

      // Spans as word ranges {first, last, label}: a span that does not fall on word boundaries takes in the
      // words it touches.
      function toWords(spans) {
        const result = [];
        for (const span of spans) {
          const touched = words.map((w, i) => (w[0] < span.end && span.start < w[1] ? i : -1)).filter((i) => i !== -1);
          if (touched.length) result.push({ first: touched[0], last: touched[touched.length - 1], label: span.label });
        }
        return result.sort((a, b) => a.first - b.first);
      }
      function spanText(span) {
        return text.slice(words[span.first][0], words[span.last][1]);
      }
      function asOffsets() {
        return draft.map((s) => ({ start: words[s.first][0], end: words[s.last][1], label: s.label }));
      }

      for (const row of rows) {
        const target = row.querySelector(".marking-text");
        const spans = sourceSpans(row);
        renderText(target, state.summary, spans, (span, piece) => element("mark", { className: "span-mark span-" + span.label, title: typeLabel(span.label) }, [piece]));
        const said = spans.length ? spans.map((s) => "“" + text.slice(s.start, s.end) + "” " + typeLabel(s.label).toLowerCase()).join(", ") : "no span";
        row.setAttribute("aria-label", (row.dataset.source || "Majority") + ": " + said);
      }
      renderText(
        summaryEl,
        state.summary,
        words.map(([start, end], i) => ({ start, end, i })),
        (range, piece) => element("span", { className: "w", "data-i": range.i, text: piece })
      );
      const wordEls = Array.from(summaryEl.querySelectorAll(".w"));

      function selection() {
        return anchor !== null ? [Math.min(anchor, cursor), Math.max(anchor, cursor)] : [cursor, cursor];
      }
      function spanAt(i) {
        return draft.findIndex((s) => s.first <= i && i <= s.last);
      }
      function draw() {
        const [first, last] = anchor !== null ? selection() : [-1, -2];
        wordEls.forEach((el, i) => {
          const at = spanAt(i);
          el.className = "w" + (at !== -1 ? " span-mark span-" + draft[at].label : "") + (i === cursor ? " cursor" : "") + (i >= first && i <= last ? " selecting" : "");
        });
        listEl.replaceChildren(
          ...draft.map((span, position) =>
            element("li", { className: "span-" + span.label, "data-start": words[span.first][0], "data-end": words[span.last][1], "data-label": span.label }, [
              element("q", { text: spanText(span) }),
              " " + typeLabel(span.label).toLowerCase() + " ",
              element("button", { type: "button", className: "small", "aria-label": "Remove final span " + (position + 1) + " “" + spanText(span) + "”", text: "Remove", onclick: () => remove(position) }),
            ])
          )
        );
        if (!draft.length) listEl.append(element("li", { className: "muted", text: "No span: the summary is faithful." }));
        const at = spanAt(cursor);
        cursorEl.textContent =
          (anchor !== null ? "Selecting “" + text.slice(words[selection()[0]][0], words[selection()[1]][1]) + "”. " : "") +
          (words.length ? "Word " + (cursor + 1) + " of " + words.length + ": “" + text.slice(words[cursor][0], words[cursor][1]) + "”" : "") +
          (at !== -1 ? ", inside the final " + typeLabel(draft[at].label).toLowerCase() + " span “" + spanText(draft[at]) + "”" : "");
      }
      function move(step, extend) {
        if (!words.length) return;
        if (extend && anchor === null) anchor = cursor;
        if (!extend) anchor = null;
        cursor = Math.max(0, Math.min(words.length - 1, cursor + step));
        draw();
      }
      function markSelection(label) {
        if (!words.length) return false;
        const [first, last] = selection();
        // Adjusting by hand: the new span replaces whatever final spans it overlaps (none may overlap).
        draft = draft.filter((s) => s.last < first || last < s.first);
        draft.push({ first, last, label });
        draft.sort((a, b) => a.first - b.first);
        anchor = null;
        cursor = last;
        draw();
        announce("Marked “" + text.slice(words[first][0], words[last][1]) + "” " + typeLabel(label).toLowerCase() + " in the draft; Enter saves the final spans.");
        return true;
      }
      function remove(position) {
        const [removed] = draft.splice(position, 1);
        draw();
        announce("Removed “" + spanText(removed) + "” from the draft.");
      }
      function copyChosen() {
        const row = rows[chosen];
        draft = toWords(sourceSpans(row));
        anchor = null;
        draw();
        announce("Copied the spans of " + (row.dataset.source || "the majority") + " into the draft; adjust them, then Enter saves.");
        summaryEl.focus();
      }

      summaryEl.addEventListener("click", (event) => {
        const word = event.target.closest(".w");
        if (word) {
          cursor = Number(word.dataset.i);
          anchor = null;
          draw();
        }
      });
      document.getElementById("save-final").addEventListener("click", () => save({ spans: asOffsets() }));
      draft = toWords((state.final.data && state.final.data.spans) || state.majority.data.spans || []);
      draw();
      return {
        home: summaryEl,
        keys: [
          { keys: ["→"], label: "in the final spans: next word", run: () => move(1, false) },
          { keys: ["←"], label: "in the final spans: previous word", run: () => move(-1, false) },
          { keys: ["Shift+→"], label: "extend the selection to the right", run: () => move(1, true) },
          { keys: ["Shift+←"], label: "extend the selection to the left", run: () => move(-1, true) },
          ...types.map((t) => ({ keys: [t.key], label: "mark the selection (or the word at the cursor) " + t.label.toLowerCase() + " in the draft", run: () => markSelection(t.value) })),
          { keys: ["Delete", "Backspace"], label: "remove the draft span at the cursor", run: () => (spanAt(cursor) === -1 ? false : remove(spanAt(cursor))) },
          { keys: ["c"], label: "copy the chosen row's spans into the draft", run: copyChosen },
          { keys: ["Enter"], label: "save the draft as the final spans", run: () => save({ spans: asOffsets() }) },
        ],
      };
    }

    // --- edits ------------------------------------------------------------------------------------------
    function editEditor() {
      const ownEl = document.getElementById("own-edit");
      const labelEl = document.getElementById("own-edit-label");
      function saveOwn() {
        return save({ edit: { text: ownEl.value, label: labelEl.value, note: noteEl.value } });
      }
      function startOwn() {
        const row = rows[chosen];
        const rater = row && state.raters.find((r) => r.name === row.dataset.source);
        if (!ownEl.value) ownEl.value = rater ? rater.edit.text : state.summary;
        if (rater) labelEl.value = rater.edit.label;
        ownEl.focus();
      }
      document.getElementById("save-own-edit").addEventListener("click", saveOwn);
      if (state.final.data && state.final.data.edited) {
        ownEl.value = state.final.data.edited;
        labelEl.value = state.final.label;
      }
      return {
        home: rows[0] || null,
        keys: [
          { keys: ["Enter"], label: "take the chosen edit as the final edit", run: takeChosen },
          { keys: ["e"], label: "write your own edit, starting from the chosen one (Ctrl+Enter saves it)", run: startOwn },
        ],
        // Ctrl+Enter in the own edit saves it; every other key there is typed text.
        fieldKey: (event) => {
          if (event.target === ownEl && event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
            saveOwn();
            return true;
          }
          return false;
        },
      };
    }
  }

  document.addEventListener("DOMContentLoaded", boot);
})();
