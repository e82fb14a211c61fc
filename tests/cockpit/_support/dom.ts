import { Window } from "happy-dom";
import { ASSETS, type AssetName } from "../../../cockpit/assets.ts";
import { ManualClock } from "../../_support/manual-clock.ts";
import { fakeWebSockets, type FakeSocket } from "./fake-socket.ts";

/** The page's origin in these tests; URLs the scripts build are resolved against it. */
export const ORIGIN = "http://127.0.0.1:4700";

/** A fetch the test answers: records each URL and hands it to `answer`. */
export type FakeFetch = ((url: string, init?: unknown) => Promise<{ ok: boolean; status: number; json(): Promise<unknown>; text(): Promise<string> }>) & { urls: string[] };

/** A fetch answering `answer(url)`: JSON, or a page when it is a string (or a promise of one, answered when the test says). */
export function fakeFetch(answer: (url: URL) => unknown): FakeFetch {
  const urls: string[] = [];
  const fn = (async (url: string) => {
    urls.push(url);
    const body = await answer(new URL(url, ORIGIN));
    return { ok: true, status: 200, json: async () => body, text: async () => (typeof body === "string" ? body : JSON.stringify(body)) };
  }) as FakeFetch;
  fn.urls = urls;
  return fn;
}

/** A served page loaded in happy-dom with the cockpit's scripts running against fakes. */
export interface LoadedPage {
  window: Window;
  document: Document;
  clock: ManualClock;
  sockets: FakeSocket[];
  /** The socket socket.js holds open now (the newest not closed). */
  current(): FakeSocket | undefined;
  confirms: string[];
  /** Where the page navigated itself (`window.location.assign`, through `docketEnv.navigate`). */
  navigations: string[];
  /** Lets promise chains (fetch replies) run to their end. */
  settle(): Promise<void>;
  close(): Promise<void>;
}

/** What a page load may replace. */
export interface LoadOptions {
  path: string;
  scripts: AssetName[];
  fetch?: FakeFetch;
  /** What `Math.random` gives socket.js (the jitter); default 0.5. */
  random?: () => number;
  /** What `window.confirm` answers. */
  confirm?: boolean;
}

/**
 * Loads markup the server rendered into happy-dom, injects the fakes through `window.docketEnv`
 * (the scripts' one seam) and evaluates the assets' exact text, as the browser would.
 */
export function loadPage(html: string, options: LoadOptions): LoadedPage {
  const window = new Window({
    url: ORIGIN + options.path,
    settings: { enableJavaScriptEvaluation: true, suppressInsecureJavaScriptEnvironmentWarning: true, disableJavaScriptFileLoading: true, disableCSSFileLoading: true },
  });
  const clock = new ManualClock();
  const w = window as unknown as Record<string, unknown>;
  const fakes = fakeWebSockets(() => (w.docket as { executionView?: { flush?: () => void } } | undefined)?.executionView?.flush?.());
  const confirms: string[] = [];
  const navigations: string[] = [];
  w.docketEnv = {
    navigate: (url: string) => void navigations.push(url),
    WebSocket: fakes.WebSocket,
    setTimeout: (fn: () => void, ms: number) => clock.setTimeout(fn, ms),
    clearTimeout: (handle: unknown) => clock.clearTimeout(handle),
    // A frame every 16 ms of the manual clock, as a 60 Hz screen gives them.
    requestAnimationFrame: (fn: () => void) => clock.setTimeout(fn, 16),
    cancelAnimationFrame: (handle: unknown) => clock.clearTimeout(handle),
    random: options.random ?? (() => 0.5),
    now: () => clock.now().getTime(),
    fetch: options.fetch ?? fakeFetch(() => ({})),
  };
  w.confirm = (question: string) => {
    confirms.push(question);
    return options.confirm ?? true;
  };
  window.document.write(html);
  for (const name of options.scripts) (window as unknown as { eval(code: string): unknown }).eval(ASSETS[name].body);
  return {
    window,
    document: window.document as unknown as Document,
    clock,
    sockets: fakes.sockets,
    current: fakes.current,
    confirms,
    navigations,
    async settle() {
      for (let i = 0; i < 20; i++) await Promise.resolve();
      // What came over HTTP (a gap read) is drawn at the next frame, as what came over the socket.
      (w.docket as { executionView?: { flush?: () => void } } | undefined)?.executionView?.flush?.();
    },
    close: () => window.happyDOM.close(),
  };
}
