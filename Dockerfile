# tollgate image: the tollgate binary, the echo upstream and the demo setup.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# What `tollgate version` prints: docker build --build-arg VERSION=$(git describe --tags --always) .
ARG VERSION=devel
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-X main.version=${VERSION}" -o /out/ ./cmd/tollgate ./cmd/echo ./cmd/demo

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
EXPOSE 8000 8001 8443
ENTRYPOINT ["/usr/local/bin/tollgate"]
CMD ["serve"]
