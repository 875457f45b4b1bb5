/**
 * What `tollgate init` writes: a small config that runs as it is (a test starts the gateway on it and checks it
 * with check-config), with the settings people change first shown and the rest one comment away.
 */
export const STARTER_CONFIG = `# tollgate configuration: YAML (JSON works too). Saving this file applies it without a restart.
# Every field is described in config.schema.json and in the README's "Configuration" section.
# Check it with: tollgate check-config <this file>

settings:
  port: 8080                  # PORT or --port win over this
  host: 0.0.0.0               # HOST or --host win over this
  data_dir: ./data            # keys, spend and the request log (LMDB); TOLLGATE_DATA_DIR wins over this
  log_level: info
  # require_virtual_key: true # every model call needs a virtual key (create one: POST /api/keys)
  # anonymous_access: any     # serve calls without a virtual key to every client, not only this machine

# A vendor's environment key (OPENAI_API_KEY, ANTHROPIC_API_KEY, GROQ_API_KEY, ...) is used when no keys are
# given here. Key values are literals, env:NAME or file:/path.
providers: {}
#  openai:
#    api_key: env:OPENAI_API_KEY
#  local:                     # your own OpenAI-compatible server, asked for as local/<model>
#    type: openai
#    base_url: http://127.0.0.1:8000/v1

# A route is a model name of your own: clients ask for model "chat", tollgate picks a target by weight and
# tries the fallbacks in order when it fails. A target whose provider has no key is skipped (and warned about).
routes:
  chat:
    targets:
      - { model: openai/gpt-4o-mini, weight: 1 }
    # fallbacks: [anthropic/claude-haiku-4-5]
`;
