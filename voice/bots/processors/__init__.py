"""Small pipecat FrameProcessors the built-in bots are assembled from."""
