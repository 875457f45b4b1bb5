import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../api/client.js';
import { saveConfig, validateConfig, type ConfigWarning, type EffectiveConfig } from '../api/settings-api.js';
import { useApi } from '../api/use-api.js';
import { ConfirmButton } from '../components/confirm-button.js';
import { ErrorNotice } from '../components/error-notice.js';
import { Loading } from '../components/states.js';
import { dateTime } from '../format.js';
import { configYaml, lineOfField, lineRange, parseConfigYaml } from '../settings-yaml.js';
import './settings.css';

/** How long typing pauses before the text is checked by the gateway's dry run. */
const CHECK_DELAY_MS = 400;

interface Problem {
  message: string;
  /** The field the API named (`settings.log_retention_days`); null for a YAML syntax error. */
  field: string | null;
  line: number | null;
}

type Check = { state: 'idle' } | { state: 'checking' } | { state: 'ok'; warnings: ConfigWarning[] } | { state: 'problem'; problem: Problem };

type Saved = { version: number; changed: boolean };

function asApiError(err: unknown): ApiError {
  return err instanceof ApiError ? err : new ApiError(0, err instanceof Error ? err.message : String(err));
}

/** An API refusal as a problem in the text: the message, the field it names and that field's line. */
function problemOf(error: ApiError, text: string): Problem {
  return { message: error.message, field: error.param, line: error.param ? lineOfField(text, error.param) : null };
}

function namesIn(section: unknown): Set<string> {
  if (Array.isArray(section)) return new Set(section.flatMap((item: unknown) => (item && typeof item === 'object' && typeof (item as { name?: unknown }).name === 'string' ? [(item as { name: string }).name] : [])));
  return new Set(section && typeof section === 'object' ? Object.keys(section) : []);
}

/** Providers and routes set through the API that the edited text no longer has: saving deletes them. */
function removedItems(view: EffectiveConfig, document: Record<string, unknown>): string[] {
  const removed: string[] = [];
  for (const section of ['providers', 'routes'] as const) {
    const kept = namesIn(document[section]);
    for (const item of view[section]) {
      if (item.source === 'api' && typeof item.name === 'string' && !kept.has(item.name)) removed.push(`${section}.${item.name}`);
    }
  }
  return removed;
}

/**
 * The effective config as YAML: edited in place, checked by `POST /api/config/validate` as the operator types
 * (the API's message and the field it names shown under the text), saved with `PUT /api/config`. What describes
 * the running gateway (version, precedence, file, warnings) is shown beside it and not sent.
 */
export function SettingsPage() {
  const loaded = useApi((signal) => api.get<EffectiveConfig>('/config', {}, signal), []);
  const [view, setView] = useState<EffectiveConfig | null>(null);
  const [base, setBase] = useState('');
  const [text, setText] = useState<string | null>(null);
  const [check, setCheck] = useState<Check>({ state: 'idle' });
  const [saving, setSaving] = useState(false);
  const [saved, setSaved] = useState<Saved | null>(null);
  const [saveError, setSaveError] = useState<ApiError | null>(null);
  /** A check the API refused or could not answer (not a refusal of the config): shown until a later check is answered. */
  const [checkError, setCheckError] = useState<ApiError | null>(null);
  const editor = useRef<HTMLTextAreaElement>(null);
  const confirmDialog = useRef<HTMLDialogElement>(null);
  /** A save that would delete items set through the API, waiting for the operator to confirm it. */
  const [pending, setPending] = useState<{ document: Record<string, unknown>; removed: string[] } | null>(null);

  const show = (next: EffectiveConfig): void => {
    const yaml = configYaml(next);
    setView(next);
    setBase(yaml);
    setText(yaml);
    setCheck({ state: 'idle' });
  };

  useEffect(() => {
    if (loaded.data) show(loaded.data);
  }, [loaded.data]);

  // Check the text once typing pauses; a newer keystroke cancels the check in flight.
  useEffect(() => {
    if (text === null || text === base) {
      setCheck({ state: 'idle' });
      return;
    }
    const controller = new AbortController();
    const timer = setTimeout(() => {
      const parsed = parseConfigYaml(text);
      if (!parsed.ok) {
        setCheck({ state: 'problem', problem: { message: parsed.message, field: null, line: parsed.line } });
        return;
      }
      setCheck({ state: 'checking' });
      validateConfig(parsed.value, controller.signal)
        .then((result) => {
          setCheck({ state: 'ok', warnings: result.warnings });
          setCheckError(null);
        })
        .catch((err: unknown) => {
          if (controller.signal.aborted) return;
          const error = asApiError(err);
          // Only a refusal of the config belongs in the text; a refused or unreachable API shows above it, until a
          // later check gets an answer.
          if (error.status === 400) {
            setCheck({ state: 'problem', problem: problemOf(error, text) });
            setCheckError(null);
          } else {
            setCheck({ state: 'idle' });
            setCheckError(error);
          }
        });
    }, CHECK_DELAY_MS);
    return () => {
      clearTimeout(timer);
      controller.abort();
    };
  }, [text, base]);

  const goToLine = (line: number): void => {
    const element = editor.current;
    if (!element || text === null) return;
    const [start, end] = lineRange(text, line);
    element.focus();
    element.setSelectionRange(start, end);
    // Scroll the line into view: about one line-height per line.
    const lineHeight = parseFloat(getComputedStyle(element).lineHeight) || 20;
    element.scrollTop = Math.max(0, (line - 3) * lineHeight);
  };

  const save = (event: Event): void => {
    event.preventDefault();
    if (text === null || !view) return;
    setSaved(null);
    setSaveError(null);
    setCheckError(null);
    const parsed = parseConfigYaml(text);
    if (!parsed.ok) {
      setCheck({ state: 'problem', problem: { message: parsed.message, field: null, line: parsed.line } });
      return;
    }
    const removed = removedItems(view, parsed.value);
    if (removed.length > 0) {
      setPending({ document: parsed.value, removed });
      confirmDialog.current?.showModal();
      return;
    }
    void apply(parsed.value);
  };

  const apply = async (document: Record<string, unknown>): Promise<void> => {
    if (text === null || !view) return;
    setSaving(true);
    try {
      const result = await saveConfig(document, view.version);
      setSaved({ version: result.version, changed: result.version !== view.version });
      show(result);
    } catch (err) {
      const error = asApiError(err);
      if (error.status === 400) setCheck({ state: 'problem', problem: problemOf(error, text) });
      else setSaveError(error);
    } finally {
      setSaving(false);
    }
  };

  const dirty = text !== null && text !== base;
  const problem = check.state === 'problem' ? check.problem : null;

  return (
    <section aria-labelledby="settings-title">
      <h1 id="settings-title">Settings</h1>
      <ErrorNotice error={loaded.error ?? saveError ?? checkError} />
      {view ? (
        <>
          <ConfigInfo view={view} />
          <div class="panel">
            <form id="config-editor" noValidate onSubmit={save} aria-labelledby="config-editor-title">
              <h2 id="config-editor-title">Effective configuration</h2>
              <p class="muted" id="config-yaml-hint">
                Everything in effect, from every source, as YAML. Saving replaces what was set through the API with what this text holds beyond the
                config file, the environment and the defaults (<code>PUT /api/config</code>); it applies to the next request without a restart. Masked
                secrets (<code>****abcd</code>) stand for the stored values; <code>host</code>, <code>port</code> and <code>data_dir</code> are read once at
                start and cannot be changed here.
              </p>
              <label for="config-yaml" class="visually-hidden">
                Configuration (YAML)
              </label>
              <textarea
                id="config-yaml"
                ref={editor}
                class="yaml-editor"
                spellcheck={false}
                autoComplete="off"
                autoCapitalize="off"
                rows={Math.min(40, Math.max(16, (text ?? '').split('\n').length + 1))}
                value={text ?? ''}
                aria-invalid={problem ? true : undefined}
                aria-describedby={`config-yaml-status config-yaml-hint`}
                onInput={(event) => {
                  setSaved(null);
                  setText((event.target as HTMLTextAreaElement).value);
                }}
              />
              <div id="config-yaml-status" class="editor-status" aria-live="polite">
                {problem ? (
                  <div class="field-error editor-problem" data-testid="config-problem">
                    <span>
                      {problem.line !== null ? <strong>Line {problem.line}</strong> : null}
                      {problem.line !== null && problem.field ? ' · ' : null}
                      {problem.field ? <code data-testid="config-problem-field">{problem.field}</code> : null}
                      {problem.line !== null || problem.field ? ': ' : null}
                      <span data-testid="config-problem-message">{problem.message}</span>
                    </span>
                    {problem.line !== null ? (
                      <button type="button" onClick={() => goToLine(problem.line!)}>
                        Go to line {problem.line}
                      </button>
                    ) : null}
                  </div>
                ) : check.state === 'checking' ? (
                  <span class="muted">Checking…</span>
                ) : check.state === 'ok' ? (
                  <span class="ok" data-testid="config-valid">
                    Valid: saving applies it{check.warnings.length ? `, with ${check.warnings.length} warning${check.warnings.length === 1 ? '' : 's'}` : ''}.
                  </span>
                ) : saved ? (
                  <span class="ok" role="status" data-testid="config-saved">
                    {saved.changed ? `Saved: the gateway runs config version ${saved.version}.` : `Nothing changed: the gateway still runs version ${saved.version}.`}
                  </span>
                ) : dirty ? null : (
                  <span class="muted">No unsaved changes.</span>
                )}
              </div>
              {check.state === 'ok' && check.warnings.length ? <Warnings title="Warnings of the edited config" warnings={check.warnings} /> : null}
            </form>
            {/* Outside the form: the discard button's confirmation dialog holds a form of its own. */}
            <div class="actions">
              <button type="submit" form="config-editor" disabled={saving || !dirty || problem !== null}>
                {saving ? 'Saving…' : 'Save'}
              </button>
              {dirty && !saving ? (
                <ConfirmButton label="Discard changes" title="Discard your changes?" confirmLabel="Discard changes" class="" onConfirm={() => view && show(view)}>
                  <p>The text goes back to the configuration the gateway runs. Nothing was saved.</p>
                </ConfirmButton>
              ) : (
                <button type="button" disabled>
                  Discard changes
                </button>
              )}
              <button
                type="button"
                disabled={saving || dirty}
                title={dirty ? 'Save or discard your changes first' : undefined}
                onClick={() => {
                  setSaved(null);
                  loaded.reload();
                }}
              >
                Reload from the gateway
              </button>
            </div>
          </div>
          <dialog ref={confirmDialog} aria-label="Delete items set through the API?" onClose={() => setPending(null)}>
            <form
              method="dialog"
              onSubmit={(event) => {
                const submitter = (event as SubmitEvent).submitter as HTMLButtonElement | null;
                if (submitter?.value === 'confirm' && pending) void apply(pending.document);
              }}
            >
              <h2>Delete items set through the API?</h2>
              <p>The edited configuration no longer has these, so saving deletes them (what the config file defines stays):</p>
              <ul class="info-list">
                {(pending?.removed ?? []).map((item) => (
                  <li key={item}>
                    <code>{item}</code>
                  </li>
                ))}
              </ul>
              <div class="actions">
                <button type="submit" value="cancel" autofocus>
                  Cancel
                </button>
                <button type="submit" value="confirm" class="danger">
                  Save and delete
                </button>
              </div>
            </form>
          </dialog>
        </>
      ) : loaded.loading ? (
        <Loading what="the configuration" />
      ) : null}
    </section>
  );
}

function Warnings({ title, warnings }: { title: string; warnings: ConfigWarning[] }) {
  return (
    <div>
      <h3 class="warning">{title}</h3>
      <ul class="info-list" aria-label={title}>
        {warnings.map((warning) => (
          <li key={`${warning.field}:${warning.message}`}>
            <code>{warning.field}</code>: {warning.message}
          </li>
        ))}
      </ul>
    </div>
  );
}

/** What describes the running gateway: shown for information, never part of what is saved. */
function ConfigInfo({ view }: { view: EffectiveConfig }) {
  return (
    <div aria-labelledby="config-info-title">
      <h2 id="config-info-title" class="visually-hidden">
        Running configuration
      </h2>
      <dl class="fields">
        <div>
          <dt>Version</dt>
          <dd data-testid="config-version">{view.version}</dd>
        </div>
        <div>
          <dt>Config file</dt>
          <dd>{view.file ? <code>{view.file}</code> : <span class="muted">none</span>}</dd>
        </div>
        <div>
          <dt>Precedence (highest first)</dt>
          <dd>{view.precedence.join(' › ')}</dd>
        </div>
      </dl>
      {view.file_rejection ? (
        <div class="notice notice-error" role="alert">
          <strong>The last save of the config file was rejected</strong> ({dateTime(view.file_rejection.at)}, <code>{view.file_rejection.file}</code>):{' '}
          {view.file_rejection.reason}. The gateway runs on the config from before that save.
        </div>
      ) : null}
      {view.warnings.length ? (
        <Warnings title="Warnings of the running config" warnings={view.warnings} />
      ) : (
        <p class="muted">The running config has no warnings.</p>
      )}
    </div>
  );
}
