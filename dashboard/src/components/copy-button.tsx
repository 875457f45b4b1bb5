import { useState } from 'preact/hooks';

/** Copies `text` to the clipboard and says so; where the clipboard is not allowed it says to copy by hand. */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  const copy = async (): Promise<void> => {
    try {
      await navigator.clipboard.writeText(text);
      setState('copied');
    } catch {
      // The clipboard API needs a secure context (https or localhost) and permission.
      setState('failed');
    }
  };
  return (
    <span>
      <button type="button" onClick={() => void copy()}>
        {label}
      </button>
      <span role="status" aria-live="polite" class="muted">
        {state === 'copied' ? ' Copied.' : state === 'failed' ? ' Copying is not allowed here: select the text and copy it.' : ''}
      </span>
    </span>
  );
}
