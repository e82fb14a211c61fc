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

  /** Text → [{ text, classes }], the same runs as the server renders. */
  function colourSpans(text) {
    if (text.indexOf("\u001b[") === -1 || !docket.Anser) return [{ text: text, classes: [] }];
    return docket.Anser.ansiToJson(text, { use_classes: true, remove_empty: true }).map(function (token) {
      var classes = [];
      var fg = token.isInverted ? token.bg : token.fg;
      var bg = token.isInverted ? token.fg : token.bg;
      if (fg && NAMED[fg]) classes.push(fg + "-fg");
      if (bg && NAMED[bg]) classes.push(bg + "-bg");
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
