// Filters of an experiment page: a chart stays visible when, for every filter set, one of its values matches.
(function () {
  var selects = document.querySelectorAll(".filters select");
  function apply() {
    var shown = 0, charts = document.querySelectorAll("figure.chart");
    charts.forEach(function (fig) {
      var ok = true;
      selects.forEach(function (s) {
        if (s.value && (fig.dataset[s.name] || "").split("|").indexOf(s.value) < 0) { ok = false; }
      });
      fig.hidden = !ok;
      if (ok) { shown++; }
    });
    var count = document.getElementById("shown");
    if (count) { count.textContent = shown + " of " + charts.length + " charts"; }
  }
  selects.forEach(function (s) { s.addEventListener("change", apply); });
  apply();
})();
