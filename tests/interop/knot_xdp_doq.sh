# shellcheck shell=bash
# Sourced by ci-hook: Knot DNS over QUIC, and UDP from our AF_XDP sockets to knotd's. knotd
# 3.2 serves DoQ only through XDP (AF_XDP sockets on a network interface), never on
# loopback, so this case builds a network namespace of its own with a veth pair (10.253.53.1
# here, 10.253.53.2 in the namespace), starts knotd there with `xdp: listen: IFACE@53, udp:
# on, tcp: on, quic: on, quic-port: 853`, and runs kdig +quic and dnstransport --transport doq across
# the pair: persistent connections (knotd grants 100 streams a connection and no more, so the
# client replaces its connections) and one query per connection with resumption and 0-RTT.
# Then `dnstransport run --xdp` on this end of the pair sends UDP, then TCP (one query per
# connection), from AF_XDP sockets to knotd's XDP, a closed loop as fast as the two carry:
# every query answered, NOERROR. Needs root (namespaces, XDP). Where the kernel or
# the machine refuses (no root, no netns, no veth, XDP refused), the case is skipped with
# that reason, but with CI=true it fails: it is the only DoQ case against a server not ours,
# and the CI machines grant all of it, so a refusal there is a change to look at.
# Uses ci-hook's row, in_ci, work, DNSTRANSPORT, KDIG, INTEROP_CERT/KEY, here, client_cpu, rate.

XDP_PID=""
XDP_NS=""
XDP_HOST_IF=""

# Stops knotd and removes the namespace and the veth pair (ci-hook's exit trap calls it too).
knot_xdp_cleanup() {
  if [ -n "$XDP_PID" ]; then
    kill "$XDP_PID" 2>/dev/null || true
    wait "$XDP_PID" 2>/dev/null || true
  fi
  XDP_PID=""
  [ -z "$XDP_HOST_IF" ] || ip link del "$XDP_HOST_IF" 2>/dev/null || true
  [ -z "$XDP_NS" ] || ip netns del "$XDP_NS" 2>/dev/null || true
  XDP_HOST_IF=""
  XDP_NS=""
}

# knot_xdp_refused SERVER REASON [TRANSPORT]: the machine refused what the case needs; a
# skip, or with CI=true a failure (a row for TRANSPORT, doq by default).
knot_xdp_refused() {
  if [ "$in_ci" = 1 ]; then
    echo "   FAIL: $2 (CI=true: nothing may be skipped)"
    row "$1" "${3:-doq}" "-" "-" "-" "-" "-" "-" "FAIL: $2 (CI=true: nothing may be skipped)"
  else
    echo "   SKIP: $2"
    row "$1" "${3:-doq}" "-" "-" "-" "-" "-" "-" "SKIP: $2"
  fi
}

knot_xdp_doq() {
  local ns="dtx$$" host_if="dtx$$h" ns_if="dtx$$n" dir="$work/knot-xdp" reason="" out
  local server=knot-xdp-doq
  echo "-- $server: Knot DNS $(interop_version knot) DNS over QUIC through XDP, in network namespace $ns"
  if [ "$(id -u)" != 0 ]; then
    reason="needs root (network namespace and XDP)"
  elif ! command -v ip >/dev/null || ! command -v knotd >/dev/null; then
    reason="needs ip (iproute2) and knotd"
  elif ! ip netns add "$ns" 2>/dev/null; then
    reason="cannot create a network namespace here"
  elif ! XDP_NS=$ns || ! ip link add "$host_if" type veth peer name "$ns_if" 2>/dev/null; then
    reason="cannot create a veth pair here"
  else
    XDP_HOST_IF=$host_if
  fi
  if [ -n "$reason" ]; then
    knot_xdp_cleanup
    knot_xdp_refused "$server" "$reason"
    return 0
  fi
  ip link set "$ns_if" netns "$ns"
  ip addr add 10.253.53.1/24 dev "$host_if"
  ip link set "$host_if" up
  ip netns exec "$ns" ip addr add 10.253.53.2/24 dev "$ns_if"
  ip netns exec "$ns" ip link set "$ns_if" up
  ip netns exec "$ns" ip link set lo up
  mkdir -p "$dir/db"
  interop_zone_file >"$dir/interop.test.zone"
  cat >"$dir/knot.conf" <<CONF
server:
  rundir: "$dir"
  pidfile: "$dir/knot.pid"
  listen: 10.253.53.2@53
  udp-workers: 1
  tcp-workers: 1
  background-workers: 1
  key-file: "$INTEROP_KEY"
  cert-file: "$INTEROP_CERT"
xdp:
  listen: $ns_if@53
  udp: on
  tcp: on
  quic: on
  quic-port: 853
log:
  - target: stderr
    any: info
database:
  storage: "$dir/db"
template:
  - id: default
    storage: "$dir"
    file: "%s.zone"
    zonefile-sync: -1
    journal-content: none
zone:
  - domain: $INTEROP_ZONE
CONF
  ip netns exec "$ns" knotd -c "$dir/knot.conf" >"$dir/server.log" 2>&1 &
  XDP_PID=$!
  local start=$SECONDS
  while [ $((SECONDS - start)) -lt 15 ]; do
    if grep -q "server started" "$dir/server.log" || ! kill -0 "$XDP_PID" 2>/dev/null; then break; fi
    sleep 0.2
  done
  if ! grep -q "initialized XDP interface" "$dir/server.log"; then
    reason="knotd could not use XDP here: $(grep -iE 'error|fail|xdp' "$dir/server.log" | head -n 2 | tr '\n' ' ')"
    knot_xdp_cleanup
    knot_xdp_refused "$server" "$reason"
    return 0
  fi
  echo "   $(grep -o 'initialized XDP interface.*' "$dir/server.log")"
  # kdig +quic, the independent client, first: tells a knotd problem from a client one.
  # (kdig takes the TLS options before +quic, which they would otherwise turn into DoT.)
  if ! out=$(timeout 20 "$KDIG" @10.253.53.2 -p 853 +tls-ca="$INTEROP_CERT" \
    +tls-hostname=interop.test +quic +timeout=3 +retry=1 "a.$INTEROP_ZONE" A 2>&1) ||
    ! grep -q 'status: NOERROR' <<<"$out"; then
    row "$server" "doq" "-" "-" "kdig" "-" "-" "-" "FAIL: kdig +quic got no answer: $(echo "$out" | grep -E 'ERROR|WARNING' | head -n 2 | tr '\n' ' ')"
    sed 's/^/   | /' "$dir/server.log" | tail -n 10
    knot_xdp_cleanup
    return 0
  fi
  row "$server" "doq" "-" "-" "kdig +quic" "-" "NOERROR" "-" "ok"
  echo "   kdig +quic: ok"
  local qpc json err line status
  for qpc in unlimited 1; do
    json="$dir/doq-$qpc.json"
    err="$dir/doq-$qpc.err"
    local args=(run --server 10.253.53.2:853 --transport doq --queries "$work/present.txt"
      --clients 2 --outstanding 10 --rate "$rate" --duration "$duration" --timeout 1
      --queries-per-connection "$qpc" --verify --ca-file "$INTEROP_CERT" --sni interop.test
      --cpus "$client_cpu" --quiet --json "$json")
    local check=(--rcode NOERROR)
    if [ "$qpc" = 1 ]; then
      args+=(--tls-resume --early-data)
      check+=(--resume expect --new-connection-per-query)
    fi
    status=0
    timeout $((duration + 20)) "$DNSTRANSPORT" "${args[@]}" >"$err" 2>&1 || status=$?
    if [ ! -s "$json" ]; then
      line=$'-\t-\t-\t'"FAIL: dnstransport exited $status without a result: $(tail -n 3 "$err" | tr '\n' ' ')"
    else
      line=$(python3 "$here/check_run.py" "$json" "${check[@]}") || true
      if [ "$status" -ne 0 ] && [[ $line == *$'\t'ok ]]; then line="${line%ok}FAIL: dnstransport exited $status"; fi
    fi
    row "$server" "doq" "gnutls" "$qpc" "present" "$line"
    echo "   doq qpc=$qpc present: ${line##*$'\t'} ($(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
q = r.get("quic", {})
print("%d connections, %d replaced for want of streams, %d with 0-RTT accepted" % (
    r["connections"]["opened"], q.get("streams_exhausted", 0), q.get("early_data_accepted", 0)))
' "$json" 2>/dev/null || echo "no result"))"
  done
  knot_xdp_over "$host_if" "$dir" udp
  knot_xdp_over "$host_if" "$dir" tcp
  knot_xdp_cleanup
}

# knot_xdp_over HOST_IF DIR TRANSPORT: UDP (or TCP, one query per connection) from our
# AF_XDP sockets on HOST_IF (this end of the pair) to knotd's XDP, closed loop, no rate: all
# answered, NOERROR, and the rate printed.
knot_xdp_over() {
  local host_if=$1 dir=$2 transport=$3 server="knot-xdp-$3" json="$2/xdp-$3.json"
  local err="$2/xdp-$3.err" status=0 line extra=()
  [ "$transport" = udp ] || extra=(--queries-per-connection 1)
  timeout $((duration + 20)) "$DNSTRANSPORT" run --server 10.253.53.2 --transport "$transport" \
    "${extra[@]}" --xdp "$host_if" --queries "$work/present.txt" --clients 4 --outstanding 50 \
    --duration "$duration" --timeout 1 --cpus "$client_cpu" --quiet --json "$json" \
    >"$err" 2>&1 || status=$?
  if [ ! -s "$json" ] && grep -q "this build has no AF_XDP" "$err"; then
    knot_xdp_refused "$server" "$(grep -o 'this build has no AF_XDP.*' "$err")" "$transport"
    return 0
  fi
  if [ ! -s "$json" ]; then
    line=$'-\t-\t-\t'"FAIL: dnstransport exited $status without a result: $(tail -n 3 "$err" | tr '\n' ' ')"
  else
    local checks=(--rcode NOERROR)
    [ "$transport" = udp ] || checks+=(--new-connection-per-query)
    line=$(python3 "$here/check_run.py" "$json" "${checks[@]}") || true
    if [ "$status" -ne 0 ] && [[ $line == *$'\t'ok ]]; then line="${line%ok}FAIL: dnstransport exited $status"; fi
  fi
  row "$server" "$transport" "-" "$([ "$transport" = udp ] && echo - || echo 1)" "present" "$line"
  echo "   $transport over AF_XDP, knotd's XDP answering: ${line##*$'\t'} ($(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print("{:,} answered, {:,.0f} q/s".format(r["responses_received"], r["qps"]))
' "$json" 2>/dev/null || echo "no result"))"
}
