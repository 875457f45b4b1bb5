import { defineConfig } from 'vite';

/**
 * The dashboard is built from this folder into dashboard/dist and served by the gateway at `/` (assets under
 * `/assets/`). Preact's JSX runtime stands in for React's; no plugin is needed for that.
 */
export default defineConfig({
  base: '/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: { outDir: 'dist', emptyOutDir: true, assetsDir: 'assets', sourcemap: true },
  // `npm run dev:dashboard` (vite's dev server) forwards /api to a gateway started with `npm start`.
  server: { proxy: { '/api': 'http://127.0.0.1:8080' } },
});
