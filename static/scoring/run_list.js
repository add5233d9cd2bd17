// Run list: tick two runs to compare them; the button works only with exactly two ticked, and a
// third box cannot be ticked until one is cleared.
const form = document.getElementById("tick-compare");
if (form) {
  const button = document.getElementById("compare-ticked");
  const status = document.getElementById("tick-status");
  const boxes = () => Array.from(form.querySelectorAll('input[name="run"]'));
  const update = () => {
    const ticked = boxes().filter((box) => box.checked);
    button.disabled = ticked.length !== 2;
    boxes().forEach((box) => { box.disabled = !box.checked && ticked.length >= 2; });
    status.textContent = ticked.length === 2 ? "Two runs ticked." :
      ticked.length === 1 ? "Tick one more run." : "Tick two runs to compare them.";
  };
  form.addEventListener("change", update);
  update();
}
