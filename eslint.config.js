import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'data/**', 'dist/**', 'dist-bin/**', 'dist.partial-*/**', 'coverage/**', 'dashboard/dist/**', 'test/browser/artifacts/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    // Tool configuration files that must be CommonJS (dependency-cruiser reads its config with require).
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly', __dirname: 'readonly' } },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The house rule: stages and provider adapters never reach for the HTTP layer.
    files: ['src/stages/**/*.ts', 'src/providers/**/*.ts', 'src/pipeline/**/*.ts', 'src/dialects/**/*.ts', 'src/wire/**/*.ts', 'src/core/**/*.ts'],
    // A dialect's routes/ folder is its part of the HTTP layer; the rest of the dialect translates, with no server.
    ignores: ['src/dialects/*/routes/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/http/**', 'fastify'], message: 'Stages and providers must not depend on the HTTP layer.' }] }],
    },
  },
);
