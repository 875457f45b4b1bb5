import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './client.js';

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | null;
  loading: boolean;
  reload(): void;
}

/** Whether two renders' `deps` name the same load. */
function sameDeps(a: unknown[] | null, b: unknown[]): boolean {
  return a !== null && a.length === b.length && a.every((value, index) => Object.is(value, b[index]));
}

/**
 * Runs `load` when `deps` change, and again every `pollMs` while the tab is visible (a hidden tab does not poll
 * the gateway). Earlier data stays on screen while a reload runs, so polling does not flicker, and when a reload of
 * the same `deps` fails (a poll while the gateway restarts). A load for other `deps` that fails drops it: it answered
 * another query (the Spend page's totals by key showed as a refused range's totals by team, a request's details
 * under another request's id).
 */
export function useApi<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[], pollMs?: number): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  /** The `deps` the data on screen was loaded for. */
  const dataDeps = useRef<unknown[] | null>(null);
  const reload = useCallback(() => setTick((n) => n + 1), []);

  useEffect(() => {
    const controller = new AbortController();
    const asked = deps;
    setLoading(true);
    loadRef
      .current(controller.signal)
      .then((value) => {
        dataDeps.current = asked;
        setData(value);
        setError(null);
      })
      .catch((err: unknown) => {
        if (controller.signal.aborted) return;
        if (!sameDeps(dataDeps.current, asked)) {
          dataDeps.current = null;
          setData(undefined);
        }
        setError(err instanceof ApiError ? err : new ApiError(0, err instanceof Error ? err.message : String(err)));
      })
      .finally(() => {
        if (!controller.signal.aborted) setLoading(false);
      });
    return () => controller.abort();
    // The caller names what the load depends on; `tick` is a reload asked for (by polling or after a change).
  }, [...deps, tick]);

  useEffect(() => {
    if (!pollMs) return;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') reload();
    }, pollMs);
    return () => clearInterval(timer);
  }, [pollMs, reload]);

  return { data, error, loading, reload };
}
