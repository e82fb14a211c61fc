import type { ExecutionPlane } from "../execution/plane.ts";
import type { AppMounts } from "./app.ts";
import type { LiveChannel } from "./live-channel.ts";
import { createMcpApp } from "../mcp/http.ts";
import { createCockpit } from "../../cockpit/app.tsx";

/**
 * What `docket serve` mounts beside the API: each surface is another projection of the same
 * plane, built once the plane is booted. One line per surface.
 */
export function defaultMounts(plane: ExecutionPlane, live: LiveChannel, log?: (line: string) => void): AppMounts {
  return {
    cockpit: createCockpit({ plane, live, log }),
    mcp: createMcpApp(plane, { log }),
  };
}
