# leasehold node image. Build: docker build -t leasehold .
# Run one node:  docker run -v $PWD/cluster.yaml:/etc/leasehold/cluster.yaml -v lh-data:/data \
#                  -p 7001:7001 leasehold serve --config /etc/leasehold/cluster.yaml --id n1
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY proto ./proto
COPY src ./src
COPY scripts ./scripts
COPY test ./test
RUN npm ci && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/proto ./proto
COPY package.json cluster.example.yaml ./
VOLUME ["/data"]
EXPOSE 7001
ENTRYPOINT ["node", "dist/src/cli/main.js"]
CMD ["--help"]
