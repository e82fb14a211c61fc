import type { Context } from "hono";
import type { Actor } from "../execution/protocol.ts";
import type { LiveTarget } from "./live-target.ts";
import type { RequestBodies } from "./request-bodies.ts";

/** The server's own settings, as the guards read them on every request. */
export interface ServerConfig {
  host: string;
  /** The bound port; 0 until the adapter knows it (serve.ts fills it in before the first request). */
  port: number;
  /** Host names accepted besides IP literals and `localhost` (DNS-rebinding guard). */
  allowedHosts: string[];
  /** When set, `Authorization: Bearer <token>` is required everywhere but `/healthz`. */
  token: string | null;
  /** The server's own origin (`http://127.0.0.1:4700`); Origin is compared with this, never with the request URL. */
  origin: string;
}

/**
 * Opens the WebSocket for `/events` once every check has passed: supplied per request by the
 * runtime adapter (Bun or Node) in the env, so the app itself stays runtime-agnostic.
 */
export type LiveUpgrade = (c: Context, target: LiveTarget) => Response | Promise<Response>;

/** Hono environment of the docket app. */
export interface AppEnv {
  /** `docketKeepOpen`: lifts the runtime's idle timer for one long request (see long-request.ts). */
  Bindings: { docketUpgrade?: LiveUpgrade; docketKeepOpen?: (request: Request) => void };
  Variables: {
    ids: { request_id: string; trace_id: string };
    actor: Actor;
    /** The budget a route reads a request's body under (request-bodies.ts, readRequestBody). */
    bodies?: RequestBodies;
  };
}
