# scripts/wg-e2e --firezone-source URL: a client of a Firezone installation keeps working after
# `ferrozone import firezone`. Sourced by scripts/wg-e2e after its namespaces, helpers and
# start_server are set up; runs instead of the rest of it.
#
# The test fixture builds a Firezone 0.7.36 Docker installation on the PostgreSQL server of
# URL (examples/firezone_fixture in crates/ferrozone-import; FERROZONE_FIXTURE_BIN names a
# built one). The command imports it into the server's fresh database, `serve` starts with
# the tunnel networks the import report asks for, and a wireguard-go client is configured
# only from what Firezone had given it: its private key, the preshared key, its address,
# and the server public key of Firezone's key file. It must ping the gateway address.

firezone_client_keeps_working() {
  local source_server=$1 fixture_bin=${FERROZONE_FIXTURE_BIN:-}
  if [[ -z $fixture_bin ]]; then
    cargo build -q -p ferrozone-import --features testing --example firezone_fixture
    fixture_bin=${CARGO_TARGET_DIR:-$root/target}/debug/examples/firezone_fixture
  fi
  log "building a Firezone 0.7.36 installation on $(python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(f"{p.hostname}:{p.port}")' "$source_server")"
  "$fixture_bin" "$source_server" >"$tmp/firezone.json"
  fz() { json "$1" <"$tmp/firezone.json"; }
  firezone_db=$(fz "d['database_name']")
  fz "d['env_file']" >"$tmp/firezone.env"
  fz "d['private_key_file']" >"$tmp/firezone_private_key"
  chmod 600 "$tmp/firezone.env" "$tmp/firezone_private_key"

  log "ferrozone import firezone ($backend)"
  env -i PATH="$PATH" HOME="${HOME:-/root}" FERROZONE_DATA_DIR="$tmp/data" \
    ${database_url:+FERROZONE_DATABASE_URL="$database_url"} \
    "$bin" import firezone --source-database-url "$(fz "d['database_url']")" \
    --env-file "$tmp/firezone.env" --private-key-file "$tmp/firezone_private_key" >"$tmp/import.log" 2>&1 ||
    die "the import failed: $(tail -n 5 "$tmp/import.log")"
  grep -q '^imported: 6 users, 6 devices' "$tmp/import.log" || die "unexpected import: $(cat "$tmp/import.log")"
  grep -q 'FERROZONE_WIREGUARD_IPV4_NETWORK=100.64.0.0/10' "$tmp/import.log" ||
    die "the report does not name the Docker install's tunnel network"

  start_server FERROZONE_WIREGUARD_IPV4_NETWORK=100.64.0.0/10 FERROZONE_WIREGUARD_IPV4_ADDRESS=100.64.0.1 \
    FERROZONE_WIREGUARD_IPV6_NETWORK=fd00::/106 FERROZONE_WIREGUARD_IPV6_ADDRESS=fd00::1
  local server_key
  server_key=$(in_srv wg show "$srv_if" public-key)
  [[ $server_key == "$(fz "d['server_public_key']")" ]] ||
    die "the interface's key $server_key is not Firezone's server key"
  until_ok 10 "the imported device is a peer" in_srv sh -c "wg show '$srv_if' peers | grep -q ."

  log "client wireguard-go ($cli_if) with Firezone's configuration"
  ip netns exec "$cli_ns" env WG_PROCESS_FOREGROUND=1 LOG_LEVEL=error wireguard-go "$cli_if" >"$tmp/client.log" 2>&1 &
  client_pid=$!
  until_ok 10 "the client interface exists" in_cli ip link show dev "$cli_if"
  fz "d['client']['private_key']" >"$tmp/client.key"
  fz "d['client']['preshared_key']" >"$tmp/client.psk"
  in_cli wg set "$cli_if" private-key "$tmp/client.key" peer "$server_key" preshared-key "$tmp/client.psk" \
    endpoint "$srv_veth_ip:51820" allowed-ips 100.64.0.1/32
  in_cli ip address add "$(fz "d['client']['ipv4']")/32" dev "$cli_if"
  in_cli ip link set "$cli_if" up
  in_cli ip route replace 100.64.0.1/32 dev "$cli_if"
  until_ok 15 "ping 100.64.0.1 through the imported tunnel" in_cli ping -c 1 -W 1 100.64.0.1
  log "a Firezone client pings the gateway through Ferrozone: ok"
  stop_server
  log "PASSED ($backend, a Firezone client)"
}
