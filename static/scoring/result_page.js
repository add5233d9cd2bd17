// Result page: the recording and the transcript move together (click a turn, in the transcript or
// on the turn timeline, to play from there; while it plays the current turn is highlighted and
// the playhead moves), and the keyboard walks through the run's results (p previous, n next,
// u next needing review) unless you are typing.
const audio = document.getElementById("conversation-audio");
const timeline = document.getElementById("timeline");
const strip = document.getElementById("turn-timeline");
const playhead = document.getElementById("playhead");
const nowPlaying = document.getElementById("now-playing");

function turns() {
  return Array.from(document.querySelectorAll("#timeline .turn[data-start]"));
}

function seekTo(start) {
  audio.currentTime = start;
  audio.play().catch(() => { /* playback refused: the position is still set */ });
}

function currentTurn(time) {
  let found = null;
  for (const turn of turns()) {
    if (Number(turn.dataset.start) <= time + 0.05) found = turn;
    else break;
  }
  return found;
}

let shown = null;
function highlight() {
  const turn = currentTurn(audio.currentTime);
  if (playhead && audio.duration) {
    playhead.style.left = Math.min(100, (audio.currentTime / audio.duration) * 100) + "%";
  }
  if (turn === shown) return;
  if (shown) {
    shown.classList.remove("current");
    shown.removeAttribute("aria-current");
  }
  document.querySelectorAll("#turn-timeline .segment.current").forEach((s) => s.classList.remove("current"));
  shown = turn;
  if (!turn) return;
  turn.classList.add("current");
  turn.setAttribute("aria-current", "true");
  const segment = strip && strip.querySelector('.segment[data-turn="' + turn.dataset.turn + '"]');
  if (segment) segment.classList.add("current");
  if (nowPlaying) {
    const role = turn.querySelector(".role");
    const said = turn.querySelector(".said");
    nowPlaying.textContent = (role ? role.textContent : "") + ": " + (said ? said.textContent : "");
  }
  if (!audio.paused) turn.scrollIntoView({ block: "nearest", behavior: "smooth" });
}

if (audio) {
  audio.addEventListener("timeupdate", highlight);
  audio.addEventListener("seeked", highlight);
  if (timeline) {
    timeline.addEventListener("click", (event) => {
      const turn = event.target.closest(".turn[data-start]");
      if (turn && !event.target.closest("a, summary, details")) seekTo(Number(turn.dataset.start));
    });
    timeline.addEventListener("keydown", (event) => {
      const turn = event.target.closest(".turn[data-start]");
      if (turn && (event.key === "Enter" || event.key === " ")) {
        event.preventDefault();
        seekTo(Number(turn.dataset.start));
      }
    });
  }
  if (strip) {
    strip.addEventListener("click", (event) => {
      const segment = event.target.closest(".segment[data-start]");
      if (segment) seekTo(Number(segment.dataset.start));
    });
  }
}

const nav = document.getElementById("result-nav");
const KEYS = { p: "previous", n: "next", u: "nextUnreviewed" };
document.addEventListener("keydown", (event) => {
  if (!nav || event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
  const target = event.target;
  if (target.closest && target.closest("input, textarea, select, [contenteditable]")) return;
  const where = KEYS[event.key];
  const url = where && nav.dataset[where];
  if (url) window.location.assign(url);
});
