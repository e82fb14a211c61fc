import anserSource from "anser/lib/index.js" with { type: "text" };
import type AnserModule from "anser";

/**
 * anser's CommonJS build as text: the one copy of it in docket. The page gets it wrapped as a
 * script (assets.ts) and the server evaluates it here, once. Imported twice instead — as text for
 * the page and as a module for the server — the binary's bundler kept one module for the one
 * path, the text, and the server's Anser had no methods: every cockpit page of an execution with
 * a coloured log line answered 500 from the binary (a tester's finding), while the same page
 * rendered from source.
 */
export const ANSER_SOURCE: string = anserSource;

/** The Anser class, from ANSER_SOURCE. */
export const Anser: typeof AnserModule = (() => {
  const module = { exports: {} as unknown };
  new Function("module", "exports", ANSER_SOURCE)(module, module.exports);
  return module.exports as typeof AnserModule;
})();
