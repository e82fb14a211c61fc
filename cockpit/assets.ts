import { createHash } from "node:crypto";
import type { Context } from "hono";
import css from "./assets/cockpit.css" with { type: "text" };
import icon from "./assets/icon.svg" with { type: "text" };
import socket from "./assets/socket.js" with { type: "text" };
import format from "./assets/format.js" with { type: "text" };
import execution from "./assets/execution.js" with { type: "text" };
import liveList from "./assets/live-list.js" with { type: "text" };
import runForm from "./assets/run-form.js" with { type: "text" };
import ansi from "./assets/ansi.js" with { type: "text" };
import logFilter from "./assets/log-filter.js" with { type: "text" };
import outputTable from "./assets/output-table.js" with { type: "text" };
import refresh from "./assets/refresh.js" with { type: "text" };
import catalogWatch from "./assets/catalog-watch.js" with { type: "text" };
import { COCKPIT_BASE } from "./paths.ts";
import { ANSER_SOURCE } from "./_anser.ts";

/** One file the cockpit serves, carried inside the binary as text. */
interface Asset {
  body: string;
  type: string;
  /** First 16 hex of its SHA-256: part of its URL, so a cached copy is never stale. */
  hash: string;
}

const asset = (body: string, type: string): Asset => ({ body, type, hash: createHash("sha256").update(body).digest("hex").slice(0, 16) });

const JS = "text/javascript; charset=utf-8";

/** anser's CommonJS build, wrapped so that it defines `docket.Anser` in the page and nothing else. */
const anserScript = `(function () {\nvar module = { exports: {} };\nvar exports = module.exports;\n${ANSER_SOURCE}\nwindow.docket = window.docket || {};\nwindow.docket.Anser = module.exports;\n})();\n`;

/** Every asset by name: the stylesheet, the icon and the browser scripts (socket.js alone opens a socket). */
export const ASSETS = {
  "cockpit.css": asset(css, "text/css; charset=utf-8"),
  "icon.svg": asset(icon, "image/svg+xml"),
  "socket.js": asset(socket, JS),
  "format.js": asset(format, JS),
  "execution.js": asset(execution, JS),
  "live-list.js": asset(liveList, JS),
  "run-form.js": asset(runForm, JS),
  "anser.js": asset(anserScript, JS),
  "ansi.js": asset(ansi, JS),
  "log-filter.js": asset(logFilter, JS),
  "output-table.js": asset(outputTable, JS),
  "refresh.js": asset(refresh, JS),
  "catalog-watch.js": asset(catalogWatch, JS),
} as const;

/** The name of a served asset. */
export type AssetName = keyof typeof ASSETS;

/** An asset's URL, versioned by its content hash. */
export function assetPath(name: AssetName): string {
  return `${COCKPIT_BASE}/assets/${name}?v=${ASSETS[name].hash}`;
}

/**
 * Serves an asset: the versioned URL is cached for a year (`immutable`: its content can never
 * change under that URL); any other is revalidated with the ETag.
 */
export function serveAsset(c: Context, name: string): Response {
  const found = Object.hasOwn(ASSETS, name) ? ASSETS[name as AssetName] : null;
  if (!found) return c.text(`No cockpit asset ${JSON.stringify(name.slice(0, 80))}.`, 404);
  const etag = `"${found.hash}"`;
  const headers: Record<string, string> = {
    "Content-Type": found.type,
    ETag: etag,
    "Cache-Control": c.req.query("v") === found.hash ? "public, max-age=31536000, immutable" : "no-cache",
  };
  if (c.req.header("if-none-match") === etag) return c.body(null, 304, headers);
  return c.body(found.body, 200, headers);
}
