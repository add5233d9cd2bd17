// The loudness of a MediaStream, 0..1, sampled on animation frames: the call page's microphone
// meter and the agent's "speaking" state both read it.

export function levelMeter(audioContext, stream, onLevel) {
  const source = audioContext.createMediaStreamSource(stream);
  const analyser = audioContext.createAnalyser();
  analyser.fftSize = 512;
  source.connect(analyser);
  const samples = new Float32Array(analyser.fftSize);
  let running = true;
  const tick = () => {
    if (!running) return;
    analyser.getFloatTimeDomainData(samples);
    let sum = 0;
    for (let i = 0; i < samples.length; i++) sum += samples[i] * samples[i];
    const rms = Math.sqrt(sum / samples.length);
    onLevel(Math.min(1, rms * 4));
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  return () => { running = false; source.disconnect(); };
}
