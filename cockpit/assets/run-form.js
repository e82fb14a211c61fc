// run-form.js — the capability form's confirmation: a form the server marked with data-confirm
// (effect: write, and only then) asks before it is sent, and says it was confirmed (without this
// script the form carries a box to tick instead, inside <noscript>). It also adds rows to
// repeatable groups and shows only the chosen shape of a variant; without it, every row the
// server rendered and every shape are there, and the chooser alone decides what is read.
(function () {
  "use strict";

  function wire(form) {
    var question = form.getAttribute("data-confirm");
    if (!question) return;
    form.addEventListener("submit", function (event) {
      var confirmed = form.querySelector("[data-confirmed]");
      var button = event.submitter;
      var ask = button && button.textContent ? question + "\n\n(" + button.textContent.trim() + ")" : question;
      if (!window.confirm(ask)) {
        event.preventDefault();
        if (confirmed) confirmed.value = "";
        return;
      }
      if (confirmed) confirmed.value = "1";
    });
  }

  /** The id the server gives a control (cockpit/json-schema-form.tsx idOf): dots become dashes, other characters ~<hex>~. */
  function idOf(control) {
    return (
      "field-" +
      control.replace(/[^A-Za-z0-9_]/gu, function (c) {
        return c === "." ? "-" : "~" + c.codePointAt(0).toString(16) + "~";
      })
    );
  }

  /**
   * The first element under `root` whose `attribute` is `value`: compared, not put in a selector,
   * where a property name holding `"` stopped the script (checking tester, session 41).
   */
  function withAttribute(root, tag, attribute, value) {
    var found = Array.prototype.filter.call(root.querySelectorAll(tag + "[" + attribute + "]"), function (element) {
      return element.getAttribute(attribute) === value;
    });
    return found.length > 0 ? found[0] : null;
  }

  /** What names a control or a group of them: renamed in a row added. */
  var NAMED = ["name", "id", "for", "aria-describedby", "data-rows", "data-row-template", "data-add-row", "data-variants"];

  /**
   * Renames every control and group under `root` from the template's index to the row's
   * (`names`, `ids`: [from, to]), inside the row templates it holds too (a list in each row): a
   * template's content is no child to querySelectorAll, and a row added in a row added kept the
   * template's names, which the server refuses; a variant kept its chooser's name, and showed no
   * fields (checking tester, session 41).
   */
  function renameIn(root, names, ids) {
    // Each name or id (aria-describedby lists several) begins with the row's: only that beginning
    // changes, never a later part that repeats it (`input.a.__row__.input.a.__row__.c`).
    function renamed(token) {
      if (token.indexOf(names[0]) === 0) return names[1] + token.slice(names[0].length);
      if (token.indexOf(ids[0]) === 0) return ids[1] + token.slice(ids[0].length);
      return token;
    }
    Array.prototype.forEach.call(root.querySelectorAll("*"), function (element) {
      NAMED.forEach(function (attribute) {
        var value = element.getAttribute(attribute);
        if (value === null) return;
        element.setAttribute(attribute, value.split(" ").map(renamed).join(" "));
      });
      if (element.tagName === "TEMPLATE" && element.content) renameIn(element.content, names, ids);
    });
  }

  /** "Add a row": clones the row template with the next index in every name, id and reference. */
  function wireRows(group) {
    var control = group.getAttribute("data-rows");
    var template = withAttribute(group, "template", "data-row-template", control);
    var button = withAttribute(group, "*", "data-add-row", control);
    var list = group.querySelector(".row-list");
    if (!template || !button || !list) return;
    var placeholder = template.getAttribute("data-row-index");
    button.hidden = false;
    button.addEventListener("click", function () {
      var index = Number(group.getAttribute("data-next-row")) || list.children.length;
      group.setAttribute("data-next-row", String(index + 1));
      var row = template.content.firstElementChild.cloneNode(true);
      var names = [control + "." + placeholder, control + "." + index];
      var ids = [idOf(control + "." + placeholder), idOf(control + "." + index)];
      row.setAttribute("data-row", String(index));
      renameIn(row, names, ids);
      list.appendChild(row);
      Array.prototype.forEach.call(row.querySelectorAll("[data-rows]"), wireRows);
      Array.prototype.forEach.call(row.querySelectorAll("[data-variants]"), wireVariants);
      var first = row.querySelector("input, select, textarea");
      if (first) first.focus();
    });
  }

  /** A variant chooser shows only the chosen shape's fields, and sends only those. */
  function wireVariants(group) {
    var control = group.getAttribute("data-variants");
    var radios = Array.prototype.filter.call(group.querySelectorAll("input[type=radio]"), function (radio) {
      return radio.getAttribute("name") === control + ".variant";
    });
    function show() {
      // The checked property, not `:checked`: a chooser served with its null choice checked keeps
      // that attribute after another is picked, and happy-dom (the tests' DOM) matches the attribute.
      var chosen = Array.prototype.filter.call(radios, function (radio) {
        return radio.checked;
      })[0];
      var value = chosen ? chosen.value : null;
      Array.prototype.forEach.call(group.children, function (child) {
        if (!child.hasAttribute("data-variant")) return;
        var on = child.getAttribute("data-variant") === value;
        child.hidden = !on;
        child.disabled = !on;
      });
    }
    Array.prototype.forEach.call(radios, function (radio) {
      radio.addEventListener("change", show);
    });
    show();
  }

  /** Wires the forms under `scope` not wired yet: at load, and for a section the page re-read from the server (refresh.js). */
  function wireForms(scope) {
    Array.prototype.forEach.call(scope.querySelectorAll("form[data-docket-run]"), function (form) {
      if (form.hasAttribute("data-wired")) return;
      form.setAttribute("data-wired", "");
      wire(form);
      Array.prototype.forEach.call(form.querySelectorAll("[data-rows]"), wireRows);
      Array.prototype.forEach.call(form.querySelectorAll("[data-variants]"), wireVariants);
    });
  }

  var docket = (window.docket = window.docket || {});
  docket.wireForms = wireForms;

  function boot() {
    wireForms(document);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
  else boot();
})();
