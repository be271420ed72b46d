# Multi-stage build: a static binary on a distroless base, run as non-root.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/bot ./cmd/bot

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/bot /bot
# The demo database, the audit file and other local files live here.
VOLUME /data
EXPOSE 8080
USER nonroot:nonroot
ENV HITLBOT_SERVER_DATA_DIR=/data
ENTRYPOINT ["/bot"]
CMD ["serve", "-config", "/etc/hitlbot/config.yaml"]
