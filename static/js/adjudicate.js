// The adjudication page: one item's units with every annotator's label; the keyboard moves between
// units, picks a label, saves it (Enter) or accepts the majority, the aggregated label or "unresolved" in
// one key, then moves on. Every post names the version of the final label it was made on, so a stale page
// or a replayed post changes nothing (the API, posted to under the session, answers 409; the page says to reload).
(function () {
  "use strict";

  const { element } = window.FaithAnnoText;
  const { editable, fillHelp, openHelp: showHelp, postDecision, runShortcut } = window.FaithAnnoKeys;

  function boot() {
    const stateEl = document.getElementById("adjudication-state");
    if (!stateEl) return;
    const state = JSON.parse(stateEl.textContent);
    const rows = Array.from(document.querySelectorAll("tr.adjudication-unit"));
    const byIndex = new Map(state.units.map((unit) => [unit.index, unit]));
    const noteEl = document.getElementById("final-note");
    const statusEl = document.getElementById("adjudication-status");
    const helpEl = document.getElementById("help");
    let current = 0;
    let pending = null; // the label picked for the current unit, not saved yet
    let saving = false;

    function announce(text) {
      statusEl.textContent = text;
    }

    function unitOf(row) {
      return byIndex.get(Number(row.dataset.unit));
    }

    function showPending() {
      rows.forEach((row, i) => {
        for (const button of row.querySelectorAll("button.choice")) {
          button.setAttribute("aria-pressed", String(i === current && button.dataset.value === pending));
        }
      });
    }

    function focusUnit(position) {
      if (!rows.length) return;
      current = Math.max(0, Math.min(rows.length - 1, position));
      pending = null;
      rows.forEach((row, i) => {
        if (i === current) row.setAttribute("aria-current", "true");
        else row.removeAttribute("aria-current");
      });
      const unit = unitOf(rows[current]);
      noteEl.value = unit.final.note || "";
      // The inspector's script (inspect.js) highlights the unit in the summary and its evidence in the document.
      const reveal = rows[current].querySelector("button.reveal");
      if (reveal) reveal.click();
      rows[current].focus();
      showPending();
      const final = unit.final.status ? unit.final.label || "none" : "none yet";
      announce("Unit " + unit.index + ": " + unit.text + ". Final label: " + final + ".");
    }

    function pick(value) {
      const unit = unitOf(rows[current]);
      if (!unit.choices.some((choice) => choice.value === value)) return false;
      pending = value;
      showPending();
      announce("Picked " + value + " for unit " + unit.index + "; Enter saves it.");
      return true;
    }

    function drawFinal(row, final) {
      const cell = row.querySelector("td.final");
      const badge = final.status + (final.method ? ": " + final.method : "") + (final.by ? " by " + final.by : "");
      const parts = [element("strong", { text: final.label || "–" }), " ", element("span", { className: "badge", text: badge })];
      if (final.note) parts.push(element("br"), element("span", { className: "small muted", text: "“" + final.note + "”" }));
      cell.replaceChildren(...parts);
    }

    async function save(decision) {
      if (saving || !rows.length) return;
      const row = rows[current];
      const unit = unitOf(row);
      saving = true;
      try {
        const body = Object.assign({ unit_index: unit.index, version: unit.final.version, note: noteEl.value }, decision);
        const final = await postDecision(state.saveUrl, body, announce, "final label");
        if (!final) return;
        unit.final = final;
        drawFinal(row, final);
        if (current + 1 < rows.length) {
          focusUnit(current + 1);
          announce("Saved unit " + unit.index + " as " + (final.label || "unresolved") + ". " + statusEl.textContent);
        } else {
          pending = null;
          showPending();
          announce("Saved unit " + unit.index + " as " + (final.label || "unresolved") + ". That was the last unit; n opens the next item.");
        }
      } finally {
        saving = false;
      }
    }

    function saveOrMove() {
      if (pending !== null) save({ label: pending });
      else focusUnit(current + 1);
    }

    function go(url) {
      if (url) window.location.assign(url);
    }

    const openHelp = () => showHelp(helpEl);

    const choiceKeys = new Map();
    for (const unit of state.units) for (const choice of unit.choices) if (choice.key) choiceKeys.set(choice.key, true);
    const keys = [
      { keys: ["j", "↓"], label: "next unit", run: () => focusUnit(current + 1) },
      { keys: ["k", "↑"], label: "previous unit", run: () => focusUnit(current - 1) },
      ...Array.from(choiceKeys.keys()).map((key) => ({
        keys: [key],
        label: "pick the label with this number",
        run: () => {
          const choice = unitOf(rows[current]).choices.find((c) => c.key === key);
          return choice ? pick(choice.value) : false;
        },
      })),
      { keys: ["Enter"], label: "save the picked label and go to the next unit (nothing picked: just go on)", run: saveOrMove },
      { keys: ["a"], label: "accept the majority of the annotators and go on", run: () => save({ accept: "majority" }) },
      { keys: ["g"], label: "accept the aggregated (crowd model) label and go on", run: () => save({ accept: "aggregated" }) },
      { keys: ["u"], label: "leave the unit unresolved and go on", run: () => save({ accept: "unresolved" }) },
      { keys: ["m"], label: "write a note on the final label (Esc leaves the field)", run: () => noteEl.focus() },
      { keys: ["n"], label: "next item of the queue", run: () => go(state.nextUrl) },
      { keys: ["p"], label: "previous item of the queue", run: () => go(state.previousUrl) },
      { keys: ["?"], label: "this help", run: openHelp },
    ];
    fillHelp(document.getElementById("help-rows"), keys, element);

    document.addEventListener("keydown", (event) => {
      if (helpEl.open || event.defaultPrevented) return; // the dialog handles Esc; the summary's tokens their arrows
      const target = event.target;
      if (editable(target)) {
        if (event.key === "Escape") {
          event.preventDefault();
          target.blur();
          rows[current] && rows[current].focus();
        }
        return;
      }
      runShortcut(keys, event);
    });

    rows.forEach((row, i) => {
      row.addEventListener("click", (event) => {
        if (i !== current) focusUnit(i);
        const button = event.target.closest("button.choice");
        if (button) pick(button.dataset.value);
      });
    });
    document.getElementById("save-final").addEventListener("click", saveOrMove);
    document.getElementById("accept-majority").addEventListener("click", () => save({ accept: "majority" }));
    document.getElementById("accept-aggregated").addEventListener("click", () => save({ accept: "aggregated" }));
    document.getElementById("mark-unresolved").addEventListener("click", () => save({ accept: "unresolved" }));
    document.getElementById("open-help").addEventListener("click", openHelp);
    document.getElementById("close-help").addEventListener("click", () => helpEl.close());
    focusUnit(0);
  }

  document.addEventListener("DOMContentLoaded", boot);
})();
