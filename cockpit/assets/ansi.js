// ansi.js — a log line's colour sequences as classes, in the browser. anser (bundled before this
// file as docket.Anser) parses; only class names from two fixed lists come out and the text goes
// through textContent, so a line can colour itself but never inject markup. The server's copy of
// this mapping is cockpit/ansi.ts; a test holds the two to the same output.
(function () {
  "use strict";
  var docket = (window.docket = window.docket || {});
  var COLOURS = ["black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"];
  var NAMED = {};
  COLOURS.forEach(function (c) {
    NAMED["ansi-" + c] = true;
    NAMED["ansi-bright-" + c] = true;
  });
  var DECORATIONS = { bold: true, dim: true, italic: true, underline: true, strikethrough: true };
  var HUES = ["red", "yellow", "green", "cyan", "blue", "magenta"];
  var CUBE = [0, 95, 135, 175, 215, 255];

  /** The RGB of a 256-colour palette entry from 16 up (0–15 anser names itself). */
  function paletteRgb(n) {
    if (n >= 16 && n <= 231) return [CUBE[Math.floor((n - 16) / 36)], CUBE[Math.floor((n - 16) / 6) % 6], CUBE[(n - 16) % 6]];
    if (n >= 232 && n <= 255) return [8 + 10 * (n - 232), 8 + 10 * (n - 232), 8 + 10 * (n - 232)];
    return null;
  }

  /** The basic colour nearest an RGB colour, by hue: greys by lightness, bright when light. */
  function nearestBasic(rgb) {
    var r = rgb[0];
    var g = rgb[1];
    var b = rgb[2];
    var max = Math.max(r, g, b);
    var min = Math.min(r, g, b);
    var chroma = max - min;
    if (chroma < 48) {
      var lightness = (max + min) / 2;
      return lightness < 64 ? "black" : lightness < 160 ? "bright-black" : lightness < 224 ? "white" : "bright-white";
    }
    var hue = max === r ? ((g - b) / chroma + 6) % 6 : max === g ? (b - r) / chroma + 2 : (r - g) / chroma + 4;
    return (max > 215 ? "bright-" : "") + HUES[Math.round(hue) % 6];
  }

  /** A basic colour as it is; a 256-colour or true-colour one as the nearest basic colour (no inline style under the CSP). */
  function basicColour(name, truecolor) {
    if (!name) return null;
    if (NAMED[name]) return name;
    var palette = /^ansi-palette-(\d+)$/.exec(name);
    var rgb = palette ? paletteRgb(Number(palette[1])) : name === "ansi-truecolor" && truecolor ? truecolor.split(",").map(Number) : null;
    var valid =
      rgb &&
      rgb.length === 3 &&
      rgb.every(function (c) {
        return c >= 0 && c <= 255;
      });
    return valid ? "ansi-" + nearestBasic(rgb) : null;
  }

  /** One SGR parameter with sub-parameters (ITU T.416 colons) as anser's semicolon form, or null for one it would misread. */
  function semicolonParameter(parameter) {
    var sub = parameter.split(":");
    var head = sub.shift();
    if (head === "38" || head === "48") {
      if (sub[0] === "5" && sub.length === 2) return head + ";5;" + (sub[1] || "0");
      // `38:2:<colour space>:r:g:b` per T.416, and `38:2:r:g:b` as many programs write it.
      var rgb = sub.length >= 5 ? sub.slice(2, 5) : sub.slice(1);
      if (sub[0] === "2" && rgb.length === 3) {
        return (
          head +
          ";2;" +
          rgb
            .map(function (c) {
              return c || "0";
            })
            .join(";")
        );
      }
      return null;
    }
    // `4:0` is no underline, `4:1`–`4:5` a style of one (curly, dotted…): an underline here.
    if (head === "4" && sub.length === 1) return sub[0] === "0" ? "24" : "4";
    return null;
  }

  /** The colon form of SGR colours as the semicolon form anser reads; what it could not read is left out (cockpit/ansi.ts withSemicolons). */
  function withSemicolons(text) {
    return text.replace(/\u001b\[([0-9;:]*)m/g, function (sequence, parameters) {
      if (parameters.indexOf(":") === -1) return sequence;
      var read = parameters
        .split(";")
        .map(function (p) {
          return p.indexOf(":") === -1 ? p : semicolonParameter(p);
        })
        .filter(function (p) {
          return p !== null;
        });
      return read.length === 0 ? "" : "\u001b[" + read.join(";") + "m";
    });
  }

  /** Text → [{ text, classes }], the same runs as the server renders. */
  /** cockpit/ansi.ts MAX_COLOUR_SEQUENCES: the text past them is one plain run. */
  var MAX_COLOUR_SEQUENCES = 64;

  /** Where the sequence past MAX_COLOUR_SEQUENCES starts in `text`, or -1. */
  function pastColourBound(text) {
    var sequences = /\u001b\[[0-9;:]*m/g;
    var count = 0;
    var found;
    while ((found = sequences.exec(text)) !== null) if (++count > MAX_COLOUR_SEQUENCES) return found.index;
    return -1;
  }

  function colourSpans(text) {
    if (text.indexOf("\u001b[") === -1 || !docket.Anser) return [{ text: text, classes: [] }];
    var plainFrom = pastColourBound(text);
    if (plainFrom !== -1) return colourSpans(text.slice(0, plainFrom)).concat([{ text: text.slice(plainFrom).replace(/\u001b\[[0-9;:]*m/g, ""), classes: [] }]);
    return docket.Anser.ansiToJson(withSemicolons(text), { use_classes: true, remove_empty: true }).map(function (token) {
      var classes = [];
      var fg = token.isInverted ? basicColour(token.bg, token.bg_truecolor) : basicColour(token.fg, token.fg_truecolor);
      var bg = token.isInverted ? basicColour(token.fg, token.fg_truecolor) : basicColour(token.bg, token.bg_truecolor);
      if (fg) classes.push(fg + "-fg");
      if (bg) classes.push(bg + "-bg");
      (token.decorations || []).forEach(function (d) {
        if (DECORATIONS[d]) classes.push("ansi-" + d);
      });
      return { text: token.content, classes: classes };
    });
  }

  /** Fills `element` with the coloured runs of `text` (textContent only). */
  function renderColoured(element, text) {
    var spans = colourSpans(text);
    if (spans.length === 1 && spans[0].classes.length === 0) {
      element.textContent = spans[0].text;
      return;
    }
    element.textContent = "";
    spans.forEach(function (span) {
      if (span.classes.length === 0) {
        element.appendChild(document.createTextNode(span.text));
        return;
      }
      var node = document.createElement("span");
      node.className = span.classes.join(" ");
      node.textContent = span.text;
      element.appendChild(node);
    });
  }

  docket.colourSpans = colourSpans;
  docket.renderColoured = renderColoured;
})();
