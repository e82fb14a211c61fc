/** @jsxImportSource hono/jsx */
import { raw } from "hono/html";
import { markdownHtml, markdownInlineHtml } from "../markdown.ts";
import { shownText } from "../format.ts";

/**
 * A capability's description as Markdown: markdown-it's output with raw HTML escaped (see
 * markdown.ts), and what no text shows (escape sequences, controls, bidi overrides) left out first.
 */
export function MarkdownText(props: { text: string; inline?: boolean; class?: string }) {
  const text = shownText(props.text);
  const html = props.inline ? markdownInlineHtml(text) : markdownHtml(text);
  return props.inline ? <span class={props.class}>{raw(html)}</span> : <div class={`markdown ${props.class ?? ""}`.trim()}>{raw(html)}</div>;
}
