"""Audio shared by the bots, the bridge, the listen-in mix and the conditions: plain PCM helpers."""
