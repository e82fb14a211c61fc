// The cockpit's public exports: the Hono app `docket serve` mounts at /cockpit.
export { createCockpit } from "./app.tsx";
export type { CockpitOptions } from "./app.tsx";
export { COCKPIT_CSP } from "./security-headers.ts";
export { ASSETS, assetPath } from "./assets.ts";
export type { AssetName } from "./assets.ts";
