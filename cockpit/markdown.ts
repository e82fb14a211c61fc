import MarkdownIt from "markdown-it";

/**
 * Markdown for capability descriptions, rendered by markdown-it (a maintained renderer) with raw
 * HTML off: any `<tag>` in a description is escaped text, and markdown-it's link check refuses
 * `javascript:`, `vbscript:`, `file:` and `data:` URLs other than images. No images are kept at
 * all (the CSP would block a remote one anyway).
 */
const md = new MarkdownIt({ html: false, linkify: false, typographer: false, breaks: false }).disable(["image"]);

/** A description as safe HTML (escaped text plus markdown-it's own tags). */
export function markdownHtml(text: string): string {
  return md.render(text);
}

/** The first paragraph's inline Markdown as safe HTML, for a one-line summary in a list. */
export function markdownInlineHtml(text: string): string {
  const first = text.split(/\n\s*\n/, 1)[0] ?? "";
  return md.renderInline(first);
}
