# syntax=docker/dockerfile:1
# cellserver as a small image: a static binary on distroless, run as non-root.
#   docker build -t cellserver --build-arg VERSION=1.0.0 .
#   docker run -p 6379:6379 -e CELLSERVER_REQUIREPASS=secret cellserver

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/cellserver ./cmd/cellserver

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/cellserver /cellserver
USER 65532:65532
# Inside the container cellserver listens on every interface; protected mode
# still refuses non-loopback clients until a password is set
# (CELLSERVER_REQUIREPASS) or protected mode is turned off.
ENV CELLSERVER_ADDR=0.0.0.0:6379
EXPOSE 6379
# No shell in the image: the binary checks itself (PING over loopback).
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["/cellserver", "ping"]
ENTRYPOINT ["/cellserver"]
