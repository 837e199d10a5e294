#!/usr/bin/env bash
# Restarts on the kernel WireGuard backend, inside the guest of scripts/kernel-e2e (a kernel
# with the wireguard module), as root:
#
#   server ns: `ferrozone serve`, FERROZONE_WIREGUARD_BACKEND=kernel, SQLite in $TMPDIR; later
#              serve without a data plane and `ferrozone gateway` (kernel) on the interface;
#   client ns: a kernel WireGuard client configured from GET /v0/devices/{id}/config.
#
# It shows: /healthz names the kernel backend; the client pings the gateway through the
# tunnel; through a restart (SIGTERM, then a new start) of serve, and then of `ferrozone
# gateway`, a client pinging 10 times a second loses at most 10 of 100 replies, the interface
# is the same one (its index) with the same peer, the nftables table reads the same, and the
# device's traffic totals in the API go on from where they were.
set -euo pipefail

log() { printf 'kernel-e2e: %s\n' "$*" >&2; }
die() {
  log "FAILED: $*"
  [[ ! -s ${tmp:-}/server.log ]] || grep -v 'ferrozone_http::telemetry' "$tmp/server.log" | tail -n 30 >&2
  ip netns exec fzk-srv wg show >&2 || true
  ip netns exec fzk-cli wg show >&2 || true
  exit 1
}
bin=${FERROZONE_BIN:?FERROZONE_BIN names the binary}
tmp=$(mktemp -d)
srv=fzk-srv
cli=fzk-cli
in_srv() { ip netns exec "$srv" "$@"; }
in_cli() { ip netns exec "$cli" "$@"; }
until_ok() {
  local seconds=$1 what=$2
  shift 2
  # Microseconds of the wall clock: bash's SECONDS counts whole seconds, so SECONDS + 1 can
  # be a moment away.
  local deadline=$((${EPOCHREALTIME//[^0-9]/} + seconds * 1000000))
  until "$@" >/dev/null 2>&1; do
    ((${EPOCHREALTIME//[^0-9]/} < deadline)) || die "$what: not within $seconds s"
    sleep 0.1
  done
}
json() { python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"; }

ip netns add "$srv"
ip netns add "$cli"
in_srv ip link set lo up
in_cli ip link set lo up
ip link add veth-s netns "$srv" type veth peer name veth-c netns "$cli"
in_srv ip address add 192.168.233.1/24 dev veth-s
in_cli ip address add 192.168.233.2/24 dev veth-c
in_srv ip link set veth-s up
in_cli ip link set veth-c up

api=http://127.0.0.1:13000
# start_server [VAR=VALUE…]: with these settings added (the kernel backend unless said).
start_server() {
  ip netns exec "$srv" env -i PATH="$PATH" HOME="$HOME" RUST_LOG=info FERROZONE_DATA_DIR="$tmp/data" \
    FERROZONE_LISTEN=127.0.0.1:13000 FERROZONE_WIREGUARD_BACKEND=kernel FERROZONE_WIREGUARD_INTERFACE=fzk0 \
    FERROZONE_DEFAULT_CLIENT_ENDPOINT=192.168.233.1:51820 FERROZONE_STATS_INTERVAL=1 \
    FERROZONE_EGRESS_INTERFACE=veth-s "$@" "$bin" serve >>"$tmp/server.log" 2>&1 &
  server_pid=$!
  until_ok 120 "the server answers /healthz" in_srv curl -fs "$api/healthz"
}
start_server
token=$(grep -m1 '^fz_' "$tmp/server.log") || die "no admin token printed"
api_call() {
  in_srv curl -fsS -X "$1" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' ${3:+--data "$3"} "$api$2"
}
in_srv curl -fsS "$api/healthz" | json "d['data_plane']['backend']" | grep -qx kernel ||
  die "/healthz does not name the kernel backend: $(in_srv curl -fsS "$api/healthz")"
in_srv ip -d link show fzk0 | grep -q wireguard || die "fzk0 is not a kernel WireGuard interface"

user_id=$(api_call POST /v0/users '{"user": {"email": "kernel@example.com"}}' | json "d['data']['id']")
private_key=$(wg genkey)
public_key=$(wg pubkey <<<"$private_key")
device_id=$(api_call POST /v0/devices "{\"device\": {\"user_id\": \"$user_id\", \"public_key\": \"$public_key\"}}" |
  json "d['data']['id']")
api_call GET "/v0/devices/$device_id/config" >"$tmp/client.conf"
python3 - "$tmp/client.conf" "$private_key" >"$tmp/client.wg" <<'PY'
import sys
text, key = open(sys.argv[1]).read(), sys.argv[2]
for line in text.splitlines():
    name = line.split("=", 1)[0].strip()
    if name in ("Address", "DNS", "MTU"):
        continue
    print(f"PrivateKey = {key}" if name == "PrivateKey" else line)
PY
address=$(sed -n 's/^Address *= *//p' "$tmp/client.conf" | tr ',' '\n' | grep -v ':' | head -n1 | tr -d ' ')
in_cli ip link add fzk1 type wireguard
in_cli wg setconf fzk1 "$tmp/client.wg"
in_cli ip address add "$address" dev fzk1
in_cli ip link set fzk1 up
gateway=$(in_srv ip -4 -o address show dev fzk0 | awk '{ print $4 }' | cut -d/ -f1)
in_cli ip route add "$gateway/32" dev fzk1 2>/dev/null || true
pings() { in_cli ping -c 1 -W 1 "$gateway"; }
until_ok 60 "a ping to $gateway through the tunnel" pings
log "client: through the kernel interface, pinging $gateway"

rx() { api_call GET "/v0/devices/$device_id" | json "d['data']['rx_bytes'] or 0"; }
rx_above() { (($(rx) > $1)); }
until_ok 30 "traffic totals in the API" rx_above 0
table() { in_srv nft -j list table inet ferrozone | python3 -c '
import json, sys
def clean(v):
    if isinstance(v, dict):
        v = {k: clean(x) for k, x in v.items() if k not in ("handle", "counter")}
        if isinstance(v.get("elem"), list):
            v["elem"] = sorted(v["elem"], key=lambda e: json.dumps(e, sort_keys=True))
        return v
    return [clean(x) for x in v] if isinstance(v, list) else v
print(json.dumps([clean(i) for i in json.load(sys.stdin)["nftables"] if "metainfo" not in i], sort_keys=True))'; }
# through_restart WHAT: a client pinging 10 times a second through stop_WHAT and start_WHAT
# loses at most 10 of 100 replies; the interface (its index), the peer and the table stay,
# and the traffic totals go on from where they were.
through_restart() {
  local index_before rx_before received log_file=$tmp/$1.log
  table >"$tmp/table-before.json"
  index_before=$(in_srv cat /sys/class/net/fzk0/ifindex)
  rx_before=$(rx)
  in_cli ping -i 0.1 -c 100 -W 1 "$gateway" >"$tmp/ping.log" 2>&1 &
  local ping_pid=$!
  until_ok 5 "the first reply of the restart's ping" grep -q 'bytes from' "$tmp/ping.log"
  "stop_$1"
  in_srv wg show fzk0 peers | grep -qxF "$public_key" || die "the peer left the interface with $1"
  "start_$1"
  wait "$ping_pid" || true
  received=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' "$tmp/ping.log")
  ((100 - ${received:-0} <= 10)) || die "a restart of $1 lost $((100 - ${received:-0})) of 100 replies: $(tail -n 2 "$tmp/ping.log")"
  [[ $(in_srv cat /sys/class/net/fzk0/ifindex) == "$index_before" ]] || die "the restart of $1 made a new interface"
  in_srv wg show fzk0 peers | grep -qxF "$public_key" || die "the peer is not on the interface after $1's restart"
  [[ $(grep -c 'kernel WireGuard interface ready' "$log_file") -ge 2 ]] || die "$1 did not say it took the interface"
  table | cmp -s - "$tmp/table-before.json" || die "the nftables table differs after $1's restart"
  pings || die "no ping after $1's restart"
  until_ok 10 "traffic totals counted after $1's restart" rx_above "$rx_before"
  log "$1 restarted: the same interface (index $index_before) and peer, the same table, $((100 - received)) of 100 pings (10 a second) lost, totals $rx_before -> $(rx) bytes"
}
stop_server() {
  kill -TERM "$server_pid"
  local status=0
  wait "$server_pid" || status=$?
  ((status == 0)) || die "serve exited with status $status on SIGTERM"
}
through_restart server

# --- `ferrozone gateway` on the same interface: serve without a data plane, a gateway with it ---
stop_server
start_server FERROZONE_WIREGUARD_BACKEND=none
enrolment=$(api_call POST /v0/gateways '{"gateway": {"name": "kernel"}}' | json "d['data']['enrolment_token']")
connections() { grep -c 'connected to the control plane' "$tmp/gateway.log" 2>/dev/null || true; }
connected_again() { (($(connections) > $1)); }
start_gateway() {
  local before
  before=$(connections)
  ip netns exec "$srv" env -i PATH="$PATH" HOME="$HOME" RUST_LOG=info FERROZONE_GATEWAY_CONTROL_PLANE="$api" \
    FERROZONE_GATEWAY_STATE_DIR="$tmp/gateway" FERROZONE_GATEWAY_ENROLMENT_TOKEN="$enrolment" \
    FERROZONE_WIREGUARD_BACKEND=kernel FERROZONE_WIREGUARD_INTERFACE=fzk0 FERROZONE_STATS_INTERVAL=1 \
    FERROZONE_EGRESS_INTERFACE=veth-s "$bin" gateway >>"$tmp/gateway.log" 2>&1 &
  gateway_pid=$!
  until_ok 120 "the gateway connects" connected_again "${before:-0}"
}
stop_gateway() {
  kill -TERM "$gateway_pid"
  local status=0
  wait "$gateway_pid" || status=$?
  ((status == 0)) || die "the gateway exited with status $status on SIGTERM"
}
start_gateway
until_ok 30 "a ping through the gateway's interface" pings
through_restart gateway
stop_gateway
kill -TERM "$server_pid"
wait "$server_pid" || true
log "passed"
