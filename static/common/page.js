// Loaded by every page: local times and confirmations.
import { confirmForms } from "./confirm.js";
import { localiseTimes } from "./times.js";

localiseTimes();
confirmForms();
