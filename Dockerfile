# leasehold node image. Build: docker build -t leasehold .
# Run one node (see examples/docker-compose.yml for three):
#   docker run -v $PWD/cluster.yaml:/etc/leasehold/cluster.yaml:ro -v lh-n1:/data -p 7001:7001 \
#     leasehold serve --config /etc/leasehold/cluster.yaml --id n1
# Data lives under the /data volume (LEASEHOLD_DATA_DIR overrides the node's dataDir); the node's entry in
# the config binds `listen` (e.g. 0.0.0.0:7001) and advertises `address` (e.g. n1:7001) to its peers.

# ---- build: dev dependencies and the tools native modules may need (node-gyp: python3, make, g++) ----
FROM node:20-bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY proto ./proto
COPY src ./src
# npm ci runs `prepare` (tsc -p tsconfig.build.json: src/ only, into dist/src); then drop dev dependencies,
# and the test faults (dist/src/test-faults: test-only code, left out as the package's `files` leave it out).
RUN npm ci --no-audit --no-fund \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf dist/src/test-faults

# ---- runtime: the built package and production dependencies only, as an unprivileged user ----
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    LEASEHOLD_DATA_DIR=/data \
    LEASEHOLD_LOG_FORMAT=json \
    LEASEHOLD_HEALTH_ENDPOINT=127.0.0.1:7001
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/proto ./proto
COPY package.json cluster.example.yaml ./
# The dashboard's page (served at / on the metrics address); found from dist/ through package.json.
COPY dashboard ./dashboard
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
# 7001: gRPC (clients, peers, health); 9464: metrics and the dashboard when metrics.address is set.
EXPOSE 7001 9464
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["node", "dist/src/cli/main.js", "health", "--timeout", "3s"]
ENTRYPOINT ["node", "dist/src/cli/main.js"]
CMD ["--help"]
