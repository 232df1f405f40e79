# Builds wanledger's two images from Debian 12 packages only:
#   docker build --target server -t wanledger/server .   # `wanledger` (reconcile, poll, report…)
#   docker build --target agent  -t wanledger/agent .    # `wanledger-agent` (eBPF, runs privileged)
# The BPF skeletons are compiled against the build host's /sys/kernel/btf/vmlinux (CO-RE: they
# relocate on any kernel with BTF at load time).

FROM debian:12 AS build
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev \
      libzstd-dev libsnmp-dev libpq-dev libevent-dev libcjson-dev libcmocka-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release \
 && cmake --build /build -j"$(nproc)" --target wanledger wanledger-agent \
 && strip /build/cmd/wanledger /build/agentlib/wanledger-agent

FROM debian:12-slim AS server
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libpq5 libevent-2.1-7 libcjson1 libsnmp40 ca-certificates wget \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --home-dir /var/lib/wanledger --shell /usr/sbin/nologin wanledger \
 && mkdir -p /var/lib/wanledger/spool /etc/wanledger \
 && chown -R wanledger:wanledger /var/lib/wanledger
COPY --from=build /build/cmd/wanledger /usr/local/bin/wanledger
USER wanledger
EXPOSE 7070
CMD ["wanledger", "--config", "/etc/wanledger/wanledger.json", "reconcile"]

FROM debian:12-slim AS agent
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libbpf1 libelf1 zlib1g libzstd1 libevent-2.1-7 libcjson1 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /var/lib/wanledger/spool
COPY --from=build /build/agentlib/wanledger-agent /usr/local/bin/wanledger-agent
ENTRYPOINT ["wanledger-agent"]
