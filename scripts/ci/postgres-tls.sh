#!/usr/bin/env bash
# TLS for the local PostgreSQL the tests use: a CA of our own, a server certificate for
# localhost, 127.0.0.1 and ::1 signed by it, and the server pointed at them (ALTER SYSTEM,
# then a reload). Prints the CA's path on stdout (everything else goes to stderr), e.g.
#
#   PG_TEST_SSLROOTCERT=$(scripts/ci/postgres-tls.sh); export PG_TEST_SSLROOTCERT
#
# Also writes other-ca.crt: a CA that signed nothing, for the tests that check a wrong root
# certificate is refused. Idempotent: when the files are valid for another week and the
# server already presents the certificate, it only checks that (a few milliseconds).
#
# Environment: BANDEJA_TLS_DIR (default ~/.cache/bandeja-tls) holds the CA and the keys;
# DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test) names a superuser on the
# local cluster. The server's copies go into its data directory, owned by the user the
# server runs as: run this as root or as that user.
set -euo pipefail

dir="${BANDEJA_TLS_DIR:-$HOME/.cache/bandeja-tls}"
url="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
host=127.0.0.1
port=5432
# Certificates this close to their end are made again.
margin=$((7 * 24 * 3600))

log() { echo "postgres-tls: $*" >&2; }
fail() {
  log "$*"
  exit 1
}

# Whether $1 (a certificate) is valid for longer than the margin.
fresh() { openssl x509 -noout -checkend "$margin" -in "$1" >/dev/null 2>&1; }

# Whether key $2 belongs to certificate $1.
pair() {
  [ "$(openssl x509 -noout -pubkey -in "$1" 2>/dev/null)" = \
    "$(openssl pkey -pubout -in "$2" 2>/dev/null)" ]
}

# Whether the files in $dir are complete and valid: both CAs and the server certificate
# fresh, the server certificate signed by the CA for localhost and 127.0.0.1.
files_valid() {
  local f
  for f in ca.crt ca.key server.crt server.key other-ca.crt; do
    [ -s "$dir/$f" ] || return 1
  done
  fresh "$dir/ca.crt" && fresh "$dir/server.crt" && fresh "$dir/other-ca.crt" &&
    pair "$dir/ca.crt" "$dir/ca.key" && pair "$dir/server.crt" "$dir/server.key" &&
    openssl verify -CAfile "$dir/ca.crt" -verify_hostname localhost \
      "$dir/server.crt" >/dev/null 2>&1 &&
    openssl verify -CAfile "$dir/ca.crt" -verify_ip 127.0.0.1 \
      "$dir/server.crt" >/dev/null 2>&1
}

# A self-signed CA: certificate $1.crt, key $1.key, common name $2.
new_ca() {
  openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$1.key" -out "$1.crt" -days 3650 -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
}

# Makes every file in a fresh directory and moves them into $dir at once.
generate() {
  local work
  work=$(mktemp -d "$dir/new.XXXXXX")
  new_ca "$work/ca" "bandeja test CA"
  new_ca "$work/other-ca" "bandeja test CA that signs nothing"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$work/server.key" -out "$work/server.csr" -subj "/CN=localhost" 2>/dev/null
  printf '%s\n' \
    "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1" \
    "basicConstraints=critical,CA:FALSE" \
    "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth" >"$work/server.ext"
  openssl x509 -req -in "$work/server.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 825 -extfile "$work/server.ext" \
    -out "$work/server.crt" 2>/dev/null
  chmod 600 "$work"/*.key
  for f in ca.crt ca.key other-ca.crt other-ca.key server.crt server.key; do
    mv -f "$work/$f" "$dir/$f"
  done
  rm -rf "$work"
}

# Whether the server presents a certificate that the CA verifies for `localhost`.
serves_ours() {
  openssl s_client -starttls postgres -connect "$host:$port" -CAfile "$dir/ca.crt" \
    -verify_hostname localhost -verify_return_error </dev/null >/dev/null 2>&1
}

psql_admin() { psql "$url" -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }

# Copies the server's certificate and key into its data directory (owned by the user the
# server runs as, key mode 0600), points the server at them and reloads it.
install_on_server() {
  local data owner group cert key
  data=$(psql_admin -c "SHOW data_directory") ||
    fail "cannot ask PostgreSQL at $url for its data directory (is it running?)"
  [ -d "$data" ] || fail "the data directory $data is not on this machine: set up TLS there"
  owner=$(stat -c %U "$data")
  group=$(stat -c %G "$data")
  cert="$data/bandeja-server.crt"
  key="$data/bandeja-server.key"
  if ! cmp -s "$dir/server.crt" "$cert" || ! cmp -s "$dir/server.key" "$key"; then
    install -o "$owner" -g "$group" -m 0644 "$dir/server.crt" "$cert" &&
      install -o "$owner" -g "$group" -m 0600 "$dir/server.key" "$key" ||
      fail "cannot write the server's certificate into $data: run as root or as $owner"
  fi
  psql_admin -c "ALTER SYSTEM SET ssl = on" \
    -c "ALTER SYSTEM SET ssl_cert_file = '$cert'" \
    -c "ALTER SYSTEM SET ssl_key_file = '$key'" \
    -c "SELECT pg_reload_conf()" >/dev/null
  # The reload is asynchronous: wait until new connections get the new certificate.
  for _ in $(seq 1 50); do
    serves_ours && return 0
    sleep 0.1
  done
  fail "PostgreSQL does not present the new certificate after a reload; its log \
(/var/log/postgresql/) says why"
}

command -v openssl >/dev/null || fail "openssl is not installed"
mkdir -p "$dir"
chmod 700 "$dir"
exec 9>"$dir/.lock"
flock 9
if ! files_valid; then
  log "making a CA and a certificate for localhost in $dir"
  generate
fi
if ! serves_ours; then
  log "pointing PostgreSQL at $dir/server.crt (a copy in its data directory)"
  install_on_server
fi
echo "$dir/ca.crt"
