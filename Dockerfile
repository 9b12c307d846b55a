# The schedlens image: the three static binaries (/usr/local/bin/collector, correlator, api),
# a passwd entry for the non-root user 65532 and a CA bundle. One image for the three processes:
# they ship and are versioned together, so one build, one digest to pin and one pull per node;
# the chart and docker-compose.yaml pick the binary with `command`.
#
# Built by `make images` (scripts/images.sh), which first compiles the binaries on the host
# (CGO_ENABLED=0, -trimpath: no libc, nothing to install in the image) into build/image/, the
# only part of the tree the build context holds (.dockerignore), then runs
#
#   docker build --build-arg BASE_IMAGE=... -t schedlens:dev .
#
# BASE_IMAGE is the runtime base: distroless static (no shell, no package manager), pinned by
# digest, by default; `scratch` builds with no registry at all — the passwd/group entries and the
# CA bundle copied below are all a static Go binary needs from its base.
ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab
FROM ${BASE_IMAGE}
COPY build/image/ /
USER 65532:65532
CMD ["/usr/local/bin/api"]
