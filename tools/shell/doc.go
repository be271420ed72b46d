// Package shell runs allow-listed commands that ops write down in the YAML
// file (tools.shell). It is off by default (Enabled: false builds nothing)
// and every call is destructive, so every call waits for a person (HIGH
// risk) unless the policy was changed on purpose.
//
//	tools:
//	  shell:
//	    enabled: true
//	    commands:
//	      - name: restart_service
//	        description: Restart one of the web services.
//	        argv: ["systemctl", "restart", "{{.service}}"]
//	        parameters:
//	          type: object
//	          properties:
//	            service: {type: string, enum: [nginx, api, worker]}
//	        timeout: 60s
//
// # What a parameter can and cannot do
//
// There is never a shell: the command is started with exec (argv[0] and
// argv[1:]), so ";", "$(...)", "`...`", "*", "|", quotes and spaces in a
// value are just characters of one argument. Each Argv element is one
// argument; a {{.param}} placeholder fills a whole element or part of one and
// is never split, so a value cannot add arguments. The program, argv[0], is
// fixed: an absolute path, or a bare name resolved with exec.LookPath when the
// tool is built (a missing program is a config error, not a surprise at
// 3 a.m.).
//
// Option injection: a value that starts with "-" is refused ("--help",
// "-rf", "--output=/etc/shadow" would otherwise be read as options by most
// programs), wherever its placeholder stands (strict on purpose: with
// "{{.a}}{{.b}}" an empty a would put b first), unless the parameter's
// schema lists that exact value in enum or const, or the parameter is named
// in AllowLeadingDash (for numbers that may be negative; pair it with a
// pattern). Objects, arrays, null and NUL bytes are refused too. A refused
// value fails the preview, so such a call never reaches a person, and Run
// refuses it again (IsError, nothing run).
//
// The environment is not inherited: the command gets exactly the variables
// named in Env (read from the bot's environment at each run), not even PATH,
// so the bot's secrets (API keys, the Redis password) never reach it. Stdin
// is /dev/null.
//
// # Preview
//
// The exact argv, quoted the way a POSIX shell would need it, for reading:
// /usr/bin/systemctl restart 'nginx; rm -rf /'. Values with control or
// invisible characters are shown in $'...' form, so they cannot fake lines.
//
// # Outcomes
//
// Exit 0 gives the output (stdout and stderr interleaved as written, cut at
// MaxOutputBytes with a note). Another exit status gives IsError with the
// status and the output. A program that cannot be started wraps
// approval.ErrNotRun. On timeout the whole process group is killed (the
// command runs in its own group, so its children die with it) and Run
// returns a plain error, not an IsError output: the command may have done
// part of its work, so the effect is unknown and the approval is frozen
// instead of being offered again. Whatever the outcome, what is left of the
// process group once the command has exited is killed: nothing a run starts
// outlives it.
package shell
