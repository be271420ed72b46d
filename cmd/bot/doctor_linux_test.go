package main

import (
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/internal/testredis"
)

// TestDoctorRedisTopologies probes a Sentinel deployment and a Cluster
// through the same client config as the server (store.redis.addrs, with
// and without master_name).
func TestDoctorRedisTopologies(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  func(t *testing.T) map[string]string
		want string
	}{
		{"sentinel", func(t *testing.T) map[string]string {
			s := testredis.StartSentinel(t, 1)
			return map[string]string{"HITLBOT_STORE_REDIS_ADDRS": strings.Join(s.Addrs, ","), "HITLBOT_STORE_REDIS_MASTER_NAME": s.MasterName}
		}, `Redis (Sentinel, master "` + testredis.SentinelMaster + `") answers PING; ` + fixAppendOnly},
		{"cluster", func(t *testing.T) map[string]string {
			return map[string]string{"HITLBOT_STORE_REDIS_ADDRS": strings.Join(testredis.StartCluster(t, 3), ",")}
		}, "Redis (Cluster, 3 seeds) answers PING; "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := tt.env(t)
			env["HITLBOT_STORE_BACKEND"] = "redis"
			st, out, errb := doctorRun(t, env, "")
			if st != 0 {
				t.Fatalf("exit %d\n%s\n%s", st, out, errb)
			}
			if line := doctorLine(t, out, "store"); !strings.Contains(line, tt.want) {
				t.Fatalf("store line %q lacks %q", line, tt.want)
			}
		})
	}
}
