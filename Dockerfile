# hookline service image. Node 24 runs the TypeScript sources natively (type stripping), so there
# is no build step and the image carries runtime dependencies only.

FROM node:24-bookworm-slim AS deps
WORKDIR /app
# isolated-vm ships prebuilt addons for linux x64/arm64; the tool chain is only for a platform
# without one, and stays in this stage.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
  && node -e "require('isolated-vm')"

FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    HOOKLINE_HOST=0.0.0.0 \
    HOOKLINE_PORT=8080 \
    HOOKLINE_DATA_DIR=/data
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json ./
COPY bin ./bin
COPY src ./src
COPY projections ./projections
COPY migrations ./migrations
COPY templates ./templates
COPY rules-sandbox ./rules-sandbox
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:' + (process.env.HOOKLINE_PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
# SIGTERM reaches node directly (exec form): hookline drains in-flight requests, then exits.
ENTRYPOINT ["node", "--max-semi-space-size=8", "bin/hookline.mjs"]
CMD ["serve"]
