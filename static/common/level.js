// The loudness of a MediaStream, 0..1, sampled 20 times a second: the call page's microphone
// meter and the agent's "speaking" state both read it. A timer rather than animation frames: a
// meter sampled on every frame kept the page repainting at the display's rate for the whole call.

const SAMPLE_MS = 50;

export function levelMeter(audioContext, stream, onLevel) {
  const source = audioContext.createMediaStreamSource(stream);
  const analyser = audioContext.createAnalyser();
  analyser.fftSize = 512;
  source.connect(analyser);
  const samples = new Float32Array(analyser.fftSize);
  const timer = setInterval(() => {
    analyser.getFloatTimeDomainData(samples);
    let sum = 0;
    for (let i = 0; i < samples.length; i++) sum += samples[i] * samples[i];
    onLevel(Math.min(1, Math.sqrt(sum / samples.length) * 4));
  }, SAMPLE_MS);
  return () => { clearInterval(timer); source.disconnect(); };
}
