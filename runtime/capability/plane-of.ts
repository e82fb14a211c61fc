import type { CapabilityContext } from "./declaration.ts";
import type { PlaneHandle } from "../execution/plane.ts";

/** The plane of a built-in plane capability's context; a clear error anywhere else. */
export function planeOf(ctx: CapabilityContext): PlaneHandle {
  if (!ctx.plane) throw new Error("This capability needs the execution plane: only built-in plane capabilities (execution: \"never\") receive ctx.plane.");
  return ctx.plane;
}
