#!/usr/bin/env bash
# tansu, a Kafka-compatible broker from crates.io, for the Kafka suites against a real
# broker (librdkafka's mock cluster does not answer CreateTopics, among others).
#
#   scripts/ci/tansu.sh install   build and install it once, into $TANSU_ROOT
#                                 (default ~/.cache/tansu-install): about 9.5 min on
#                                 2 idle cores (17 CPU-min); nothing when it is there
#   scripts/ci/tansu.sh suites    start it on a free port (everything in memory), run
#                                 bandeja-kafka's conformance, start and foreign-client
#                                 suites against it (BANDEJA_KAFKA_BOOTSTRAP), stop it
#   scripts/ci/tansu.sh chaos     the chaos run over tansu (three workers killed with
#                                 crash points, a tansu of its own; docs/brokers.md says
#                                 why a partition can stall there). CI runs the same
#                                 workload over librdkafka's mock cluster (chaos_over_kafka)
#   scripts/ci/tansu.sh path      print the binary's path
#
# By hand only: `.ci/run` does not build or start tansu (its build would take a third of
# a cold CI run's budget; docs/brokers.md, "What was tested against what").
set -euo pipefail
cd "$(dirname "$0")/../.."

version=0.6.0
root="${TANSU_ROOT:-$HOME/.cache/tansu-install}"
bin="$root/bin/tansu"

install() {
  if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "$version"; then
    echo "tansu: $("$bin" --version) is installed at $bin"
    return 0
  fi
  echo "tansu: building tansu $version (memory storage) into $root"
  # Its own temporary target directory: not the workspace's, whose lock the tests hold.
  env -u CARGO_TARGET_DIR cargo install tansu --version "$version" --locked \
    --no-default-features --features dynostore --root "$root" --force --quiet
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

suites() {
  if [ ! -x "$bin" ]; then
    echo "tansu: $bin is missing: run scripts/ci/tansu.sh install first" >&2
    return 1
  fi
  local port log
  port=$(free_port)
  log=$(mktemp -t tansu.XXXXXX.log)
  "$bin" broker --listener-url "tcp://127.0.0.1:$port" \
    --advertised-listener-url "tcp://127.0.0.1:$port" \
    --storage-engine memory://tansu/ >"$log" 2>&1 &
  tansu_pid=$!
  # A global: the trap runs after this function has returned.
  trap 'kill "${tansu_pid:-}" 2>/dev/null || true' EXIT
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    if ! kill -0 "$tansu_pid" 2>/dev/null; then
      echo "tansu: the broker exited at start:" >&2
      cat "$log" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "tansu: $("$bin" --version) on 127.0.0.1:$port"
  BANDEJA_KAFKA_BOOTSTRAP="127.0.0.1:$port" cargo test -p bandeja-kafka \
    --test conformance --test start --test foreign_clients
}

chaos() {
  TANSU="$bin" cargo test -p bandeja-scale-tests --features tansu --test chaos_over_tansu \
    -- --nocapture
}

case "${1:-}" in
  install) install ;;
  suites) suites ;;
  chaos) chaos ;;
  path) echo "$bin" ;;
  *)
    echo "usage: $0 install|suites|chaos|path" >&2
    exit 2
    ;;
esac
