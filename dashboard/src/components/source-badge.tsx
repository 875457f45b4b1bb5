import type { ConfigSource } from '../api/config-api.js';

const LABELS: Record<string, string> = { api: 'API', file: 'config file', env: 'environment', builtin: 'built in' };

/** Where a provider, key or route comes from; only what the API set can be deleted here. */
export function SourceBadge({ source }: { source: ConfigSource }) {
  return (
    <span class={`badge source-${source}`} title={source === 'api' ? 'Set through the API or this dashboard' : `From the ${LABELS[source] ?? source}: change it there`}>
      {LABELS[source] ?? source}
    </span>
  );
}
