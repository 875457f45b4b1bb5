import type { ComponentChildren } from 'preact';
import { api } from '../api/client.js';
import { guardrailEntry } from '../api/guardrails-api.js';
import type { LogRecord } from '../api/types.js';
import { useApi } from '../api/use-api.js';
import { ErrorNotice } from '../components/error-notice.js';
import { Loading } from '../components/states.js';
import { count, dateTime, ms, usd } from '../format.js';
import { href } from '../router.js';

function Field({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <div>
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/** One request of the log: what was asked, each attempt upstream, timings, tokens and cost. */
export function LogDetailPage({ id }: { id: string }) {
  const record = useApi((signal) => api.get<LogRecord>(`/logs/${encodeURIComponent(id)}`, {}, signal), [id]);
  const r = record.data;
  return (
    <section aria-labelledby="log-title">
      <p>
        <a href={href('/logs')}>← All requests</a>
      </p>
      <h1 id="log-title">
        Request <code>{id}</code>
      </h1>
      <ErrorNotice error={record.error} />
      {!r ? (
        record.loading ? <Loading what="the request" /> : null
      ) : (
        <>
          <dl class="fields">
            <Field label="Time">{dateTime(r.at)}</Field>
            <Field label="Status">
              <span class={`badge status-${String(r.status)[0]}xx`}>{r.status}</span>
              {r.cancelled ? ' (cancelled by the client)' : ''}
            </Field>
            <Field label="Path">
              {r.dialect} · {r.path} · {r.operation}
              {r.stream ? ' · stream' : ''}
            </Field>
            <Field label="Model asked">{r.model ?? '—'}</Field>
            <Field label="Served by">{r.provider ? `${r.provider}/${r.upstream_model ?? '?'}` : '—'}</Field>
            <Field label="Route">{r.route ?? '—'}{r.fallback ? ' (fallback used)' : ''}</Field>
            <Field label="Key / team">
              {r.key_id ?? 'none'} / {r.team_id ?? 'none'}
            </Field>
            {typeof r.write_seq === 'number' ? (
              <Field label="Write sequence">
                <code title="Its place in the order records were written: a log shipper's written_after cursor">{r.write_seq}</code>
              </Field>
            ) : null}
            {r.guardrails?.length ? (
              <Field label="Guardrails">
                <ul class="plain" data-testid="log-guardrails">
                  {r.guardrails.map((entry) => (
                    <li key={entry}>{guardrailEntry(entry)}</li>
                  ))}
                </ul>
              </Field>
            ) : null}
            {r.error_message || r.error_code ? (
              <Field label="Error">
                {r.error_code ? <code>{r.error_code}</code> : null} {r.error_message}
              </Field>
            ) : null}
          </dl>

          <h2>Timings</h2>
          <dl class="fields">
            <Field label="Total">{ms(r.duration_ms)}</Field>
            <Field label="Upstream">{ms(r.upstream_ms)}</Field>
            <Field label="First token">{ms(r.first_token_ms)}</Field>
            <Field label="Gateway overhead">{ms(r.overhead_ms)}</Field>
          </dl>

          <h2>Tokens and cost</h2>
          <dl class="fields">
            <Field label="Prompt">{count(r.prompt_tokens)}</Field>
            <Field label="Completion">{count(r.completion_tokens)}</Field>
            <Field label="Cached / cache write">
              {count(r.cached_tokens)} / {count(r.cache_write_tokens)}
            </Field>
            <Field label="Reasoning">{count(r.reasoning_tokens)}</Field>
            <Field label="Cost">
              {usd(r.cost_usd)}
              {r.priced ? '' : ' (model not priced)'}
              {r.estimated ? ' (tokens estimated)' : ''}
            </Field>
          </dl>

          <h2>Attempts</h2>
          {r.attempts.length ? (
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">#</th>
                    <th scope="col">Provider</th>
                    <th scope="col">Model</th>
                    <th scope="col">Status</th>
                    <th scope="col">Duration</th>
                    <th scope="col">Error</th>
                  </tr>
                </thead>
                <tbody>
                  {r.attempts.map((attempt, index) => (
                    <tr key={index}>
                      <td>{index + 1}</td>
                      <td>{attempt.provider}</td>
                      <td>{attempt.model}</td>
                      <td>{attempt.status ?? '—'}</td>
                      <td>{ms(attempt.duration_ms)}</td>
                      <td>{attempt.error_code ?? ''}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          ) : (
            <p class="muted">No upstream call was made (answered or refused by the gateway itself).</p>
          )}
          {r.user || r.metadata ? (
            <>
              <h2>Tags</h2>
              <dl class="fields">
                {r.user ? <Field label="user">{r.user}</Field> : null}
                {Object.entries(r.metadata ?? {}).map(([name, value]) => (
                  <Field key={name} label={name}>
                    {value}
                  </Field>
                ))}
              </dl>
            </>
          ) : null}
        </>
      )}
    </section>
  );
}
