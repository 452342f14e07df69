// The annotation view: highlighted summary units, their aligned source tokens, labels, drafts, shortcuts.
// Plain JavaScript, no build step and no CDN: annotation labs are often offline.
(function () {
  "use strict";

  const state = JSON.parse(document.getElementById("annotate-state").textContent);
  const draftKey = "faithanno:draft:" + state.assignmentId;
  const labels = new Map(Object.entries(state.labels).map(([k, v]) => [Number(k), v]));
  const units = state.units;
  const unitByIndex = new Map(units.map((u) => [u.index, u]));
  const choiceValues = new Set(state.choices.map((c) => c.value));
  const choiceByKey = new Map(state.choices.map((c) => [c.key, c]));

  const sourceEl = document.getElementById("source");
  const summaryEl = document.getElementById("summary");
  const infoEl = document.getElementById("focus-info");
  const commentEl = document.getElementById("comment");
  const submitEl = document.getElementById("submit");
  const remainingEl = document.getElementById("remaining");
  const statusEl = document.getElementById("save-status");
  const helpEl = document.getElementById("help");
  const choiceButtons = Array.from(document.querySelectorAll(".choice"));

  let current = null; // index of the unit being judged
  let activeSeconds = 0;
  let lastActivity = Date.now();

  // -- drafts: every change is kept in the browser until the server has the submission -----------
  function loadDraft() {
    try {
      const draft = JSON.parse(localStorage.getItem(draftKey) || "null");
      if (!draft) return;
      for (const [k, v] of Object.entries(draft.labels || {})) {
        if (unitByIndex.has(Number(k)) && choiceValues.has(v)) labels.set(Number(k), v);
      }
      if (typeof draft.comment === "string") state.comment = draft.comment;
      activeSeconds = Number(draft.seconds) || 0;
      statusEl.textContent = "Restored your unsaved work on this item.";
    } catch (e) {
      localStorage.removeItem(draftKey);
    }
  }

  function saveDraft() {
    const draft = { labels: Object.fromEntries(labels), comment: commentEl.value, seconds: activeSeconds };
    try {
      localStorage.setItem(draftKey, JSON.stringify(draft));
    } catch (e) {
      /* storage full or disabled: the submission still works */
    }
  }

  // -- rendering ---------------------------------------------------------------------------------
  function renderSegments(container, text, ranges, makeElement) {
    const sorted = ranges.slice().sort((a, b) => a.start - b.start || a.end - b.end);
    let position = 0;
    const fragment = document.createDocumentFragment();
    for (const range of sorted) {
      if (range.start < position) continue; // overlapping ranges cannot be drawn twice
      if (range.start > position) fragment.append(text.slice(position, range.start));
      fragment.append(makeElement(range, text.slice(range.start, range.end)));
      position = range.end;
    }
    fragment.append(text.slice(position));
    container.replaceChildren(fragment);
  }

  const sourceRanges = new Map();
  for (const unit of units) {
    for (const [start, end] of unit.aligned || []) sourceRanges.set(start + "-" + end, { start, end });
  }
  renderSegments(sourceEl, state.document, Array.from(sourceRanges.values()), (range, text) => {
    const span = document.createElement("span");
    span.className = "src-token";
    span.dataset.range = range.start + "-" + range.end;
    span.textContent = text;
    return span;
  });

  renderSegments(summaryEl, state.summary, units.map((u) => ({ start: u.start, end: u.end, unit: u })), (range, text) => {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "unit";
    button.dataset.index = range.unit.index;
    button.textContent = text;
    button.addEventListener("focus", () => select(range.unit.index));
    button.addEventListener("mouseenter", () => light(range.unit.index));
    button.addEventListener("mouseleave", () => light(current));
    button.addEventListener("click", () => select(range.unit.index));
    return button;
  });

  function unitButton(index) {
    return summaryEl.querySelector('.unit[data-index="' + index + '"]');
  }

  function choiceLabel(value) {
    const choice = state.choices.find((c) => c.value === value);
    return choice ? choice.label : "no label yet";
  }

  function paintUnit(index) {
    const button = unitButton(index);
    const unit = unitByIndex.get(index);
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
    const unit = unitByIndex.get(index);
    let first = null;
    for (const [start, end] of unit.aligned || []) {
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
    const unit = unitByIndex.get(index);
    const similarity = typeof unit.similarity === "number" ? " (similarity " + unit.similarity.toFixed(2) + ")" : "";
    infoEl.textContent =
      "Summary word “" + unit.text + "” ↔ source “" + (unit.aligned_text || "special token") + "”" + similarity;
    for (const button of choiceButtons) {
      button.disabled = false;
      button.setAttribute("aria-pressed", String(labels.get(index) === button.dataset.value));
    }
  }

  function updateRemaining() {
    const missing = units.filter((u) => !labels.has(u.index)).length;
    submitEl.disabled = missing > 0 || units.length === 0;
    remainingEl.textContent = missing > 0 ? missing + " of " + units.length + " words still to judge" : "All " + units.length + " words judged";
    submitEl.textContent = missing > 0 ? "Submit annotations (" + missing + " left)" : "Submit annotations ▸";
  }

  function move(step) {
    if (!units.length) return;
    const position = current === null ? (step > 0 ? -1 : 0) : units.findIndex((u) => u.index === current);
    const next = (position + step + units.length) % units.length;
    unitButton(units[next].index).focus();
  }

  function nextUnlabelled() {
    const start = current === null ? 0 : units.findIndex((u) => u.index === current) + 1;
    for (let offset = 0; offset < units.length; offset++) {
      const unit = units[(start + offset) % units.length];
      if (!labels.has(unit.index)) return unit.index;
    }
    return null;
  }

  function choose(value) {
    if (current === null) return;
    labels.set(current, value);
    paintUnit(current);
    saveDraft();
    updateRemaining();
    const following = nextUnlabelled();
    if (following === null) {
      select(current);
      submitEl.focus();
    } else {
      unitButton(following).focus();
    }
  }

  // -- submission ----------------------------------------------------------------------------------
  function csrfToken() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  async function submit() {
    if (submitEl.disabled) return;
    submitEl.disabled = true;
    statusEl.textContent = "Saving…";
    try {
      const response = await fetch(state.submitUrl, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
        body: JSON.stringify({ labels: Object.fromEntries(labels), comment: commentEl.value, seconds: activeSeconds }),
        credentials: "same-origin",
      });
      const data = await response.json().catch(() => ({}));
      if (!response.ok) {
        statusEl.textContent = "Not saved: " + ((data.errors || []).join(" ") || response.statusText);
        updateRemaining();
        return;
      }
      localStorage.removeItem(draftKey);
      statusEl.textContent = "Saved.";
      window.location.assign(data.next || state.dashboardUrl);
    } catch (error) {
      statusEl.textContent = "Not saved: the connection failed. Your work is kept in this browser; try again.";
      updateRemaining();
    }
  }

  // -- wiring --------------------------------------------------------------------------------------
  for (const button of choiceButtons) {
    button.addEventListener("click", () => choose(button.dataset.value));
  }
  submitEl.addEventListener("click", submit);
  commentEl.addEventListener("input", saveDraft);

  function go(url) {
    if (url) window.location.assign(url);
  }

  document.addEventListener("keydown", (event) => {
    lastActivity = Date.now();
    const typing = event.target instanceof HTMLTextAreaElement || event.target instanceof HTMLInputElement;
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      submit();
      return;
    }
    if (typing || event.altKey || event.ctrlKey || event.metaKey || helpEl.open) return;
    const choice = choiceByKey.get(event.key);
    if (choice && current !== null) {
      event.preventDefault();
      choose(choice.value);
    } else if (event.key === "ArrowRight" || event.key === "j") {
      event.preventDefault();
      move(1);
    } else if (event.key === "ArrowLeft" || event.key === "k") {
      event.preventDefault();
      move(-1);
    } else if (event.key === "n") {
      go(state.nextUrl);
    } else if (event.key === "p") {
      go(state.previousUrl);
    } else if (event.key === "c") {
      go(state.continueUrl);
    } else if (event.key === "?") {
      event.preventDefault();
      helpEl.showModal();
    }
  });

  // Active time: seconds while the tab is visible and someone touched it within the last minute.
  for (const name of ["mousemove", "mousedown", "scroll", "touchstart", "wheel"]) {
    window.addEventListener(name, () => (lastActivity = Date.now()), { passive: true });
  }
  window.setInterval(() => {
    if (document.visibilityState === "visible" && Date.now() - lastActivity < 60000) activeSeconds += 1;
  }, 1000);

  // The task description stays closed once an annotator has closed it (they know the steps by then).
  const description = document.querySelector(".task-description");
  const descriptionKey = "faithanno:description-closed";
  if (description) {
    if (localStorage.getItem(descriptionKey) === "1") description.open = false;
    description.addEventListener("toggle", () => localStorage.setItem(descriptionKey, description.open ? "0" : "1"));
  }

  loadDraft();
  commentEl.value = state.comment || "";
  for (const unit of units) paintUnit(unit.index);
  updateRemaining();
  if (units.length === 0) {
    infoEl.textContent = "This item has no words to judge.";
  }
})();
