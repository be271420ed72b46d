// Package config is hitlbot's one YAML file: its typed form (Config, whose
// structs document every key), how it is loaded, validated and printed.
// Only cmd/bot uses it; every other package takes its own typed config
// struct, which Config reuses where one exists (approval.PolicyConfig,
// model.OpenAIConfig, httptool.ToolConfig, …).
//
// # Layers
//
// Load reads, lowest first:
//
//  1. the embedded defaults (defaults.yaml in this directory),
//  2. the file (-config PATH; else ./config.yaml when it exists),
//  3. the environment: HITLBOT_ and the key's path upper-cased with dots
//     as underscores, e.g. HITLBOT_MODEL_OPENAI_API_KEY,
//     HITLBOT_APPROVAL_POLICY_CONFIDENCE_THRESHOLD,
//     HITLBOT_APPROVAL_POLICY_TIMEOUTS_HIGH=10m,
//  4. command-line overrides (-listen, -data).
//
// Every key has an explicit viper.BindEnv (Bindings lists them), because
// viper's AutomaticEnv ignores nested keys it does not already know. What
// cannot be bound: lists of objects (tools.http, tools.sql.databases,
// tools.shell.commands, model.rules.patterns) and maps with free keys
// (approval.policy.tools, model.openai.headers, tools.*.headers). Lists of
// strings take comma-separated values (HITLBOT_STORE_REDIS_ADDRS=a:1,b:2).
// Maps with a fixed vocabulary are bound key by key:
// approval.policy.timeouts.{low,medium,high},
// approval.policy.approvers.{low,medium,high}.{mode,users} and
// approval.outcome_text.<status>.
//
// # Strictness
//
// An unknown key is an error naming its path (mapstructure's ErrorUnused).
// A duration needs a unit ("30s", "5m"): a bare 30 is refused rather than
// read as 30 ns. Viper folds keys to lower case; the parts whose keys are
// case-sensitive (JSON schemas and headers of HTTP tools, shell commands,
// rule arguments, model headers) are decoded again from the file's text.
//
// # Secrets
//
// Secret is a string that prints, logs and marshals as "<secret>". Secrets
// (store.redis.password, channels.*.tokens, model.openai.api_key) come only
// from the environment or from a file named by the key's *_file sibling: a
// secret written in the YAML file is a load error that names the variable
// to use instead. The same goes for a password in store.redis.url and for
// a non-SQLite DSN (tools.sql.databases[].dsn_env or dsn_file instead).
// Dump prints the effective config with every secret redacted.
//
// # Validation
//
// Validate collects every problem, each with its YAML path: the policy and
// the typed-reply keywords (through the approval package's own checks),
// durations, the listen address, the store, the model, the tools (built
// once, without I/O, to catch template and schema errors) and the
// channels. A non-loopback listen address is refused unless server.public
// is set and every enabled HTTP channel has tokens, with a sentence saying
// why and what to set. Check is Load and Validate together.
package config
