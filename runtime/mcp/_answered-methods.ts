/** The requests docket's MCP server answers: the SDK's own (initialize, ping) and those server.ts sets. */
export const ANSWERED_METHODS = ["initialize", "ping", "tools/list", "tools/call", "resources/list", "resources/templates/list", "resources/read"];

/**
 * The -32601 message of a request for a method the server does not answer: named, with those it
 * answers, not the SDK's bare "Method not found" (MCP/CLI tester, session 48). A long name is cut
 * at 80 characters, never inside a surrogate pair, and said to be cut.
 */
export function methodNotFoundMessage(method: string): string {
  const chars = Array.from(method);
  const shown = chars.length > 80 ? `${chars.slice(0, 80).join("")}…` : method;
  return `Method not found: docket's MCP server does not answer ${JSON.stringify(shown)}; it answers ${ANSWERED_METHODS.join(", ")} (it offers tools and resources, no prompts, logging or completions).`;
}
