package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cmd/bot/internal/config"
	"github.com/hitlbot/hitlbot/tools/mcptool"
)

// mcpGroup is the registry group of one MCP server's tools.
func mcpGroup(server string) string { return "mcp:" + server }

// startMCP starts the MCP servers of tools.mcp (step 3b on core): in
// parallel, each within its start_timeout; a server that fails is retried
// in the background and does not stop the bot (/readyz says when a
// required one is down). Each server's tools are one group of the
// registry, replaced whole when its list changes and emptied while it is
// down, each tool wrapped for metrics. A name a built-in tool has stays
// the built-in's: the registry leaves it out and the server's status
// (/readyz) says so; the server's other tools are offered.
func (c *core) startMCP(ctx context.Context) {
	servers := c.cfg.Tools.MCP.Servers
	if len(servers) == 0 {
		return
	}
	log := c.log.With("component", "mcp")
	c.mcp = mcptool.Start(ctx, servers, mcptool.Options{
		Logger:  log,
		Version: Version(),
		// A server's form elicitation, while one of its tools runs, is
		// asked in that call's turn as a question (approval.Engine.Elicit).
		// The engine is built after the servers start, and before any
		// turn can call a tool.
		Elicit: func(ctx context.Context, server, message string, schema any) (approval.ElicitAnswer, error) {
			if c.engine == nil {
				return approval.ElicitAnswer{Action: approval.ElicitDecline}, errors.New("the approval engine is not built yet")
			}
			return c.engine.Elicit(ctx, server, message, schema)
		},
		OnChange: func(server string, tools []agent.Tool) []string {
			taken, err := c.tools.Offer(mcpGroup(server), c.metrics.Tools(tools)...)
			if err != nil {
				// The manager checked each tool and their names: this
				// is a bug. Offer none rather than some.
				log.Error("the MCP server's tools cannot be offered", "server", server, "err", err)
				_ = c.tools.SetGroup(mcpGroup(server))
				return nil
			}
			log.Info("MCP server tools offered", "server", server, "tools", len(tools)-len(taken))
			return taken
		},
	})
	c.metrics.MCP(c.mcp.Status)
	for _, st := range c.mcp.Status() {
		if !st.Up {
			log.Warn("MCP server is down; retrying in the background", "server", st.Name, "required", st.Required, "err", st.Err)
		}
	}
}

// mcpReady is nil unless a required MCP server is down or a tool of one
// is refused (mcptool.Refusal); warnings say the refused tools of the
// other servers, which do not make the bot unready.
func (c *core) mcpReady() (problem error, warnings []string) {
	if c.mcp == nil {
		return nil, nil
	}
	return c.mcp.Ready(), c.mcp.Warnings()
}

// probeMCP is `bot check -probe`: it starts each MCP server of cfg once,
// lists its tools with the risk the approval policy gives a call of each
// (and why), and stops it. A tool a served bot would refuse because an
// earlier server in tools.mcp.servers or a built-in tool has its name is
// listed as not offered, and why, as the bot would do it. It returns the
// number of servers that could not be probed.
func probeMCP(ctx context.Context, cfg *config.Config, w io.Writer) int {
	servers := cfg.Tools.MCP.Servers
	if len(servers) == 0 {
		fmt.Fprintln(w, "# no MCP servers configured (tools.mcp.servers)")
		return 0
	}
	pol, err := approval.NewPolicy(cfg.Approval.EffectivePolicy())
	if err != nil {
		fmt.Fprintf(w, "approval.policy: %v\n", err)
		return len(servers)
	}
	// holder of each name so far: the built-in tools that can have a
	// name like an MCP tool's, then each server in config order.
	holder := map[string]string{}
	for _, h := range cfg.Tools.HTTP {
		holder[h.Name] = "a built-in tool (tools.http)"
	}
	if cfg.Tools.Shell.Enabled {
		for _, sc := range cfg.Tools.Shell.Commands {
			holder[sc.Name] = "a built-in tool (tools.shell)"
		}
	}
	failed := 0
	for _, s := range servers {
		pctx, cancel := context.WithTimeout(ctx, startTimeout(s)+5*time.Second)
		infos, err := mcptool.Probe(pctx, s, mcptool.Options{Getenv: os.Getenv, Version: Version()})
		cancel()
		trust := "untrusted"
		if s.Trusted {
			trust = "trusted"
		}
		if err != nil {
			failed++
			fmt.Fprintf(w, "\n# MCP server %s (%s, %s): FAILED: %v\n", s.Name, s.Transport(), trust, err)
			continue
		}
		fmt.Fprintf(w, "\n# MCP server %s (%s, %s): %d tools\n", s.Name, s.Transport(), trust, len(infos))
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TOOL\tRISK\tASKS\tWHY")
		for _, ti := range infos {
			if ti.Skipped != "" {
				fmt.Fprintf(tw, "%s\t-\t-\tnot offered: %s\n", ti.Name, ti.Skipped)
				continue
			}
			if h, ok := holder[ti.Name]; ok {
				fmt.Fprintf(tw, "%s\t-\t-\tnot offered: %s has that name\n", ti.Name, h)
				continue
			}
			v, err := pol.Evaluate(approval.CallInfo{Tool: ti.Name, Effect: ti.Effect, EffectSource: ti.Source, Confidence: 1}, nil)
			if err != nil {
				fmt.Fprintf(tw, "%s\t?\t?\t%v\n", ti.Name, err)
				continue
			}
			asks := "no"
			if v.NeedsApproval {
				asks = "yes"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", ti.Name, v.Risk, asks, v.Reason)
		}
		tw.Flush()
		for _, ti := range infos {
			if _, ok := holder[ti.Name]; !ok && ti.Skipped == "" {
				holder[ti.Name] = "MCP server " + s.Name + ", listed before it in tools.mcp.servers,"
			}
		}
	}
	return failed
}

// startTimeout is s's start_timeout, or the default.
func startTimeout(s mcptool.ServerConfig) time.Duration {
	if s.StartTimeout > 0 {
		return s.StartTimeout
	}
	return mcptool.DefaultStartTimeout
}
