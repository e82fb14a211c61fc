// The server layer's public exports: `docket serve`'s HTTP API and live channel, on Bun and on Node.
export { createApp } from "./app.ts";
export type { AppOptions, AppMounts } from "./app.ts";
export type { ServerConfig, LiveUpgrade, AppEnv } from "./_app-env.ts";
export type { RunningServer, ListenOptions } from "./_listen.ts";
export { accessGuard, requestIdentity, isAllowedHost, isOwnOrigin, sameSecret, TOKEN_SUBPROTOCOL_PREFIX } from "./guards.ts";
export { apiRoutes, capabilityPath, methodsOf, API_PREFIX } from "./api-routes.ts";
export { statusOf, failureResponse, edgeFailure, errorHandler, notFoundHandler } from "./errors.ts";
export { openApiDocument } from "./openapi.ts";
export { healthz, withoutPaths } from "./healthz.ts";
export type { HealthzAnswer } from "./healthz.ts";
export { LiveChannel } from "./live-channel.ts";
export type { LiveChannelOptions } from "./live-channel.ts";
export { checkLiveRequest } from "./live-check.ts";
export type { LiveCheck, LiveAdmission } from "./live-check.ts";
export type { LiveSocket, LiveClock, LiveTopics, SendResult } from "./live-socket.ts";
export { systemLiveClock } from "./live-socket.ts";
export { parseLiveTarget } from "./live-target.ts";
export type { LiveTarget } from "./live-target.ts";
export { boundFrame } from "./live-frame.ts";
export { inputFromQuery } from "./query-input.ts";
export { leasePath, readLease, isLeaseLive, isProcessAlive, ownPidNamespace, pidVisible, acquireLease, releaseLease, ensureDocketDir } from "./lease.ts";
export type { Lease } from "./lease.ts";
export { startServer, serverToken, isLoopback, ServerAlreadyRunningError } from "./serve.ts";
export type { ServeOptions, DocketServer, ServedPlane } from "./serve.ts";
export { installShutdown } from "./shutdown.ts";
export type { ShutdownOptions, Stoppable } from "./shutdown.ts";
// The adapters are imported by serve.ts on demand (each pulls in its runtime's server); import
// them directly from ./adapter-bun.ts or ./adapter-node.ts when needed.
