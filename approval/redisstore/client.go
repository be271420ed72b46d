package redisstore

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClientConfig says how to reach Redis: URL for one server, or Addrs for a
// Redis Cluster, or Addrs with MasterName for Sentinel. Zero values leave
// go-redis's defaults. It is the YAML section redis: of the bot's config.
type ClientConfig struct {
	// URL is a single server: redis://[[user]:password@]host[:port][/db], or
	// rediss://… for TLS. go-redis query parameters (dial_timeout=3s, …) are
	// accepted. Mutually exclusive with Addrs.
	URL string
	// Addrs are host:port seed addresses of a Redis Cluster, or the
	// addresses of the Sentinels when MasterName is set.
	Addrs []string
	// MasterName is the name of the master the Sentinels watch; setting it
	// makes Addrs Sentinel addresses.
	MasterName string
	// Username is the ACL user (Redis 6+). When set it replaces the URL's.
	Username string
	// Password authenticates to Redis (for Sentinel: to the data nodes).
	// When set it replaces the URL's. A secret: it never appears in an
	// error or a log line.
	Password string
	// DB selects the logical database of a single server or a Sentinel
	// master; when not 0 it replaces the URL's. A Cluster has only DB 0.
	DB int
	// TLS enables TLS for Addrs (Cluster or Sentinel). For URL, use rediss://.
	TLS bool
	// DialTimeout bounds establishing a connection (go-redis default 5s).
	DialTimeout time.Duration
	// ReadTimeout bounds waiting for a reply (go-redis default 3s). A claim
	// that times out returns an error: nothing is run.
	ReadTimeout time.Duration
	// WriteTimeout bounds sending a command (go-redis default: ReadTimeout).
	WriteTimeout time.Duration
	// PoolSize is the number of connections per server (go-redis default:
	// 10 per CPU).
	PoolSize int
}

// ParseURL parses a redis:// or rediss:// URL into go-redis options. Unlike
// redis.ParseURL, its errors never contain the URL or its password.
func ParseURL(rawURL string) (*redis.Options, error) {
	o, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, urlError(rawURL, err)
	}
	return o, nil
}

// urlError rewrites a URL parse error so that it carries neither the URL
// nor the credentials in it.
func urlError(rawURL string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		// net/url quotes the whole URL, and its reasons quote pieces of
		// it (an invalid escape may sit in the password): say no more.
		return errors.New("redisstore: malformed Redis URL (want redis://[[user]:password@]host[:port][/db] or rediss://…)")
	}
	secrets := []string{rawURL}
	if u, perr := url.Parse(rawURL); perr == nil && u.User != nil {
		secrets = append(secrets, u.User.String())
		if p, ok := u.User.Password(); ok {
			secrets = append(secrets, p)
		}
	}
	return fmt.Errorf("redisstore: invalid Redis URL (want redis://[[user]:password@]host[:port][/db] or rediss://…): %s", redact(err.Error(), secrets...))
}

// redact replaces every non-empty secret in s.
func redact(s string, secrets ...string) string {
	for _, x := range secrets {
		if x != "" {
			s = strings.ReplaceAll(s, x, "[redacted]")
		}
	}
	return s
}

// NewClient returns the go-redis client that cfg describes: a *redis.Client
// for URL, a *redis.ClusterClient for Addrs, a failover client for Addrs
// with MasterName. It does not connect; the first command does. Errors
// never contain the password or the URL.
func NewClient(cfg ClientConfig) (redis.UniversalClient, error) {
	switch {
	case cfg.URL != "" && len(cfg.Addrs) > 0:
		return nil, errors.New("redisstore: set either url or addrs, not both")
	case cfg.URL != "":
		if cfg.MasterName != "" {
			return nil, errors.New("redisstore: master_name needs addrs (the Sentinel addresses), not url")
		}
		o, err := ParseURL(cfg.URL)
		if err != nil {
			return nil, err
		}
		if cfg.Username != "" {
			o.Username = cfg.Username
		}
		if cfg.Password != "" {
			o.Password = cfg.Password
		}
		if cfg.DB != 0 {
			o.DB = cfg.DB
		}
		if cfg.DialTimeout > 0 {
			o.DialTimeout = cfg.DialTimeout
		}
		if cfg.ReadTimeout > 0 {
			o.ReadTimeout = cfg.ReadTimeout
		}
		if cfg.WriteTimeout > 0 {
			o.WriteTimeout = cfg.WriteTimeout
		}
		if cfg.PoolSize > 0 {
			o.PoolSize = cfg.PoolSize
		}
		return redis.NewClient(o), nil
	case len(cfg.Addrs) > 0:
		for _, a := range cfg.Addrs {
			if strings.TrimSpace(a) == "" || strings.Contains(a, "://") {
				return nil, errors.New("redisstore: addrs must be host:port entries")
			}
		}
		var tc *tls.Config
		if cfg.TLS {
			tc = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		if cfg.MasterName != "" {
			return redis.NewFailoverClient(&redis.FailoverOptions{
				MasterName:    cfg.MasterName,
				SentinelAddrs: cfg.Addrs,
				Username:      cfg.Username,
				Password:      cfg.Password,
				DB:            cfg.DB,
				TLSConfig:     tc,
				DialTimeout:   cfg.DialTimeout,
				ReadTimeout:   cfg.ReadTimeout,
				WriteTimeout:  cfg.WriteTimeout,
				PoolSize:      cfg.PoolSize,
			}), nil
		}
		if cfg.DB != 0 {
			return nil, errors.New("redisstore: a Redis Cluster has only db 0")
		}
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:        cfg.Addrs,
			Username:     cfg.Username,
			Password:     cfg.Password,
			TLSConfig:    tc,
			DialTimeout:  cfg.DialTimeout,
			ReadTimeout:  cfg.ReadTimeout,
			WriteTimeout: cfg.WriteTimeout,
			PoolSize:     cfg.PoolSize,
		}), nil
	}
	return nil, errors.New("redisstore: no Redis configured (set url, or addrs)")
}
