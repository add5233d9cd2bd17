// Result page: clicking (or pressing Enter on) a transcript turn plays the recording from there.
(function () {
  "use strict";
  var audio = document.getElementById("conversation-audio");
  var timeline = document.getElementById("timeline");
  if (!audio || !timeline) { return; }
  function seek(target) {
    var turn = target.closest(".turn[data-start]");
    if (!turn) { return; }
    audio.currentTime = Number(turn.dataset.start);
    audio.play().catch(function () { /* autoplay refused: the position is still set */ });
  }
  timeline.addEventListener("click", function (event) { seek(event.target); });
  timeline.addEventListener("keydown", function (event) { if (event.key === "Enter") { seek(event.target); } });
})();
