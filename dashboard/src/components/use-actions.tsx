import { useState } from 'preact/hooks';
import type { ApiError } from '../api/client.js';
import { asApiError } from '../api/config-api.js';

/**
 * What a page that changes things with single clicks (delete, revert, enable) shows of them: the last one's success
 * in words, or the API's refusal. `act` runs one change and then `settled` (the page reads its data again, whether
 * the change went through or not, so it shows what is true now).
 */
export function useActions(settled: () => void) {
  const [notice, setNotice] = useState<string | null>(null);
  const [actionError, setActionError] = useState<ApiError | null>(null);

  const act = async (change: () => Promise<unknown>, done: string): Promise<void> => {
    setActionError(null);
    setNotice(null);
    try {
      await change();
      setNotice(done);
    } catch (err) {
      setActionError(asApiError(err));
    }
    settled();
  };

  return { notice, setNotice, actionError, setActionError, act };
}

/** The success of the last change, read out by screen readers as it appears. */
export function SuccessNotice({ notice }: { notice: string | null }) {
  if (!notice) return null;
  return (
    <div class="notice notice-success" role="status">
      {notice}
    </div>
  );
}
