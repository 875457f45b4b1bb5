/**
 * `work`, or the error `tooSlow()` makes, thrown at `deadline` (a Date.now() time). The work goes on (nothing cancels
 * a Promise); its failure after the deadline is not reported as unhandled: the caller decides what to do with it.
 */
export async function within<T>(work: Promise<T>, deadline: number, tooSlow: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  work.catch(() => undefined);
  try {
    return await Promise.race([work, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(tooSlow()), Math.max(0, deadline - Date.now()))))]);
  } finally {
    clearTimeout(timer);
  }
}
