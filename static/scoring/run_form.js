// The run form: filter the scenario catalogue, and picking a scenario selects "Picked scenarios".
(function () {
  "use strict";
  var filter = document.getElementById("scenario-filter");
  var list = document.getElementById("scenario-list");
  if (!filter || !list) { return; }
  filter.addEventListener("input", function () {
    var needle = filter.value.trim().toLowerCase();
    list.querySelectorAll(".scenario-choice").forEach(function (label) {
      label.hidden = needle !== "" && label.dataset.name.indexOf(needle) === -1;
    });
  });
  list.addEventListener("change", function () {
    var pick = document.querySelector('input[name="scope"][value="pick"]');
    if (pick && list.querySelector("input:checked")) { pick.checked = true; }
  });
  var domain = document.getElementById("id_domain");
  if (domain) {
    domain.addEventListener("change", function () {
      var one = document.querySelector('input[name="scope"][value="domain"]');
      if (one) { one.checked = true; }
    });
  }
})();
