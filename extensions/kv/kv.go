// Package kv is the key-value extension: the tools kv_set, kv_get, kv_list
// and kv_delete give the assistant a small durable scratch store for
// structured facts that do not belong in long-term memory (counters, last
// seen ids, settings of a recurring task). Keys live in namespaces; values
// are UTF-8 strings or JSON documents up to a size limit. The entries are a
// table of the shared SQLite database (reverie.db), created by this
// extension's own migrations (component "kv").
//
// Configuration (the kv: section; every key optional):
//
//	kv:
//	  max_value_bytes: 65536   # largest value, in bytes
//	  max_keys: 10000          # most entries over all namespaces
//
// Bad input is refused with a clear error and changes nothing: an empty or
// over-long key, a namespace outside [a-z0-9_.-], a value that is too big,
// not UTF-8 or (with json: true) not JSON, a full store.
//
// Concurrency: every tool call is one SQLite statement, so concurrent calls
// are safe and each set is atomic, the max_keys check included.
package kv

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/tool"
)

func init() {
	extension.Register(extension.Info{
		ID:          "kv",
		New:         func() extension.Extension { return new(KV) },
		Description: "namespaced key-value store for the assistant (kv_set, kv_get, kv_list, kv_delete)",
	})
}

// Defaults and bounds.
const (
	DefaultMaxValueBytes = 64 << 10
	DefaultMaxKeys       = 10000
	// DefaultNamespace is used when a call names none.
	DefaultNamespace = "default"
	// MaxKeyBytes bounds a key.
	MaxKeyBytes = 256
	// DefaultListLimit and MaxListLimit bound kv_list.
	DefaultListLimit = 50
	MaxListLimit     = 500
	// queryTimeout bounds every statement.
	queryTimeout = 10 * time.Second
)

// validNamespace is what a namespace may look like.
var validNamespace = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`) })

// Config is the kv: section of config.yaml.
type Config struct {
	// MaxValueBytes is the largest value accepted, in bytes.
	MaxValueBytes int `yaml:"max_value_bytes"`
	// MaxKeys is the most entries the store holds, over all namespaces.
	MaxKeys int `yaml:"max_keys"`
}

// KV is the extension.
type KV struct {
	cfg Config
	db  *sql.DB
	now func() time.Time
}

// Init decodes the configuration and migrates the table.
func (k *KV) Init(ctx context.Context, host extension.Host) error {
	cfg, err := loadConfig(host.DecodeConfig)
	if err != nil {
		return err
	}
	k.cfg = cfg
	k.db, k.now = host.DB(), host.Now
	mctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	return host.Migrate(mctx, component, migrationFiles, "migrations")
}

// CheckConfig decodes and validates the kv section as Init does.
func (k *KV) CheckConfig(decode func(any) error) error {
	_, err := loadConfig(decode)
	return err
}

// loadConfig decodes the kv section over the defaults and validates it;
// a bad value wraps extension.ErrInvalidConfig.
func loadConfig(decode func(any) error) (Config, error) {
	cfg := Config{MaxValueBytes: DefaultMaxValueBytes, MaxKeys: DefaultMaxKeys}
	if err := decode(&cfg); err != nil {
		return cfg, err
	}
	if cfg.MaxValueBytes <= 0 {
		return cfg, fmt.Errorf("kv.max_value_bytes must be positive, not %d: %w", cfg.MaxValueBytes, extension.ErrInvalidConfig)
	}
	if cfg.MaxKeys <= 0 {
		return cfg, fmt.Errorf("kv.max_keys must be positive, not %d: %w", cfg.MaxKeys, extension.ErrInvalidConfig)
	}
	return cfg, nil
}

// Health checks that the table answers.
func (k *KV) Health(ctx context.Context) error {
	if k.db == nil {
		return errors.New("kv: not initialised")
	}
	var n int
	if err := k.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM kv_entries WHERE 0`).Scan(&n); err != nil {
		return fmt.Errorf("kv: %w", err)
	}
	return nil
}

// Tools returns kv_set, kv_get, kv_list and kv_delete.
func (k *KV) Tools() []tool.Tool {
	return []tool.Tool{
		tool.New("kv_set",
			"Store a value under a key in a namespace of your key-value store (replacing what was there). "+
				"For small structured state: counters, last seen ids, settings of a recurring task. Facts about the user belong in memory instead. Never store secrets.",
			k.set, tool.WithCategories("memory")),
		tool.New("kv_get", "Read the value of a key from your key-value store.",
			k.get, tool.ReadOnly(), tool.ReadsPrivateData(), tool.WithCategories("memory")),
		tool.New("kv_list",
			"List the keys of a namespace of your key-value store (optionally only those starting with a prefix), "+
				"or, without a namespace, the namespaces and how many keys each has.",
			k.list, tool.ReadOnly(), tool.ReadsPrivateData(), tool.WithCategories("memory")),
		tool.New("kv_delete", "Delete a key from your key-value store.",
			k.delete, tool.WithCategories("memory")),
	}
}

type setArgs struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"namespace: lower-case letters, digits, _ . - (default \"default\")"`
	Key       string `json:"key" jsonschema:"the key (one line, at most 256 bytes)"`
	Value     string `json:"value" jsonschema:"the value; with json true, a JSON document as text"`
	JSON      bool   `json:"json,omitempty" jsonschema:"the value is JSON: it is checked, stored compactly and returned as JSON by kv_get"`
}

type setResult struct {
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
	Created   bool   `json:"created"`
	Bytes     int    `json:"bytes"`
}

func (k *KV) set(ctx context.Context, a setArgs) (any, error) {
	ns, err := namespacedKey(a.Namespace, a.Key)
	if err != nil {
		return nil, err
	}
	value := a.Value
	if !utf8.ValidString(value) {
		return nil, errors.New("value is not valid UTF-8 text")
	}
	if a.JSON {
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(value)); err != nil {
			return nil, fmt.Errorf("value is not valid JSON (set json to false to store it as text): %w", err)
		}
		value = buf.String()
	}
	if len(value) > k.cfg.MaxValueBytes {
		return nil, fmt.Errorf("value is %d bytes; at most %d", len(value), k.cfg.MaxValueBytes)
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	now := k.now().UTC().Format(time.RFC3339Nano)
	var revision int64
	err = k.db.QueryRowContext(ctx, `
		INSERT INTO kv_entries (namespace, key, value, is_json, revision, created_at, updated_at)
		SELECT ?1, ?2, ?3, ?4, 1, ?5, ?5
		WHERE (SELECT COUNT(*) FROM kv_entries) < ?6
		   OR EXISTS (SELECT 1 FROM kv_entries WHERE namespace = ?1 AND key = ?2)
		ON CONFLICT (namespace, key) DO UPDATE SET
			value = excluded.value, is_json = excluded.is_json,
			revision = kv_entries.revision + 1, updated_at = excluded.updated_at
		RETURNING revision`,
		ns, a.Key, value, a.JSON, now, k.cfg.MaxKeys).Scan(&revision)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("the store is full (%d keys); delete keys you no longer need first", k.cfg.MaxKeys)
	}
	if err != nil {
		return nil, fmt.Errorf("store %s/%s: %w", ns, a.Key, err)
	}
	return setResult{Namespace: ns, Key: a.Key, Created: revision == 1, Bytes: len(value)}, nil
}

// namespacedKey checks a namespace (empty: the default) and a key, and
// returns the namespace to use.
func namespacedKey(namespaceArg, key string) (string, error) {
	ns, err := namespace(namespaceArg)
	if err != nil {
		return "", err
	}
	return ns, checkKey(key)
}

type keyArgs struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"namespace (default \"default\")"`
	Key       string `json:"key" jsonschema:"the key"`
}

type getResult struct {
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
	// Value is a JSON string, or the stored document when JSON is true.
	Value     json.RawMessage `json:"value"`
	JSON      bool            `json:"json"`
	UpdatedAt string          `json:"updated_at"`
}

func (k *KV) get(ctx context.Context, a keyArgs) (any, error) {
	ns, err := namespacedKey(a.Namespace, a.Key)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	var (
		value, updated string
		isJSON         bool
	)
	err = k.db.QueryRowContext(ctx,
		`SELECT value, is_json, updated_at FROM kv_entries WHERE namespace = ? AND key = ?`, ns, a.Key).
		Scan(&value, &isJSON, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("no key %q in namespace %q (kv_list shows the keys)", a.Key, ns)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s/%s: %w", ns, a.Key, err)
	}
	raw := json.RawMessage(value)
	if !isJSON {
		if raw, err = json.Marshal(value); err != nil {
			return nil, err
		}
	}
	return getResult{Namespace: ns, Key: a.Key, Value: raw, JSON: isJSON, UpdatedAt: updated}, nil
}

type listArgs struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"the namespace to list; omit it to list the namespaces"`
	Prefix    string `json:"prefix,omitempty" jsonschema:"only keys starting with this"`
	Limit     int    `json:"limit,omitempty" jsonschema:"at most this many keys (default 50, at most 500)"`
}

type listEntry struct {
	Key       string `json:"key"`
	Bytes     int    `json:"bytes"`
	JSON      bool   `json:"json"`
	UpdatedAt string `json:"updated_at"`
}

type namespaceEntry struct {
	Namespace string `json:"namespace"`
	Keys      int    `json:"keys"`
}

// keysResult is kv_list's answer for a namespace.
type keysResult struct {
	Namespace string      `json:"namespace"`
	Keys      []listEntry `json:"keys"`
	// More says the limit cut the list.
	More bool `json:"more"`
}

// namespacesResult is kv_list's answer without a namespace.
type namespacesResult struct {
	Namespaces []namespaceEntry `json:"namespaces"`
	More       bool             `json:"more"`
}

func (k *KV) list(ctx context.Context, a listArgs) (any, error) {
	limit := a.Limit
	switch {
	case limit == 0:
		limit = DefaultListLimit
	case limit < 0 || limit > MaxListLimit:
		return nil, fmt.Errorf("limit must be between 1 and %d", MaxListLimit)
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	if a.Namespace == "" {
		if a.Prefix != "" {
			return nil, errors.New("a prefix needs a namespace")
		}
		return k.namespaces(ctx, limit)
	}
	ns, err := namespace(a.Namespace)
	if err != nil {
		return nil, err
	}
	keys, err := extension.Rows(ctx, k.db, func(row extension.Scanner) (listEntry, error) {
		var e listEntry
		err := row.Scan(&e.Key, &e.Bytes, &e.JSON, &e.UpdatedAt)
		return e, err
	}, `
		SELECT key, length(CAST(value AS BLOB)), is_json, updated_at FROM kv_entries
		WHERE namespace = ?1 AND substr(key, 1, length(?2)) = ?2
		ORDER BY key LIMIT ?3`, ns, a.Prefix, limit+1)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", ns, err)
	}
	out := keysResult{Namespace: ns, Keys: append([]listEntry{}, keys...)}
	if len(out.Keys) > limit {
		out.Keys, out.More = out.Keys[:limit], true
	}
	return out, nil
}

func (k *KV) namespaces(ctx context.Context, limit int) (any, error) {
	nss, err := extension.Rows(ctx, k.db, func(row extension.Scanner) (namespaceEntry, error) {
		var e namespaceEntry
		err := row.Scan(&e.Namespace, &e.Keys)
		return e, err
	}, `SELECT namespace, COUNT(*) FROM kv_entries GROUP BY namespace ORDER BY namespace LIMIT ?`, limit+1)
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	out := namespacesResult{Namespaces: append([]namespaceEntry{}, nss...)}
	if len(out.Namespaces) > limit {
		out.Namespaces, out.More = out.Namespaces[:limit], true
	}
	return out, nil
}

type deleteResult struct {
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
	// Deleted is false when there was no such key.
	Deleted bool `json:"deleted"`
}

func (k *KV) delete(ctx context.Context, a keyArgs) (any, error) {
	ns, err := namespacedKey(a.Namespace, a.Key)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	res, err := k.db.ExecContext(ctx, `DELETE FROM kv_entries WHERE namespace = ? AND key = ?`, ns, a.Key)
	if err != nil {
		return nil, fmt.Errorf("delete %s/%s: %w", ns, a.Key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, fmt.Errorf("delete %s/%s: %w", ns, a.Key, err)
	}
	return deleteResult{Namespace: ns, Key: a.Key, Deleted: n > 0}, nil
}

// namespace returns ns or the default, or says what is wrong with it.
func namespace(ns string) (string, error) {
	if ns == "" {
		return DefaultNamespace, nil
	}
	if !validNamespace().MatchString(ns) {
		return "", fmt.Errorf("namespace %q is not allowed: use 1-64 lower-case letters, digits, _ . or -, starting with a letter or digit", ns)
	}
	return ns, nil
}

// checkKey says what is wrong with a key.
func checkKey(key string) error {
	switch {
	case strings.TrimSpace(key) == "":
		return errors.New("key is empty")
	case len(key) > MaxKeyBytes:
		return fmt.Errorf("key is %d bytes; at most %d", len(key), MaxKeyBytes)
	case !utf8.ValidString(key):
		return errors.New("key is not valid UTF-8 text")
	case strings.IndexFunc(key, unicode.IsControl) >= 0:
		return errors.New("key contains a control character or line break")
	}
	return nil
}

var (
	_ extension.Extension     = (*KV)(nil)
	_ extension.ToolProvider  = (*KV)(nil)
	_ extension.HealthChecker = (*KV)(nil)
	_ extension.ConfigChecker = (*KV)(nil)
)
