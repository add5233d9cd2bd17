// Scenario catalogue: filter the cards as you type (a group whose cards are all filtered out
// hides with them); the form's ?q= does the same without the script.
import { wireFilter } from "../common/filter.js";

const input = document.getElementById("scenario-search");
const catalogue = document.getElementById("catalogue");
if (input && catalogue) {
  wireFilter(input, catalogue, {
    itemSelector: ".scenario-card", groupSelector: "[data-filter-group]",
    countNode: document.getElementById("scenario-count"),
  });
}
