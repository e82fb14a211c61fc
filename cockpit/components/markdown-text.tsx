/** @jsxImportSource hono/jsx */
import { raw } from "hono/html";
import { markdownHtml, markdownInlineHtml } from "../markdown.ts";

/** A capability's description as Markdown: markdown-it's output with raw HTML escaped (see markdown.ts). */
export function MarkdownText(props: { text: string; inline?: boolean; class?: string }) {
  const html = props.inline ? markdownInlineHtml(props.text) : markdownHtml(props.text);
  return props.inline ? <span class={props.class}>{raw(html)}</span> : <div class={`markdown ${props.class ?? ""}`.trim()}>{raw(html)}</div>;
}
