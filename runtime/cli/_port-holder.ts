/** Who listens on a port a server could not take: another docket server (and which), or some other process. */
export type PortHolder = { kind: "docket"; pid: number | null; root: string | null } | { kind: "other" };

/**
 * Asks whoever listens at `host:port` the question every docket server answers, `GET
 * /api/v1/plane` (its root and pid; with a token, a docket refusal): one loopback request,
 * bounded by `timeoutMs`. Anything else, or no answer, is some other process.
 */
export async function portHolder(host: string, port: number, timeoutMs = 1000): Promise<PortHolder> {
  // A wildcard address is listened on by every address of the machine: ask loopback.
  const address = host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "::1" : host;
  const url = `http://${address.includes(":") ? `[${address}]` : address}:${port}/api/v1/plane`;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: "manual" });
    const body = (await response.json()) as { root?: unknown; pid?: unknown; error?: { error_code?: unknown } };
    if (response.ok && typeof body.root === "string" && typeof body.pid === "number") return { kind: "docket", pid: body.pid, root: body.root };
    // A server that wants a token refuses the question, in docket's own words.
    if (!response.ok && typeof body.error?.error_code === "string") return { kind: "docket", pid: null, root: null };
  } catch {
    // No answer, or not JSON: not a docket server.
  }
  return { kind: "other" };
}

/** "Cannot serve: …" for a port taken, naming who holds it and what to do instead. */
export function portTakenMessage(host: string, port: number, holder: PortHolder): string {
  const who =
    holder.kind === "other"
      ? "another process"
      : `another docket server${holder.pid === null ? "" : ` (pid ${holder.pid}${holder.root === null ? "" : `, serving ${holder.root}`})`}`;
  return `port ${port} on ${host} is taken by ${who}. Serve on another port — --port 0 takes a free one and prints its URL, or name one, such as --port ${port === 65535 ? port - 1 : port + 1} — or stop ${holder.kind === "other" ? "that process" : "that server"} first.`;
}
