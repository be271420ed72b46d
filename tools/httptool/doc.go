// Package httptool turns HTTP endpoints that ops describe in the YAML file
// (tools.http[]) into agent tools: refund an order, restart a job, look up a
// customer. The model fills in parameters; ops decide everything else.
//
//	tools:
//	  http:
//	    - name: refund_order
//	      description: Refund an order in full.
//	      method: POST
//	      url: https://api.example.com/orders/{{.id}}/refund
//	      headers: {Authorization: "Bearer ${SHOP_API_TOKEN}"}
//	      body: '{"reason": {{.reason}}}'
//	      parameters:
//	        type: object
//	        properties:
//	          id: {type: integer, minimum: 1}
//	          reason: {type: string, maxLength: 200}
//	        required: [id, reason]
//
// # What a parameter can and cannot do
//
// Templates know one construct, {{.name}}; there are no functions or
// pipelines (this is not text/template). Where a value lands decides how it
// is encoded:
//
//   - Path: path-escaped, so "../admin" arrives as the one segment
//     "..%2Fadmin" and never climbs up; a segment a value fills may not end
//     up empty, "." or "..". Path parameters are made required.
//   - Query (in the URL or the Query map): query-escaped, so "&admin=1"
//     stays inside its own value.
//   - Body: JSON-encoded, so a string cannot close its quotes and add keys.
//   - Scheme and host: never. The URL must start with a literal
//     http(s)://host[:port] that holds no placeholder and no user info; this
//     is checked when the tool is built, and every rendered URL is parsed
//     back and compared. That is why there is no allowed-hosts list: the
//     host is not a parameter. Redirects are not followed either (a 3xx is
//     reported as it is), so a server cannot bounce the request and its
//     headers to another host.
//
// # Secrets
//
// Header values may hold ${ENV_NAME}, read from the environment when the
// tool is built (missing or empty: a config error that names the variable,
// never a value). Previews show header names only; the environment values
// are scrubbed from outputs and errors (a server that echoes the token back
// does not put it in the chat); body keys and query parameters that look
// secret (token, password, api_key, ...) have their values hidden in
// previews.
//
// # Outcomes
//
// Run follows the agent.Tool contract. A 2xx answer is "HTTP 200\n<body>";
// another status is the same text with IsError. The body is cut at
// MaxResponseBytes and says so. A request that could not be rendered is
// IsError and was not sent. A transport failure before any connection was
// made (DNS, connection refused, a timeout while dialling) wraps
// approval.ErrNotRun: nothing can have reached the server. Any later
// failure (a timeout waiting for the answer, a reset connection) returns a
// plain error: the server may have acted, so the approval is frozen and
// never re-run by itself.
package httptool
