"""Listening in on a live voice call from the browser: the bridge taps both directions, each
listener gets its own real-time 48 kHz mix as an outgoing WebRTC track."""
