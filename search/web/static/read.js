// The reading page: each paragraph's "Copy citation" button puts its citation
// (repository:path#chunk:lines, what every face of Glossator takes) on the clipboard.
// The buttons are hidden until this runs: without JavaScript the citation is still
// printed beside each paragraph, to select and copy by hand.
(function () {
  "use strict";
  if (!navigator.clipboard) return;
  var buttons = document.querySelectorAll("button.copy[data-copy]");
  Array.prototype.forEach.call(buttons, function (button) {
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(button.getAttribute("data-copy")).then(
        function () { button.textContent = "Copied"; },
        function () { button.textContent = "Select the citation to copy it"; }
      ).then(function () {
        window.setTimeout(function () { button.textContent = "Copy citation"; }, 2000);
      });
    });
  });
})();
