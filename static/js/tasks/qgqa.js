// QGQA task (thesis 5.1, Figure 5.7): one generated question at a time with the answer found in the
// summary and the answer found in the source highlighted; two statements per question are judged.
(function () {
  "use strict";

  FaithAnno.register("qgqa", (frame) => {
    const state = frame.state;
    const units = state.units;
    const byIndex = frame.unitByIndex;
    // Each question's statement units in order (answerable from the summary, similar meaning).
    const questions = [];
    for (const unit of units) {
      if (!questions[unit.question_number]) questions[unit.question_number] = [];
      questions[unit.question_number].push(unit.index);
    }
    const questionCount = questions.length;
    const unitOf = (number, offset) => questions[number][offset];
    const labels = frame.initialLabels();

    const sourceEl = document.getElementById("source");
    const summaryEl = document.getElementById("summary");
    const titleEl = document.getElementById("question-title");
    const statementsEl = document.getElementById("statements");
    const previousEl = document.getElementById("previous-question");
    const nextEl = document.getElementById("next-question");
    let question = 0;
    let statement = 0;

    const groups = [0, 1].map((offset) => {
      const prompt = frame.element("p", { className: "statement-prompt", id: "statement-" + offset + "-prompt" });
      const choices = frame.choiceButtons(state.choices, "", (value) => choose(offset, value));
      choices.setAttribute("aria-labelledby", "statement-" + offset + "-prompt");
      choices.removeAttribute("aria-label");
      const box = frame.element("div", { className: "statement", "data-offset": offset }, [prompt, choices]);
      box.addEventListener("focusin", () => setStatement(offset, false));
      statementsEl.append(box);
      return { box, prompt, choices };
    });

    // A condition without the metric's evidence sends no answers (null): nothing is highlighted.
    function answerText(answer) {
      if (!answer) return "(not shown)";
      return answer.unanswerable || answer.start === null ? "(no answer found: unanswerable)" : "“" + answer.text + "”";
    }
    function mark(container, text, answer) {
      const ranges = !answer || answer.unanswerable || answer.start === null ? [] : [{ start: answer.start, end: answer.end }];
      frame.renderText(container, text, ranges, (range, piece) => frame.element("mark", { className: "answer", text: piece }));
      return container.querySelector("mark.answer");
    }
    function showQuestion(number, focus) {
      if (!questionCount) return;
      question = (number + questionCount) % questionCount;
      const unit = byIndex.get(unitOf(question, 0));
      titleEl.textContent = "Question " + (question + 1) + " / " + questionCount + ": " + unit.text;
      mark(summaryEl, state.summary, unit.summary_answer);
      frame.scrollIntoView(mark(sourceEl, state.document, unit.source_answer));
      document.getElementById("summary-answer").textContent = answerText(unit.summary_answer);
      document.getElementById("source-answer").textContent = answerText(unit.source_answer);
      groups.forEach((group, offset) => {
        const statementUnit = byIndex.get(unitOf(question, offset));
        group.prompt.textContent = (offset + 1) + ". Please judge the statement: " + statementUnit.prompt;
        frame.pressChoice(group.choices, labels.get(unitOf(question, offset)));
      });
      previousEl.disabled = nextEl.disabled = questionCount < 2;
      setStatement(labels.has(unitOf(question, 0)) && !labels.has(unitOf(question, 1)) ? 1 : 0, focus);
    }
    function setStatement(offset, focus) {
      statement = offset;
      groups.forEach((group, i) => group.box.classList.toggle("current", i === offset));
      if (focus) {
        const buttons = groups[offset].choices.querySelectorAll(".choice");
        const pressed = groups[offset].choices.querySelector('[aria-pressed="true"]');
        (pressed || buttons[0]).focus();
      }
    }
    function firstOpenQuestion(from) {
      for (let step = 0; step < questionCount; step++) {
        const q = (from + step) % questionCount;
        if (!labels.has(unitOf(q, 0)) || !labels.has(unitOf(q, 1))) return q;
      }
      return null;
    }
    function choose(offset, value) {
      labels.set(unitOf(question, offset), value);
      frame.pressChoice(groups[offset].choices, value);
      frame.changed();
      if (offset === 0 && !labels.has(unitOf(question, 1))) return setStatement(1, true);
      const open = firstOpenQuestion(question);
      if (open === null) return frame.focusSubmit();
      if (open === question) return setStatement(labels.has(unitOf(question, 0)) ? 1 : 0, true);
      showQuestion(open, true);
    }

    previousEl.addEventListener("click", () => showQuestion(question - 1, false));
    nextEl.addEventListener("click", () => showQuestion(question + 1, false));
    if (questionCount) showQuestion((frame.draft && frame.draft.question) || 0, false);
    else titleEl.textContent = "No question survived the filters for this summary.";

    return {
      keys: [
        { keys: ["→"], label: "next question", run: () => showQuestion(question + 1, true) },
        { keys: ["←"], label: "previous question", run: () => showQuestion(question - 1, true) },
        { keys: ["↓", "j"], label: "second statement", run: () => setStatement(1, true) },
        { keys: ["↑", "k"], label: "first statement", run: () => setStatement(0, true) },
        ...state.choices.map((c) => ({
          keys: [c.key],
          label: c.label + " for the current statement (then the next open one)",
          run: () => choose(statement, c.value),
        })),
      ],
      snapshot: () => ({ labels: Object.fromEntries(labels), question }),
      missing: () => frame.missingLabels(labels, "statements"),
      showMissing() {
        const open = firstOpenQuestion(0);
        if (open !== null) showQuestion(open, true);
      },
      submission: () => ({ labels: Object.fromEntries(labels) }),
    };
  });
})();
