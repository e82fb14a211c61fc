import { Anser } from "./_anser.ts";

/** A run of text with the classes its colour sequences gave it (`ansi-red-fg`, `ansi-bold`). */
export interface ColourSpan {
  text: string;
  classes: string[];
}

/** The 16 colours a class exists for in cockpit.css. */
const NAMED = new Set(["black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"].flatMap((c) => [`ansi-${c}`, `ansi-bright-${c}`]));
const DECORATIONS = new Set(["bold", "dim", "italic", "underline", "strikethrough"]);
/** The hues of the six chromatic basic colours, 60° apart from red. */
const HUES = ["red", "yellow", "green", "cyan", "blue", "magenta"];
/** The six levels of each channel in the 256-colour cube (colours 16–231). */
const CUBE = [0, 95, 135, 175, 215, 255];

/** The RGB of a 256-colour palette entry from 16 up (0–15 anser names itself). */
function paletteRgb(n: number): [number, number, number] | null {
  if (n >= 16 && n <= 231) return [CUBE[Math.floor((n - 16) / 36)]!, CUBE[Math.floor((n - 16) / 6) % 6]!, CUBE[(n - 16) % 6]!];
  if (n >= 232 && n <= 255) return [8 + 10 * (n - 232), 8 + 10 * (n - 232), 8 + 10 * (n - 232)];
  return null;
}

/**
 * The basic colour nearest an RGB colour, by hue rather than by distance, so a dark blue stays
 * blue and never turns black: greys by lightness, other colours by their hue, bright when light.
 */
function nearestBasic([r, g, b]: number[]): string {
  const max = Math.max(r!, g!, b!);
  const min = Math.min(r!, g!, b!);
  const chroma = max - min;
  if (chroma < 48) {
    const lightness = (max + min) / 2;
    return lightness < 64 ? "black" : lightness < 160 ? "bright-black" : lightness < 224 ? "white" : "bright-white";
  }
  const hue = max === r ? ((g! - b!) / chroma + 6) % 6 : max === g ? (b! - r!) / chroma + 2 : (r! - g!) / chroma + 4;
  return `${max > 215 ? "bright-" : ""}${HUES[Math.round(hue) % 6]}`;
}

/**
 * The class name of a run's colour: a basic colour as it is, a 256-colour or true-colour one as
 * the nearest basic colour (the strict CSP allows no inline style to paint it exactly).
 */
function basicColour(name: string | null | undefined, truecolor: string | null | undefined): string | null {
  if (!name) return null;
  if (NAMED.has(name)) return name;
  const palette = /^ansi-palette-(\d+)$/.exec(name);
  const rgb = palette ? paletteRgb(Number(palette[1])) : name === "ansi-truecolor" && truecolor ? truecolor.split(",").map(Number) : null;
  return rgb && rgb.length === 3 && rgb.every((c) => c >= 0 && c <= 255) ? `ansi-${nearestBasic(rgb)}` : null;
}

/** One SGR parameter with sub-parameters (ITU T.416 colons) as anser's semicolon form, or null for one it would misread. */
function semicolonParameter(parameter: string): string | null {
  const [head, ...sub] = parameter.split(":");
  if (head === "38" || head === "48") {
    if (sub[0] === "5" && sub.length === 2) return `${head};5;${sub[1] || "0"}`;
    // `38:2:<colour space>:r:g:b` per T.416, and `38:2:r:g:b` as many programs write it.
    const rgb = sub.length >= 5 ? sub.slice(2, 5) : sub.slice(1);
    if (sub[0] === "2" && rgb.length === 3) return `${head};2;${rgb.map((c) => c || "0").join(";")}`;
    return null;
  }
  // `4:0` is no underline, `4:1`–`4:5` a style of one (curly, dotted…): an underline here.
  if (head === "4" && sub.length === 1) return sub[0] === "0" ? "24" : "4";
  return null;
}

/**
 * The colon form of SGR colours (`ESC[38:5:196m`, `ESC[38:2::255:0:0m`) as the semicolon form
 * anser reads (`ESC[38;5;196m`), which is painted the same; a sub-parameter it could not read (an
 * underline colour, `58:…`) is left out, and a sequence of nothing else is removed, so it is not
 * shown as text (docs/cockpit.md). assets/ansi.js holds the same function.
 */
function withSemicolons(text: string): string {
  return text.replace(/\u001b\[([0-9;:]*)m/g, (sequence, parameters: string) => {
    if (!parameters.includes(":")) return sequence;
    const read = parameters.split(";").map((p) => (p.includes(":") ? semicolonParameter(p) : p)).filter((p) => p !== null);
    return read.length === 0 ? "" : `\u001b[${read.join(";")}m`;
  });
}

/**
 * The colour sequences one text is painted with at most; the text past them is shown plain. A
 * log of 1,000 lines each changing colour 600 times drew half a million spans, and held the
 * server's main thread 4 s for one page (cockpit tester, session 48).
 */
export const MAX_COLOUR_SEQUENCES = 64;

const SGR_SEQUENCES = /\u001b\[[0-9;:]*m/g;

/** Where the sequence past MAX_COLOUR_SEQUENCES starts in `text`, or null when it has no more. */
function pastColourBound(text: string): number | null {
  let count = 0;
  for (const sequence of text.matchAll(SGR_SEQUENCES)) if (++count > MAX_COLOUR_SEQUENCES) return sequence.index;
  return null;
}

/**
 * A log line's text cut into coloured runs, parsed by anser (a maintained ANSI parser): only
 * class names from two fixed lists come out, and the text itself is rendered through JSX text or
 * `textContent`, so a line can colour itself but never inject markup. The browser's copy of
 * this mapping is `colourSpans` in assets/ansi.js; a test holds the two to the same output.
 * Past MAX_COLOUR_SEQUENCES sequences the rest of the text is one plain run, its sequences removed.
 */
export function colourSpans(text: string): ColourSpan[] {
  if (!text.includes("\u001b[")) return [{ text, classes: [] }];
  const plainFrom = pastColourBound(text);
  if (plainFrom !== null) return [...colourSpans(text.slice(0, plainFrom)), { text: text.slice(plainFrom).replace(SGR_SEQUENCES, ""), classes: [] }];
  return Anser.ansiToJson(withSemicolons(text), { use_classes: true, remove_empty: true }).map((token) => {
    const classes: string[] = [];
    // anser reports reverse video (SGR 7) as isInverted, which its type declarations leave out.
    const inverted = (token as { isInverted?: boolean }).isInverted === true;
    const fg = inverted ? basicColour(token.bg, token.bg_truecolor) : basicColour(token.fg, token.fg_truecolor);
    const bg = inverted ? basicColour(token.fg, token.fg_truecolor) : basicColour(token.bg, token.bg_truecolor);
    if (fg) classes.push(`${fg}-fg`);
    if (bg) classes.push(`${bg}-bg`);
    for (const decoration of token.decorations ?? []) if (DECORATIONS.has(decoration)) classes.push(`ansi-${decoration}`);
    return { text: token.content, classes };
  });
}
