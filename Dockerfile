# Multi-stage build: a static binary on a distroless base, run as non-root.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/bot ./cmd/bot \
 && mkdir -p /out/data

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
