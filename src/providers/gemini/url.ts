/** `models/<id>` unless the model already names its collection (`tunedModels/x`, `models/x`). */
export function modelPath(model: string): string {
  return model.includes('/') ? model : `models/${model}`;
}

/** The generateContent URL under a base URL; streams ask for SSE framing (`alt=sse`) instead of a JSON array. */
export function generateContentUrl(baseUrl: string, model: string, stream: boolean): string {
  const base = baseUrl.endsWith('/') ? baseUrl.slice(0, -1) : baseUrl;
  return `${base}/${modelPath(model)}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`;
}
