// The linter of the browser scripts in static/js (run by bin/test; by hand: node_modules/.bin/eslint .).
// They are plain scripts, no modules and no build step: each file wraps itself in a function and shares
// only what it puts on window (FaithAnnoText from text.js, FaithAnno from frame.js).
"use strict";

const js = require("@eslint/js");
const globals = require("globals");

// The Content-Security-Policy refuses eval and its relatives, and every text reaches the page as text
// (element() in text.js sets textContent), never as markup to parse.
const markupSinks = ["innerHTML", "outerHTML"].map((name) => ({
  selector: `AssignmentExpression > MemberExpression.left[property.name='${name}']`,
  message: `No ${name}: build elements with FaithAnnoText.element (texts are set as textContent).`,
}));

module.exports = [
  { ignores: ["staticfiles/", "var/", "build/", ".venv/"] },
  js.configs.recommended,
  {
    files: ["static/js/**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "script",
      globals: { ...globals.browser, FaithAnno: "readonly" },
    },
    rules: {
      eqeqeq: ["error", "always"],
      "no-eval": "error",
      "no-implied-eval": "error",
      "no-new-func": "error",
      "no-script-url": "error",
      "no-var": "error",
      "prefer-const": "error",
      "no-shadow": "error",
      "no-use-before-define": ["error", { functions: false, classes: true, variables: true }],
      "no-restricted-properties": [
        "error",
        { property: "insertAdjacentHTML", message: "No markup from strings: build elements with FaithAnnoText.element." },
        { object: "document", property: "write", message: "No document.write." },
      ],
      "no-restricted-syntax": ["error", ...markupSinks],
      strict: ["error", "safe"],
    },
  },
  {
    files: ["eslint.config.js"],
    languageOptions: { sourceType: "commonjs", globals: globals.node },
  },
];
