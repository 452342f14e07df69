// The common annotation frame shared by every task view: drafts (in the browser and on the server),
// active time, keyboard shortcuts with their help overlay, the examples modal, submission and item
// navigation. A task view registers a factory with FaithAnno.register(view, factory); the factory gets
// the frame API and returns its task object (see the "task contract" below).
// Plain JavaScript, no build step and no CDN: annotation labs are often offline.
(function () {
  "use strict";

  const factories = {};

  // Saving (postJson, errorText) and the keyboard rules live in keys.js, shared with the adjudication page.
  const { editable, errorText, fillHelp, matches, postJson } = window.FaithAnnoKeys;

  window.FaithAnno = {
    register(view, factory) {
      factories[view] = factory;
    },
    postJson,
    errorText,
  };

  // Text drawing lives in text.js, shared with the inspector.
  const { codePointText, element, renderText } = window.FaithAnnoText;

  // Choice buttons with their shortcut shown and announced; `groupLabel` names the group for screen readers.
  function choiceButtons(choices, groupLabel, onChoose) {
    const group = element("div", { className: "choices", role: "group", "aria-label": groupLabel });
    for (const choice of choices) {
      const button = element("button", {
        type: "button",
        className: "choice choice-" + choice.value,
        "data-value": choice.value,
        "aria-pressed": "false",
        "aria-keyshortcuts": choice.key || null,
      });
      if (choice.key) button.append(element("kbd", { text: choice.key }), " ");
      button.append(choice.label);
      button.addEventListener("click", () => onChoose(choice.value, button));
      group.append(button);
    }
    return group;
  }

  function pressChoice(group, value) {
    for (const button of group.querySelectorAll(".choice")) {
      button.setAttribute("aria-pressed", String(button.dataset.value === value));
    }
  }

  // The unit `step` places after (or before) `current` in `units`, wrapping around.
  function stepUnit(units, current, step) {
    if (!units.length) return null;
    const position = current === null ? (step > 0 ? -1 : 0) : units.findIndex((unit) => unit.index === current);
    return units[(position + step + units.length) % units.length].index;
  }

  // The next unit after `current` without a label, wrapping around; null when all have one.
  function nextUnlabelled(units, labels, current) {
    const start = current === null ? 0 : units.findIndex((unit) => unit.index === current) + 1;
    for (let offset = 0; offset < units.length; offset++) {
      const unit = units[(start + offset) % units.length];
      if (!labels.has(unit.index)) return unit.index;
    }
    return null;
  }

  // The unit-button views (words, entailment): every unit of the summary is a button; focusing or
  // clicking one makes it current, and a choice (button or key) labels the current unit and moves the focus
  // on to the next unit without a label, or to Submit when every unit has one. Returns {task, current()}.
  // options: container, className (of the unit buttons), buttonAttributes(unit) (more attributes of a
  // unit's button), groupLabel (of the choice buttons), describe(unit) (the start of a unit's aria-label;
  // its label follows), labelledClass (a class every labelled unit gets too), onSelect(unit) (what else
  // selecting a unit shows), showAgainWhenDone (select the last unit again when the focus goes to Submit),
  // startAtFirstOpen (on load the first unit without a label is current, without taking the focus), noun
  // (plural, for "3 of 10 words still to judge") and the help texts nextLabel, previousLabel and
  // choiceLabel(choice).
  function unitButtons(frame, options) {
    const { state, unitByIndex } = frame;
    const units = state.units;
    const labels = frame.initialLabels();
    let current = null;

    frame.renderText(
      options.container,
      state.summary,
      units.map((unit) => ({ start: unit.start, end: unit.end, unit })),
      (range, text) =>
        element("button", {
          type: "button",
          className: options.className,
          "data-index": range.unit.index,
          text,
          onfocus: () => select(range.unit.index),
          onclick: () => select(range.unit.index),
          ...(options.buttonAttributes ? options.buttonAttributes(range.unit) : {}),
        })
    );
    const choices = choiceButtons(state.choices, options.groupLabel, (value) => choose(value));
    document.getElementById("choices-slot").replaceWith(choices);
    const choiceEls = Array.from(choices.querySelectorAll(".choice"));
    for (const button of choiceEls) button.disabled = true;

    function unitButton(index) {
      return options.container.querySelector('.unit[data-index="' + index + '"]');
    }
    function paint(index) {
      const button = unitButton(index);
      const label = labels.get(index);
      button.classList.remove(...state.choices.map((c) => "label-" + c.value));
      if (label) button.classList.add("label-" + label);
      if (label && options.labelledClass) button.classList.add(options.labelledClass);
      const choice = state.choices.find((c) => c.value === label);
      button.setAttribute("aria-label", options.describe(unitByIndex.get(index)) + ": " + (choice ? choice.label : "no label yet"));
    }
    function select(index) {
      current = index;
      for (const el of options.container.querySelectorAll(".unit.current")) el.classList.remove("current");
      unitButton(index).classList.add("current");
      options.onSelect(unitByIndex.get(index));
      for (const button of choiceEls) button.disabled = false;
      pressChoice(choices, labels.get(index));
    }
    function move(step) {
      if (units.length) unitButton(stepUnit(units, current, step)).focus();
    }
    function choose(value) {
      if (current === null) return false;
      labels.set(current, value);
      paint(current);
      pressChoice(choices, value);
      frame.changed();
      const open = nextUnlabelled(units, labels, current);
      if (open !== null) {
        unitButton(open).focus();
        return;
      }
      if (options.showAgainWhenDone) select(current);
      frame.focusSubmit();
    }

    for (const unit of units) paint(unit.index);
    const task = {
      keys: [
        { keys: ["→", "j"], label: options.nextLabel, run: () => move(1) },
        { keys: ["←", "k"], label: options.previousLabel, run: () => move(-1) },
        ...state.choices.map((c) => ({ keys: [c.key], label: options.choiceLabel(c), run: () => choose(c.value) })),
      ],
      snapshot: () => ({ labels: Object.fromEntries(labels) }),
      missing: () => frame.missingLabels(labels, options.noun),
      showMissing() {
        const open = nextUnlabelled(units, labels, null);
        if (open !== null) unitButton(open).focus();
      },
      submission: () => ({ labels: Object.fromEntries(labels) }),
    };
    if (options.startAtFirstOpen) {
      task.start = () => units.length && select((units.find((unit) => !labels.has(unit.index)) || units[0]).index);
    }
    return { task, current: () => current };
  }

  // The element that scrolls `el` (its nearest ancestor with a scroll bar), or null.
  function scroller(el) {
    for (let box = el.parentElement; box; box = box.parentElement) {
      const overflow = getComputedStyle(box).overflowY;
      if ((overflow === "auto" || overflow === "scroll") && box.scrollHeight > box.clientHeight) return box;
    }
    return null;
  }

  // Scroll the pane that holds `elements` (one element or several highlights of one unit) so that they are in
  // the part of the pane the annotator sees (the pane may reach below the window's edge), centred there; when
  // they do not fit together, the first one is. Only the pane scrolls, never the page: the judge buttons stay
  // where they are.
  function scrollIntoPane(elements) {
    const shown = (Array.isArray(elements) ? elements : [elements]).filter(Boolean);
    if (!shown.length) return;
    const box = scroller(shown[0]);
    if (!box) return;
    const paneRect = box.getBoundingClientRect();
    let top = Math.max(paneRect.top, 0);
    let bottom = Math.min(paneRect.bottom, window.innerHeight);
    if (bottom - top < 40) [top, bottom] = [paneRect.top, paneRect.bottom]; // the pane is out of sight
    const rects = shown.map((el) => el.getBoundingClientRect());
    let first = Math.min(...rects.map((r) => r.top));
    let last = Math.max(...rects.map((r) => r.bottom));
    if (last - first > bottom - top) [first, last] = [rects[0].top, rects[0].bottom];
    const height = last - first;
    const target = height >= bottom - top ? top : top + (bottom - top - height) / 2;
    box.scrollTop += first - target;
  }

  function boot() {
    const stateEl = document.getElementById("annotate-state");
    if (!stateEl) return;
    const state = JSON.parse(stateEl.textContent);
    // Where the work goes: the page names its endpoints (data-submit-url, data-draft-url, data-done-url), so
    // a page that reuses the frame can point them elsewhere.
    const endpoints = document.getElementById("annotate").dataset;
    const factory = factories[state.view];
    if (!factory) throw new Error("no task view registered for " + state.view);

    const commentEl = document.getElementById("comment");
    const submitEl = document.getElementById("submit");
    const remainingEl = document.getElementById("remaining");
    // Two live regions: what the annotator asked for (submit, what is missing, a task's hint) and, apart,
    // what the background draft saves report, so a draft saved a moment later never replaces the answer.
    const statusEl = document.getElementById("save-status");
    const draftStatusEl = document.getElementById("draft-status");
    const helpEl = document.getElementById("help");
    const examplesEl = document.getElementById("examples");
    const examplesButton = document.getElementById("open-examples");

    let activeSeconds = 0;
    let lastActivity = Date.now();
    let submitting = false;
    let serverTimer = null;
    let serverDirty = false;
    let serverBusy = false;

    // -- drafts: kept in this browser at once and on the server shortly after -------------------------
    function readLocalDraft() {
      try {
        return JSON.parse(localStorage.getItem(state.draftKey) || "null");
      } catch {
        return null;
      }
    }
    function newest(drafts) {
      // A draft older than the last submission was overtaken by it (e.g. submitted on another device).
      const usable = drafts.filter((d) => d && typeof d === "object" && d.task && !(state.submittedAt && (d.savedAt || 0) < state.submittedAt));
      usable.sort((a, b) => (b.savedAt || 0) - (a.savedAt || 0));
      return usable[0] || null;
    }
    const restored = state.draftKey ? newest([state.draft, readLocalDraft()]) : null;
    if (restored) {
      activeSeconds = Number(restored.seconds) || 0;
      draftStatusEl.textContent = "Restored your unsubmitted work on this item.";
    }

    const unitByIndex = new Map((state.units || []).map((unit) => [unit.index, unit]));
    const frame = {
      state,
      unitByIndex,
      draft: restored ? restored.task : null,
      saved: state.saved || { labels: {}, notes: {}, spans: [], edit: null },
      renderText,
      element,
      choiceButtons,
      pressChoice,
      codePointText,
      changed,
      refresh: () => updateRemaining(),
      unitButtons: (options) => unitButtons(frame, options),
      announce(text) {
        statusEl.textContent = text;
      },
      focusSubmit() {
        submitEl.focus();
      },
      scrollIntoView: scrollIntoPane,
      // The labels to start from: the restored draft, else the submitted work; only valid ones survive.
      initialLabels() {
        const source = (frame.draft || frame.saved).labels || {};
        const labels = new Map();
        for (const [key, value] of Object.entries(source)) {
          const unit = unitByIndex.get(Number(key));
          if (unit && unit.choices.some((choice) => choice.value === value)) labels.set(Number(key), value);
        }
        return labels;
      },
      // What is still missing when every unit needs a label ("3 of 10 words still to judge").
      missingLabels(labels, noun) {
        const units = state.units;
        const count = units.filter((unit) => !labels.has(unit.index)).length;
        if (!units.length) return { count: 1, text: "Nothing to judge here." };
        return {
          count,
          text: count ? count + " of " + units.length + " " + noun + " still to judge" : "All " + units.length + " " + noun + " judged",
        };
      },
    };

    // The task contract: snapshot() -> draft data; missing() -> {count, text}; submission() -> request
    // parts; keys: [{keys, label, run(event) -> handled}]; optional start(), serverDraftSaved(answer),
    // showMissing() (move the focus to the first unit still missing, never into a text field).
    const task = factory(frame);
    // A document longer than its pane gets room to scroll its end up into view (faithanno.css).
    const sourceEl = document.getElementById("source");
    if (sourceEl) sourceEl.classList.toggle("overflows", sourceEl.scrollHeight > sourceEl.clientHeight);

    function snapshot() {
      return { savedAt: Date.now(), seconds: activeSeconds, comment: commentEl.value, task: task.snapshot() };
    }
    function saveLocal() {
      if (!state.draftKey) return;
      try {
        localStorage.setItem(state.draftKey, JSON.stringify(snapshot()));
      } catch {
        /* storage full or disabled: the server copy still works */
      }
    }
    async function saveServer() {
      serverTimer = null;
      if (!endpoints.draftUrl || submitting) return;
      if (serverBusy) {
        serverDirty = true;
        return;
      }
      serverBusy = true;
      serverDirty = false;
      try {
        const { ok, status, answer } = await postJson(endpoints.draftUrl, { draft: snapshot() }, { keepalive: true });
        if (!ok) {
          draftStatusEl.textContent = "Draft not saved on the server: " + errorText(answer, "HTTP " + status);
        } else {
          draftStatusEl.textContent = "Draft saved.";
          if (task.serverDraftSaved) task.serverDraftSaved(answer);
        }
      } catch {
        serverDirty = true;
        draftStatusEl.textContent = "Offline: your work is kept in this browser and is sent when the connection is back.";
      } finally {
        serverBusy = false;
        if (serverDirty && navigator.onLine !== false) scheduleServer(3000);
      }
    }
    function scheduleServer(delay) {
      serverDirty = true;
      if (serverTimer) clearTimeout(serverTimer);
      serverTimer = setTimeout(saveServer, delay);
    }
    window.addEventListener("online", () => {
      if (serverDirty) scheduleServer(0);
    });

    // An incomplete item's Submit is aria-disabled, not disabled: pressing it (or Ctrl+Enter) must still
    // say what is missing and show where.
    function updateRemaining() {
      const missing = task.missing();
      submitEl.disabled = submitting;
      submitEl.setAttribute("aria-disabled", String(missing.count > 0));
      remainingEl.textContent = missing.text;
      submitEl.textContent = missing.count > 0 ? "Submit annotations (" + missing.count + " missing)" : "Submit annotations ▸";
    }

    function changed() {
      saveLocal();
      scheduleServer(600);
      updateRemaining();
    }

    // -- submission ------------------------------------------------------------------------------------
    async function submit() {
      if (submitting) return;
      const missing = task.missing();
      if (missing.count > 0) {
        frame.announce("Not submitted yet: " + missing.count + " missing (" + missing.text + ").");
        if (task.showMissing) task.showMissing();
        return;
      }
      submitting = true;
      if (serverTimer) clearTimeout(serverTimer);
      updateRemaining();
      frame.announce("Saving…");
      const body = Object.assign({}, task.submission(), {
        comment: commentEl.value,
        seconds: activeSeconds,
        guidelines_version: state.guidelinesVersion,
      });
      try {
        const { ok, status, answer } = await postJson(endpoints.submitUrl, body);
        submitting = false;
        if (!ok) {
          frame.announce("Not saved: " + errorText(answer, "HTTP " + status));
          updateRemaining();
          return;
        }
        if (state.draftKey) localStorage.removeItem(state.draftKey);
        frame.announce("Saved.");
        window.location.assign(endpoints.doneUrl);
      } catch {
        submitting = false;
        frame.announce("Not saved: the connection failed. Your work is kept as a draft; try again.");
        updateRemaining();
      }
    }

    // -- keyboard ----------------------------------------------------------------------------------------
    function go(url) {
      if (url) window.location.assign(url);
    }
    // A dialog opens at its top with its title focused (showModal would focus the first control, the Close
    // button at the bottom of a long list, and scroll there).
    function openDialog(dialog) {
      if (dialog.open) return;
      dialog.showModal();
      dialog.scrollTop = 0;
      const title = dialog.querySelector("h2");
      if (title) title.focus({ preventScroll: true });
    }
    const frameKeys = [
      { keys: ["Ctrl+Enter"], label: "submit (also while typing)" },
      { keys: ["m"], label: "write a note or comment", run: () => commentEl.focus() },
      { keys: ["Esc"], label: "leave a text field (then the shortcuts work again) or close a window" },
      {
        keys: ["d"],
        label: "show or hide the task description",
        run: () => document.querySelector(".task-description").toggleAttribute("open"),
      },
      { keys: ["v"], label: "view the annotated examples", run: () => examplesButton.disabled || openDialog(examplesEl) },
      { keys: ["?"], label: "this help", run: () => openDialog(helpEl) },
    ];
    if (state.mode === "assignment") {
      frameKeys.push(
        { keys: ["n"], label: "next item", run: () => go(state.nextUrl) },
        { keys: ["p"], label: "previous item", run: () => go(state.previousUrl) },
        { keys: ["c"], label: "continue with the next item still to do", run: () => go(state.continueUrl) }
      );
    }
    const taskKeys = task.keys || [];

    fillHelp(document.getElementById("help-rows"), taskKeys.concat(frameKeys), element);

    // The keyboard rule (keys.js): a single-key shortcut acts only while the focus is outside every editable
    // field. Inside a field only Ctrl/Cmd+Enter (submit) and Esc (leave the field) act. No script moves the
    // focus into a field unless the annotator pressed that field's own key (its keydown is cancelled, so the
    // key is not typed).

    document.addEventListener("keydown", (event) => {
      lastActivity = Date.now();
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        submit();
        return;
      }
      if (helpEl.open || examplesEl.open) return; // the dialog handles Esc itself
      const target = event.target;
      if (editable(target)) {
        if (event.key === "Escape") {
          event.preventDefault();
          target.blur();
          if (task.leaveField) task.leaveField(target);
        }
        return;
      }
      if (event.altKey || event.ctrlKey || event.metaKey) return;
      for (const entry of taskKeys.concat(frameKeys)) {
        if (entry.run && matches(entry, event)) {
          if (entry.run(event) !== false) event.preventDefault();
          return;
        }
      }
    });

    // -- wiring --------------------------------------------------------------------------------------------
    submitEl.addEventListener("click", submit);
    commentEl.addEventListener("input", changed);
    document.getElementById("open-help").addEventListener("click", () => openDialog(helpEl));
    examplesButton.addEventListener("click", () => openDialog(examplesEl));

    // Active time: seconds while the tab is visible and someone touched it within the last minute.
    for (const name of ["mousemove", "mousedown", "scroll", "touchstart", "wheel", "input"]) {
      window.addEventListener(name, () => (lastActivity = Date.now()), { passive: true, capture: true });
    }
    let ticks = 0;
    window.setInterval(() => {
      if (document.visibilityState === "visible" && Date.now() - lastActivity < 60000) {
        activeSeconds += 1;
        ticks += 1;
        if (ticks % 10 === 0) saveLocal(); // the time survives a reload as well
      }
    }, 1000);

    // The task description is open on the first item an annotator opens of a task and folded on every other
    // item (they know the steps by then), unless they open it again: then it stays open until they close it.
    // Stored: "1" folded, "0" open, "first:<item>" the first item (open there, also after a reload).
    const description = document.querySelector(".task-description");
    const descriptionKey = "faithanno:description-closed:" + state.task;
    if (description) {
      const firstItem = "first:" + (state.draftKey || "example");
      let stored = null;
      try {
        stored = localStorage.getItem(descriptionKey);
        if (stored === null) localStorage.setItem(descriptionKey, firstItem);
      } catch {
        /* storage disabled: the description is open on every item */
      }
      description.open = stored === null || stored === "0" || stored === firstItem;
      description.addEventListener("toggle", () => {
        try {
          localStorage.setItem(descriptionKey, description.open ? "0" : "1");
        } catch {
          /* storage disabled */
        }
      });
    }

    commentEl.value = restored && typeof restored.comment === "string" ? restored.comment : state.comment || "";
    updateRemaining();
    if (restored && endpoints.draftUrl && restored.savedAt !== (state.draft && state.draft.savedAt)) {
      scheduleServer(0); // the browser had newer work than the server: send it
    }
    if (task.start) task.start();
  }

  document.addEventListener("DOMContentLoaded", boot);
})();
