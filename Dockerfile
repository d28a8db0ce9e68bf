# syntax=docker/dockerfile:1
#
# The a2amesh binary on a distroless, non-root base. Every role is the same
# image: the container's command picks it (dev, nats, edge, worker).
#
#   docker build -t a2amesh .
#   docker run --rm -p 127.0.0.1:8080:8080 a2amesh          # a whole mesh in one process
#
# GO_VERSION is go.mod's go version (cmd/a2amesh/deploy_test.go checks it):
# the golang image builds with exactly that toolchain (GOTOOLCHAIN=local).
ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w" -o /out/a2amesh ./cmd/a2amesh \
 && mkdir /out/data

# static-debian12 has CA certificates (proxy workers, push webhooks over
# HTTPS) and tzdata; :nonroot runs as uid/gid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/a2amesh /a2amesh
# /data belongs to the runtime user, so a named volume mounted there (a NATS
# node's JetStream files, or dev's) starts out writable.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
EXPOSE 8080 4222 6222
ENTRYPOINT ["/a2amesh"]
# The default: `a2amesh dev` (embedded NATS, one edge, the built-in agents),
# reachable from outside the container. Other roles: pass them as the command,
# e.g. `docker run … a2amesh edge --nats nats://nats:4222 --listen 0.0.0.0:8080`.
CMD ["dev", "--listen", "0.0.0.0:8080", "--data", "/data"]
