// Lint rules: typescript-eslint's type-aware recommended set, with the async rules that matter most
// for a server (no floating promises, no misused promises, exhaustive switches).
import eslint from "@eslint/js";
import tseslint from "typescript-eslint";

/** Imports the core may not make (DESIGN.md §3): the server layer and the transports. */
const coreLayerPatterns = [
  { group: ["**/server/**"], message: "the core must not import the server layer" },
  { group: ["@connectrpc/*", "@grpc/*"], message: "the core must not depend on a transport" },
];

export default tseslint.config(
  {
    ignores: [
      "gen/**",
      "dist/**",
      "packages/*/dist/**",
      "node_modules/**",
      "bench/results/**",
      "examples/**",
      "scripts/**",
    ],
  },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/switch-exhaustiveness-check": ["error", { considerDefaultExhaustiveForUnions: true }],
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
    },
  },
  {
    // Layers (DESIGN.md §3): the core knows nothing of transports, so it can be embedded as a library
    // and tested without a network. Only server/ (and the provider SDK, a client) speak Connect or gRPC.
    files: [
      "src/json/**/*.ts",
      "src/codec/**/*.ts",
      "src/errors/**/*.ts",
      "src/registry/**/*.ts",
      "src/runner/**/*.ts",
      "src/executions/**/*.ts",
      "src/stores/**/*.ts",
      "src/auth/**/*.ts",
      "src/tools/**/*.ts",
      "src/providers/provider-hub.ts",
      "src/runtime.ts",
    ],
    rules: { "no-restricted-imports": ["error", { patterns: coreLayerPatterns }] },
  },
  {
    // The in-memory stores are the default and must not pull in the database driver.
    files: ["src/stores/memory/**/*.ts", "src/registry/**/*.ts", "src/runner/**/*.ts", "src/executions/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            ...coreLayerPatterns,
            { group: ["pg", "**/stores/postgres/**"], message: "only stores/postgres/ talks to PostgreSQL" },
          ],
        },
      ],
    },
  },
  {
    files: ["test/**/*.ts"],
    rules: {
      "@typescript-eslint/no-non-null-assertion": "off",
      "@typescript-eslint/no-unused-expressions": "off",
    },
  },
  { files: ["eslint.config.js"], ...tseslint.configs.disableTypeChecked },
);
