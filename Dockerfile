# Multi-stage build: a static binary on a distroless base, run as non-root
# (the default target). `--target with-node` builds the same binary on a
# Node.js base instead, for stdio MCP servers started with npx
# (tools.mcp.servers[].command: npx); docker-compose.yml says how to choose it.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/bot ./cmd/bot \
 && mkdir -p /out/data

# The variant with Node.js (npx) for stdio MCP servers. The servers' packages
# are fetched by npx at first start into the data volume's npm cache (the
# registry must be reachable from the container), or baked in by a Dockerfile
# of your own FROM this one (RUN npm install -g @modelcontextprotocol/server-filesystem).
FROM node:20-bookworm-slim AS with-node
COPY --from=build /out/bot /bot
RUN groupadd -g 65532 nonroot && useradd -u 65532 -g 65532 -d /data -s /usr/sbin/nologin nonroot
COPY --from=build --chown=65532:65532 /out/data /data
VOLUME /data
EXPOSE 8080
USER 65532:65532
ENV HITLBOT_SERVER_DATA_DIR=/data NPM_CONFIG_CACHE=/data/.npm
ENTRYPOINT ["/bot"]
CMD ["serve", "-config", "/etc/hitlbot/config.yaml"]

# The default image: distroless, no shell, no Node.js.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/bot /bot
# The demo database, the audit file and other local files live here. The
# directory belongs to the non-root user (65532, distroless's nonroot)
# before it is declared a volume: a new named volume copies that
# ownership, so the bot can write there.
COPY --from=build --chown=65532:65532 /out/data /data
VOLUME /data
EXPOSE 8080
USER nonroot:nonroot
ENV HITLBOT_SERVER_DATA_DIR=/data
ENTRYPOINT ["/bot"]
CMD ["serve", "-config", "/etc/hitlbot/config.yaml"]
