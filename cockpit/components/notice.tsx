/** @jsxImportSource hono/jsx */
import type { Child } from "hono/jsx";

/** A message box; `error` ones carry a shape and the word "Error" besides their colour. */
export function Notice(props: { kind: "info" | "error" | "success"; children?: Child; slot?: string }) {
  const glyph = props.kind === "error" ? "✕" : props.kind === "success" ? "✓" : "ℹ";
  return (
    <div class={`notice notice-${props.kind}`} role={props.kind === "error" ? "alert" : "status"} data-slot={props.slot}>
      <span class="glyph" aria-hidden="true">
        {glyph}
      </span>
      <div>{props.children}</div>
    </div>
  );
}
