import { Anser } from "./_anser.ts";

/** A run of text with the classes its colour sequences gave it (`ansi-red-fg`, `ansi-bold`). */
export interface ColourSpan {
  text: string;
  classes: string[];
}

/** The 16 colours a class exists for in cockpit.css; 256-colour and true-colour runs stay plain. */
const NAMED = new Set(["black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"].flatMap((c) => [`ansi-${c}`, `ansi-bright-${c}`]));
const DECORATIONS = new Set(["bold", "dim", "italic", "underline", "strikethrough"]);

/**
 * A log line's text cut into coloured runs, parsed by anser (a maintained ANSI parser): only
 * class names from two fixed lists come out, and the text itself is rendered through JSX text or
 * `textContent`, so a line can colour itself but never inject markup. The browser's copy of
 * this mapping is `colourSpans` in assets/ansi.js; a test holds the two to the same output.
 */
export function colourSpans(text: string): ColourSpan[] {
  if (!text.includes("\u001b[")) return [{ text, classes: [] }];
  return Anser.ansiToJson(text, { use_classes: true, remove_empty: true }).map((token) => {
    const classes: string[] = [];
    // anser reports reverse video (SGR 7) as isInverted, which its type declarations leave out.
    const inverted = (token as { isInverted?: boolean }).isInverted === true;
    const fg = inverted ? token.bg : token.fg;
    const bg = inverted ? token.fg : token.bg;
    if (fg && NAMED.has(fg)) classes.push(`${fg}-fg`);
    if (bg && NAMED.has(bg)) classes.push(`${bg}-bg`);
    for (const decoration of token.decorations ?? []) if (DECORATIONS.has(decoration)) classes.push(`ansi-${decoration}`);
    return { text: token.content, classes };
  });
}
