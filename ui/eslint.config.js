// The UI's linter, run by `make test` beside svelte-check (types) and vitest (behaviour): the
// recommended rules of ESLint, typescript-eslint and eslint-plugin-svelte, with types from the
// same tsconfig svelte-check uses.
import js from '@eslint/js';
import svelte from 'eslint-plugin-svelte';
import globals from 'globals';
import ts from 'typescript-eslint';

export default ts.config(
  { ignores: ['dist/', 'node_modules/', 'src/lib/bindings/'] },
  js.configs.recommended,
  ts.configs.recommended,
  svelte.configs.recommended,
  {
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    files: ['**/*.svelte', '**/*.svelte.ts'],
    languageOptions: {
      parserOptions: { projectService: true, extraFileExtensions: ['.svelte'], parser: ts.parser },
    },
  },
  {
    rules: {
      // Unused names are mistakes; a leading underscore says "deliberately unused".
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      // The sets and maps in the stores are bookkeeping the views never read; what they render is
      // held in $state fields, replaced whole.
      'svelte/prefer-svelte-reactivity': 'off',
    },
  },
);
