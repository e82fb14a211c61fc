// run-form.js — the capability form's confirmation (README.md): a form the server marked with
// data-confirm (effect: write, and only then) asks before it is sent, and says it was confirmed.
// Without this script the form carries a box to tick instead (inside <noscript>).
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

  function boot() {
    Array.prototype.forEach.call(document.querySelectorAll("form[data-docket-run]"), wire);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
  else boot();
})();
