// Type-to-filter over a set of elements: each element's searchable text is its data-search
// attribute (lower case); groups (elements with data-filter-group) hide when all their items do.

export function filterItems(query, items) {
  const needles = query.trim().toLowerCase().split(/\s+/).filter(Boolean);
  let shown = 0;
  items.forEach((item) => {
    const haystack = item.dataset.search || item.textContent.toLowerCase();
    const match = needles.every((needle) => haystack.includes(needle));
    item.hidden = !match;
    if (match) shown += 1;
  });
  return shown;
}

export function wireFilter(input, container, { itemSelector, groupSelector, countNode } = {}) {
  const update = () => {
    const items = Array.from(container.querySelectorAll(itemSelector));
    const shown = filterItems(input.value, items);
    if (groupSelector) {
      container.querySelectorAll(groupSelector).forEach((group) => {
        group.hidden = !group.querySelector(itemSelector + ":not([hidden])");
      });
    }
    if (countNode) countNode.textContent = shown + " of " + items.length + " shown";
  };
  input.addEventListener("input", update);
  update();
  return update;
}
