/** @jsxImportSource hono/jsx */
import { colourSpans } from "../ansi.ts";

/** Text whose colour sequences became classes; plain text stays a bare string (escaped by JSX). */
export function ColouredText(props: { text: string }) {
  const spans = colourSpans(props.text);
  if (spans.length === 1 && spans[0]!.classes.length === 0) return <>{spans[0]!.text}</>;
  return <>{spans.map((span) => (span.classes.length ? <span class={span.classes.join(" ")}>{span.text}</span> : span.text))}</>;
}
