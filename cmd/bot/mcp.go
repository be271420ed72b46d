package main

import (
	"context"
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
// down, each tool wrapped for metrics.
func (c *core) startMCP(ctx context.Context) {
	servers := c.cfg.Tools.MCP.Servers
	if len(servers) == 0 {
		return
	}
	log := c.log.With("component", "mcp")
	c.mcp = mcptool.Start(ctx, servers, mcptool.Options{
		Logger:  log,
		Version: Version(),
		OnChange: func(server string, tools []agent.Tool) {
			if err := c.tools.SetGroup(mcpGroup(server), c.metrics.Tools(tools)...); err != nil {
				// A name taken by a built-in tool or another server:
				// none of this server's tools is offered.
				log.Error("the MCP server's tools cannot be offered", "server", server, "err", err)
				_ = c.tools.SetGroup(mcpGroup(server))
				return
			}
			log.Info("MCP server tools offered", "server", server, "tools", len(tools))
		},
	})
	c.metrics.MCP(c.mcp.Status)
	for _, st := range c.mcp.Status() {
		if !st.Up {
			log.Warn("MCP server is down; retrying in the background", "server", st.Name, "required", st.Required, "err", st.Err)
		}
	}
}

// mcpReady is nil unless a required MCP server is down.
func (c *core) mcpReady() error {
	if c.mcp == nil {
		return nil
	}
	return c.mcp.Ready()
}

// probeMCP is `bot check -probe`: it starts each MCP server of cfg once,
// lists its tools with the risk the approval policy gives a call of each
// (and why), and stops it. It returns the number of servers that could
// not be probed.
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
