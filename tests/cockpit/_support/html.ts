import { Window } from "happy-dom";

const windows: Window[] = [];

/** Parses a served page into a DOM (no script runs) so tests can read the facts it shows. */
export function parseHtml(html: string): Document {
  const window = new Window({ url: "http://127.0.0.1/" });
  windows.push(window);
  return new window.DOMParser().parseFromString(html, "text/html") as unknown as Document;
}

/** Closes every window {@link parseHtml} opened. */
export async function closeParsed(): Promise<void> {
  await Promise.all(windows.splice(0).map((w) => w.happyDOM.close()));
}

/** The trimmed text of the first element matching `selector`, or null. */
export function textOf(doc: Document | Element, selector: string): string | null {
  const element = doc.querySelector(selector);
  return element ? (element.textContent ?? "").replace(/\s+/g, " ").trim() : null;
}
