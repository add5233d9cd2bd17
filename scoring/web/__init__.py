"""The interactive side of the site: starting, cancelling and resuming runs from the browser,
recovering runs whose coordinator died, and the figures the run, result and compare pages draw."""
