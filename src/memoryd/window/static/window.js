// memoryd's window: the only script, served from the package (the CSP allows no other).
// It never writes HTML: every text on the page was escaped by the server.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // A class chosen for the block shows it at once.
  for (const select of document.querySelectorAll("select.autosubmit")) {
    select.addEventListener("change", () => select.form.submit());
  }
  // A button that changes something is pressed once: a slow answer is not sent twice.
  for (const form of document.querySelectorAll("form[method=post]")) {
    form.addEventListener("submit", () => {
      for (const button of form.querySelectorAll("button")) button.disabled = true;
    });
  }
});
