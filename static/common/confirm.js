// Forms that destroy or stop something ask first: <form data-confirm="question">. Delegated from
// the document, so forms that arrive later (live panels) ask too.

export function confirmForms(root = document) {
  root.addEventListener("submit", (event) => {
    const form = event.target.closest && event.target.closest("form[data-confirm]");
    if (form && !window.confirm(form.dataset.confirm)) event.preventDefault();
  });
}
