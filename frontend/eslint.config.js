// eslint's flat config (run from the repository's root: `make lint`) for the front end's ES modules (run by `make lint`): the recommended
// rules, browser globals, readable lines (prettier formats them; max-len catches comments and
// strings it leaves long) and modules of one idea (max-lines).
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["**/node_modules/**"] },
  {
    files: ["mha/static/src/**/*.js", "mha_book/static/src/**/*.js"],
    ...js.configs.recommended,
  },
  {
    files: ["mha/static/src/**/*.js", "mha_book/static/src/**/*.js"],
    languageOptions: {
      ecmaVersion: 2020,
      sourceType: "module",
      globals: { ...globals.browser },
    },
    rules: {
      "max-len": ["error", { code: 100, ignoreUrls: true }],
      "max-lines": ["error", { max: 400, skipBlankLines: true }],
      "no-var": "off",
      eqeqeq: ["error", "always", { null: "ignore" }],
      "no-shadow": "off",
      "no-unused-vars": ["error", { args: "none" }],
    },
  },
  {
    files: ["frontend/*.mjs", "frontend/*.js", "tests/js/*.mjs"],
    languageOptions: { sourceType: "module", globals: { ...globals.node } },
    ...js.configs.recommended,
  },
];
