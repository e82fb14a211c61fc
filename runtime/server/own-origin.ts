import type { ServerConfig } from "./_app-env.ts";

/**
 * The loopback addresses a wildcard bind answers on, first the one a page is sent to: bound to
 * `0.0.0.0` the server listens on every IPv4 address, bound to `::` on every address of both families.
 */
const WILDCARD_LOOPBACKS: Readonly<Record<string, readonly string[]>> = { "0.0.0.0": ["127.0.0.1"], "[::]": ["127.0.0.1", "[::1]"] };

/**
 * True for `localhost` and the names under it (`app.localhost`), which browsers resolve to a
 * loopback address of their own choosing, whatever listens there: never a name of the server's
 * own origin (docs/security.md#the-servers-own-address).
 */
export function isLocalhostName(name: string): boolean {
  const n = name.toLowerCase().replace(/\.$/, "");
  return n === "localhost" || n.endsWith(".localhost");
}

/**
 * The host names (as `URL.hostname` writes them) whose origin, on the server's scheme and port, is
 * the server's own: the address it is bound to (a wildcard's loopback addresses with it) and the
 * `--allow-host` names. Never `localhost` or another loopback address the server is not bound to:
 * another program may listen on the same port there (`[::1]:4700` beside `127.0.0.1:4700`), and a
 * browser resolving `localhost` may reach it (docs/security.md#the-servers-own-address).
 */
function ownHostnames(config: Pick<ServerConfig, "origin" | "allowedHosts">, own: URL): string[] {
  const bound = own.hostname.toLowerCase();
  return [bound, ...(WILDCARD_LOOPBACKS[bound] ?? []), ...config.allowedHosts.map((h) => h.toLowerCase())];
}

/**
 * True when `origin` is this server's own origin: the same scheme and port on the address it is
 * bound to or an allowed host name. Never compared with the request URL, which a crafted request
 * target can change.
 */
export function isOwnOrigin(origin: string, config: Pick<ServerConfig, "origin" | "allowedHosts">): boolean {
  let url: URL;
  let own: URL;
  try {
    url = new URL(origin);
    own = new URL(config.origin);
  } catch {
    return false;
  }
  // A serialized origin is exactly scheme://host[:port]; anything else ("null", a path) is foreign.
  if (url.origin !== origin) return false;
  if (url.protocol !== own.protocol || url.port !== own.port) return false;
  return ownHostnames(config, own).includes(url.hostname.toLowerCase());
}

/**
 * Where a browser that reached the server by another name of this machine (`localhost:4700` for a
 * server bound to `127.0.0.1:4700`) is sent for its page: the server's own origin, so that the
 * page's forms, API calls and live channel come from an origin the Origin check accepts. Null when
 * the page is on an own origin already, or when the Host names another port (a forwarded port or
 * a proxy: the bound address is not where that browser is), or when it names an address of a
 * wildcard bind (the browser may be on another machine).
 */
export function ownPageOrigin(hostHeader: string, config: Pick<ServerConfig, "origin" | "allowedHosts">): string | null {
  let asked: URL;
  let own: URL;
  try {
    asked = new URL(`${new URL(config.origin).protocol}//${hostHeader}`);
    own = new URL(config.origin);
  } catch {
    return null;
  }
  if (asked.port !== own.port) return null;
  const host = asked.hostname.toLowerCase();
  if (ownHostnames(config, own).includes(host)) return null;
  const loopbacks = WILDCARD_LOOPBACKS[own.hostname.toLowerCase()];
  if (loopbacks === undefined) return own.origin;
  // `localhost` is the browser's own machine, which a wildcard bind answers on.
  return host === "localhost" ? `${own.protocol}//${loopbacks[0]}${own.port ? `:${own.port}` : ""}` : null;
}
