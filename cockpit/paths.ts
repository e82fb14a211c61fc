import { API_PREFIX } from "../runtime/server/api-routes.ts";

/** Where runtime/server/app.ts mounts the cockpit; every cockpit URL starts here. */
export const COCKPIT_BASE = "/cockpit";

/** The live channel's path (runtime/server/app.ts): the overview follows every execution on it. */
export const LIVE_CHANNEL_PATH = "/events";

/** The placeholder the browser replaces in {@link EXECUTION_PAGE_TEMPLATE}, so no path is written in browser code. */
export const ID_PLACEHOLDER = "{id}";

/** The overview page. */
export const overviewPath = (): string => COCKPIT_BASE;

/** The registry page. */
export const capabilitiesPath = (): string => `${COCKPIT_BASE}/capabilities`;

/** One capability's page; its form posts back to the same URL. */
export const capabilityPagePath = (id: string): string => `${COCKPIT_BASE}/capabilities/${encodeURIComponent(id)}`;

/** The executions list, with its filters and cursor as query parameters. */
export function executionsPath(query: { state?: string; capability?: string; cursor?: string } = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value) params.set(key, value);
  const search = params.toString();
  return `${COCKPIT_BASE}/executions${search ? `?${search}` : ""}`;
}

/** One execution's page (the same URL a snapshot's `links.cockpit` names). */
export const executionPagePath = (id: string): string => `${COCKPIT_BASE}/executions/${encodeURIComponent(id)}`;

/** Where an execution page's Cancel form posts. */
export const cancelPath = (id: string): string => `${executionPagePath(id)}/cancel`;

/** Where an execution page's reconcile form posts. */
export const reconcilePath = (id: string): string => `${executionPagePath(id)}/reconcile`;

/** An execution page's URL with the id left as a placeholder, rendered for scripts that add rows live. */
export const EXECUTION_PAGE_TEMPLATE = `${COCKPIT_BASE}/executions/${ID_PLACEHOLDER}`;

/** The HTTP API's `executions.list`, linked from the executions page for machine readers. */
export const apiExecutionsPath = (): string => `${API_PREFIX}/executions`;

/** Where an execution page's Release form posts. */
export const releasePath = (id: string): string => `${executionPagePath(id)}/release`;

/** The capability page with its form filled from an execution's input ("Run again"). */
export const runAgainPath = (capability: string, id: string): string => `${capabilityPagePath(capability)}?again=${encodeURIComponent(id)}`;

/** Where one artifact downloads (the API route, which the cockpit's session may read). */
export const artifactDownloadPath = (id: string, name: string): string => `${API_PREFIX}/executions/artifact?id=${encodeURIComponent(id)}&name=${encodeURIComponent(name)}`;
