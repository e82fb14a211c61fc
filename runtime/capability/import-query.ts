/**
 * The queries docket imports a capability's modules by (`?docket_pin=…` in pinned-sources.ts,
 * `?docket_version=…` in capability-version.ts, `?docket_fresh=…` in _fresh-resolve.ts): docket's,
 * not the user's to read. Stack traces and load errors name modules with them.
 */
const IMPORT_QUERY = /\?docket_(?:pin|version|fresh)=[\w&=-]*/g;

/** `text` with docket's import queries taken out of every module path it names. */
export function withoutImportQueries(text: string): string {
  return text.replace(IMPORT_QUERY, "");
}
