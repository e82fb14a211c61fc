import MarkdownIt from "markdown-it";

/**
 * Markdown for capability descriptions, rendered by markdown-it (a maintained renderer) with raw
 * HTML off: any `<tag>` in a description is escaped text, and markdown-it's link check refuses
 * `javascript:`, `vbscript:`, `file:` and `data:` URLs other than images. No images are kept at
 * all (the CSP would block a remote one anyway).
 */
const md = new MarkdownIt({ html: false, linkify: false, typographer: false, breaks: false }).disable(["image"]);

// A description's headings sit under the page's own: `# Usage` is an h3, never a second h1 (the
// capability's title is the page's h1, its sections h2).
md.core.ruler.push("docket_heading_levels", (state) => {
  for (const token of state.tokens) {
    if (token.type === "heading_open" || token.type === "heading_close") token.tag = `h${Math.min(6, Number(token.tag.slice(1)) + 2)}`;
  }
});

/** A description as safe HTML (escaped text plus markdown-it's own tags). */
export function markdownHtml(text: string): string {
  return md.render(text);
}

/** The first paragraph's inline Markdown as safe HTML, for a one-line summary in a list. */
export function markdownInlineHtml(text: string): string {
  const first = text.trimStart().split(/\n\s*\n/, 1)[0] ?? "";
  // A block's own mark (a heading's #, a quote's >, a list's bullet) is no part of a one-line summary.
  return md.renderInline(first.replace(/^ {0,3}(?:#{1,6}[ \t]+|>[ \t]?|[-*+][ \t]+)/, "").replace(/[ \t]+#+[ \t]*$/m, ""));
}
