import pkg from "../package.json" with { type: "json" };

/** docket's version, from package.json (bundled into the binary). */
export const DOCKET_VERSION: string = pkg.version;
