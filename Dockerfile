# deadbolt's image: the static binary and its configuration file, so building it
# pulls no base image. Build the binary first:
#
#   make docker            # = make static && docker build -t deadbolt .
#
# Run one node (data in the volume at /data, metrics on :9121):
#
#   docker run -p 6379:6379 -p 9121:9121 -v deadbolt:/data deadbolt --requirepass PASSWORD
#
# docker-compose.yml runs a three-node cluster with Prometheus.
FROM scratch
COPY bin/deadbolt-static /deadbolt
COPY deploy/docker/deadbolt.conf /etc/deadbolt/deadbolt.conf
COPY --chown=10001:10001 deploy/docker/data /data
USER 10001:10001
VOLUME ["/data"]
# 6379: clients (RESP); 7000: Raft, between members; 9121: /metrics, /healthz, /readyz.
EXPOSE 6379 7000 9121
# Flags given to docker run come after --config, and win over the file.
ENTRYPOINT ["/deadbolt", "--config", "/etc/deadbolt/deadbolt.conf"]
