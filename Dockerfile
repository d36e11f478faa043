# syntax=docker/dockerfile:1
# otelcol-runagain container image: static binaries, non-root, the embedded default config baked in.
#
#   docker build -t runagain/otelcol-runagain:0.1.0 .
#   docker run --rm -p 4317:4317 -p 4318:4318 -v runagain-data:/var/lib/runagain runagain/otelcol-runagain:0.1.0
#
# Gateway (Kubernetes): the same image with --config=/etc/runagain/gateway.yaml (deploy/kubernetes/).
# Note: this image has not been built on the project's development machines (no container
# runtime there); the build steps are the ones `make build` runs.

ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
# Module downloads first, so source edits reuse the cached layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
# ocb (pinned as a go tool) generates the distribution into _build and compiles it; then the CLI.
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go tool builder --config builder-config.yaml \
 && go build -ldflags="-s -w" -o /out/runagain ./cmd/runagain \
 && cp _build/otelcol-runagain /out/otelcol-runagain \
 && /out/otelcol-runagain validate --config config/default.yaml \
 && mkdir -p /out/data

# distroless static: no shell, no package manager, CA certificates for S3/ClickHouse TLS.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/otelcol-runagain /out/runagain /usr/local/bin/
COPY config/default.yaml /etc/runagain/config.yaml
COPY config/gateway.yaml /etc/runagain/gateway.yaml
COPY --from=build --chown=65532:65532 /out/data /var/lib/runagain
# Inside a container the receivers must listen on all interfaces (default.yaml defaults to loopback).
ENV RUNAGAIN_DATA_DIR=/var/lib/runagain \
    RUNAGAIN_OTLP_GRPC_ENDPOINT=0.0.0.0:4317 \
    RUNAGAIN_OTLP_HTTP_ENDPOINT=0.0.0.0:4318 \
    RUNAGAIN_HEALTH_ENDPOINT=0.0.0.0:13133 \
    RUNAGAIN_PROMETHEUS_ENDPOINT=0.0.0.0:8889
USER 65532:65532
VOLUME ["/var/lib/runagain"]
EXPOSE 4317 4318 8888 8889 13133
ENTRYPOINT ["/usr/local/bin/otelcol-runagain"]
CMD ["--config=/etc/runagain/config.yaml"]
