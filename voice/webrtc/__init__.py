"""Shared aiortc basics for the browser-facing peers (human calls, listening in): ICE
configuration, loopback candidates, and turning a browser's SDP offer into an answer."""
