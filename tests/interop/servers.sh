# Real DNS servers on loopback, for the interop suite (tests/interop/ci-hook) and the
# dnsperf comparison (tools/bench/compare-dnsperf). Source it; it defines no traffic of
# its own. Every server:
#   - listens only on 127.0.0.1, on the ports it is given (never 53 or 853),
#   - serves the small zone below (authoritative servers), or the same records as local
#     data (resolvers) or spoofed answers (dnsdist), and NXDOMAIN for other names in it,
#   - never sends a query anywhere: no forwarding, no root hints, no priming, no
#     trust-anchor fetching, no version polling,
#   - runs in the foreground with one worker, so that the caller can pin it with taskset
#     and stop it by its own process id.
#
# interop_write_config SERVER DIR UDP_TCP_PORT TLS_PORT [DOH_PORT] writes DIR/* and sets:
#   SRV_CMD            the command that runs the server in the foreground (array)
#   SRV_TLS_REASON     empty when the server serves DNS-over-TLS, else why not
#   SRV_RESUME_REASON  empty when TLS sessions resume, else why not
#   SRV_DOH_REASON     empty when the server serves DNS-over-HTTPS (HTTP/2 over TLS, path
#                      $INTEROP_DOH_PATH) on DOH_PORT, else why not; without a DOH_PORT
#                      no DoH listener is configured and the reason says so
#                      (RST_STREAM REFUSED_STREAM) when a connection carries many queries
#   SRV_KEEPALIVE      the edns-tcp-keepalive timeout (RFC 7828), in seconds, the server
#                      advertises over TCP/TLS/DoH to queries that carry the option; "none":
#                      it advertises none (the queries must still be answered); empty: the
#                      EDNS cases are not run
#   SRV_PADS           the transports (space-separated) over which the server pads answers
#                      to padded queries (RFC 7830) to blocks of 468 octets (RFC 8467);
#                      empty: not checked
# The certificate is taken from $INTEROP_CERT and $INTEROP_KEY (see interop_make_cert).
# INTEROP_LIMITS=default leaves out the raised TCP connection limits and idle timeouts,
# to observe each server's defaults (tools/bench/probe-stream-limits); "raised" otherwise.
# INTEROP_EXTRA_DATA (unbound only): more records, "absolute-name TYPE data" each, answered
# beside the zone's (the demo's answers to the built-in query set, tools/dev); empty by default.

INTEROP_ZONE=interop.test.
INTEROP_SERVERS_ALL=(unbound nsd knot kresd dnsdist named pdns_recursor)
INTEROP_DOH_PATH=/dns-query
INTEROP_EXTRA_DATA=()

# name (relative to the zone), type, data. TXT data has no spaces.
INTEROP_RECORDS=(
  "ns A 127.0.0.1"
  "a A 192.0.2.1"
  "a AAAA 2001:db8::1"
  "b A 192.0.2.2"
  "b A 192.0.2.3"
  "v6 AAAA 2001:db8::2"
  "txt TXT dnstransport-interop"
  "www A 192.0.2.4"
  "www AAAA 2001:db8::4"
)
# Names in the zone's namespace that do not exist: every server must say NXDOMAIN.
INTEROP_ABSENT=(
  "nx1 A"
  "nx2 AAAA"
  "no-such-name TXT"
  "deep.nx3 A"
)

interop_package() {  # the Debian package that ships SERVER
  case $1 in
    unbound) echo unbound ;; nsd) echo nsd ;; knot) echo knot ;;
    kresd) echo knot-resolver ;; dnsdist) echo dnsdist ;; named) echo bind9 ;;
    pdns_recursor) echo pdns-recursor ;;
  esac
}

interop_binary() {
  case $1 in
    unbound) echo /usr/sbin/unbound ;; nsd) echo /usr/sbin/nsd ;; knot) echo /usr/sbin/knotd ;;
    kresd) echo /usr/sbin/kresd ;; dnsdist) echo /usr/bin/dnsdist ;; named) echo /usr/sbin/named ;;
    pdns_recursor) echo /usr/sbin/pdns_recursor ;;
  esac
}

interop_version() {
  case $1 in
    unbound) unbound -V 2>&1 | sed -n '1s/^Version //p' ;;
    nsd) nsd -v 2>&1 | sed -n '1s/^NSD version //p' ;;
    knot) knotd -V 2>&1 | sed -n '1s/.*version //p' ;;
    kresd) kresd --version 2>&1 | sed -n '1s/.*version //p' ;;
    dnsdist) dnsdist --version 2>&1 | sed -n '1s/^dnsdist //;1s/ .*//p' ;;
    named) named -v 2>&1 | awk '{print $2; exit}' ;;
    pdns_recursor) pdns_recursor --version 2>&1 | sed -n 's/.*PowerDNS Recursor \([^ ]*\).*/\1/p' | head -n 1 ;;
  esac
}

# Why SERVER cannot run here (package or binary missing); empty when it can.
interop_missing_reason() {
  local pkg bin
  pkg=$(interop_package "$1")
  bin=$(interop_binary "$1")
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    echo "Debian package $pkg is not installed (tools/packages/optional-servers.txt; run tools/dev deps)"
  elif [ ! -x "$bin" ]; then
    echo "$bin is missing although package $pkg is installed"
  fi
}

# The zone's records as query-file lines: "name TYPE", one per distinct name and type.
interop_present_queries() {
  local r name type
  for r in "${INTEROP_RECORDS[@]}"; do
    read -r name type _ <<<"$r"
    echo "$name.$INTEROP_ZONE $type"
  done | awk '!seen[$0]++'
}

interop_absent_queries() {
  local r name type
  for r in "${INTEROP_ABSENT[@]}"; do
    read -r name type <<<"$r"
    echo "$name.$INTEROP_ZONE $type"
  done
}

# Tab-separated "name type data" with absolute names, for answer checks.
interop_records_tsv() {
  local r name type data
  for r in "${INTEROP_RECORDS[@]}"; do
    read -r name type data <<<"$r"
    printf '%s\t%s\t%s\n' "$name.$INTEROP_ZONE" "$type" "$data"
  done
}

# A self-signed certificate for 127.0.0.1 / interop.test in DIR; sets INTEROP_CERT/KEY.
interop_make_cert() {
  local dir=$1
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 7 \
    -subj "/CN=interop.test" -addext "subjectAltName=DNS:interop.test,IP:127.0.0.1" \
    -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
  chmod 644 "$dir/key.pem" "$dir/cert.pem"
  INTEROP_CERT=$dir/cert.pem
  INTEROP_KEY=$dir/key.pem
}

interop_raised() {  # prints its argument unless INTEROP_LIMITS=default
  [ "${INTEROP_LIMITS:-raised}" = default ] || printf '%s\n' "$1"
}

interop_zone_file() {  # standard master file of the zone
  local r name type data
  printf '$ORIGIN %s\n$TTL 300\n' "$INTEROP_ZONE"
  printf '@ IN SOA ns hostmaster 1 3600 600 86400 300\n@ IN NS ns\n'
  for r in "${INTEROP_RECORDS[@]}"; do
    read -r name type data <<<"$r"
    [ "$type" = TXT ] && data="\"$data\""
    printf '%s IN %s %s\n' "$name" "$type" "$data"
  done
}

interop_write_unbound() {
  local dir=$1 port=$2 tls=$3 doh=${4:-} r name type data
  {
    cat <<EOF
server:
  directory: "$dir"
  chroot: ""
  username: ""
  pidfile: "$dir/unbound.pid"
  use-syslog: no
  logfile: ""
  verbosity: 1
  num-threads: 1
  so-reuseport: no
  do-ip4: yes
  do-ip6: no
  do-udp: yes
  do-tcp: yes
  port: $port
  interface: 127.0.0.1@$port
  interface: 127.0.0.1@$tls
  tls-port: $tls
  tls-service-key: "$INTEROP_KEY"
  tls-service-pem: "$INTEROP_CERT"
$([ -z "$doh" ] || printf '  interface: 127.0.0.1@%s\n  https-port: %s\n  http-endpoint: "%s"\n' "$doh" "$doh" "$INTEROP_DOH_PATH")
$(interop_raised "  incoming-num-tcp: 1000")
  access-control: 127.0.0.0/8 allow
  module-config: "iterator"
  # Nothing leaves the machine: every other name is answered locally, and the only
  # upstream is a loopback stub that unbound refuses to query (do-not-query-localhost).
  edns-tcp-keepalive: yes
  edns-tcp-keepalive-timeout: 30000
  local-zone: "." static
  local-zone: "$INTEROP_ZONE" static
  local-data: "$INTEROP_ZONE 300 IN SOA ns.$INTEROP_ZONE hostmaster.$INTEROP_ZONE 1 3600 600 86400 300"
EOF
    for r in "${INTEROP_RECORDS[@]}"; do
      read -r name type data <<<"$r"
      [ "$type" = TXT ] && data="'$data'"
      printf '  local-data: "%s.%s 300 IN %s %s"\n' "$name" "$INTEROP_ZONE" "$type" "$data"
    done
    for r in "${INTEROP_EXTRA_DATA[@]}"; do
      read -r name type data <<<"$r"
      printf '  local-data: "%s 300 IN %s %s"\n' "$name" "$type" "$data"
    done
    cat <<EOF
stub-zone:
  name: "."
  stub-addr: 127.0.0.1@9
remote-control:
  control-enable: no
EOF
  } >"$dir/unbound.conf"
  SRV_CMD=(unbound -d -p -c "$dir/unbound.conf")
  SRV_TLS_REASON=""
  SRV_RESUME_REASON=""
  SRV_DOH_REASON=""
  SRV_KEEPALIVE=30
  # pad-responses (on by default) pads over TLS only; unbound 1.17 leaves DoH answers unpadded.
  SRV_PADS="tls"
  if ! unbound -V 2>/dev/null | grep -q -- '--with-libnghttp2'; then
    SRV_DOH_REASON="this unbound is built without libnghttp2 (unbound -V), so it has no DNS-over-HTTPS listener"
  fi
  interop_no_doh_port "$doh"
}

interop_write_nsd() {
  local dir=$1 port=$2 tls=$3
  interop_zone_file >"$dir/interop.test.zone"
  cat >"$dir/nsd.conf" <<EOF
server:
  ip-address: 127.0.0.1@$port
  ip-address: 127.0.0.1@$tls
  port: $port
  tls-port: $tls
  tls-service-key: "$INTEROP_KEY"
  tls-service-pem: "$INTEROP_CERT"
  do-ip4: yes
  do-ip6: no
  server-count: 1
  reuseport: no
$(interop_raised "  tcp-count: 1000")
  # Response rate limiting is on by default (200 q/s per /24) and drops NXDOMAIN floods.
  rrl-ratelimit: 0
  rrl-whitelist-ratelimit: 0
  username: ""
  chroot: ""
  zonesdir: "$dir"
  database: ""
  zonelistfile: "$dir/zone.list"
  xfrdfile: "$dir/xfrd.state"
  xfrdir: "$dir"
  pidfile: "$dir/nsd.pid"
  logfile: "$dir/nsd.log"
  verbosity: 1
remote-control:
  control-enable: no
zone:
  name: "$INTEROP_ZONE"
  zonefile: "$dir/interop.test.zone"
EOF
  SRV_CMD=(nsd -d -c "$dir/nsd.conf")
  SRV_TLS_REASON=""
  SRV_RESUME_REASON=""
  SRV_DOH_REASON="NSD $(interop_version nsd) has no DNS-over-HTTPS listener (UDP, TCP and TLS only)"
  # NSD 4.6 answers only the first of the queries that reach it in one TLS record: whenever
  # two queries of a client fell due together (a stalled machine), one was lost. Over DoT
  # each client sends one query at a time, as the server table in docs/real-servers.md advises.
  SRV_TLS_OUTSTANDING=1
}

interop_write_knot() {
  local dir=$1 port=$2
  interop_zone_file >"$dir/interop.test.zone"
  mkdir -p "$dir/db"
  cat >"$dir/knot.conf" <<EOF
server:
  rundir: "$dir"
  pidfile: "$dir/knot.pid"
  listen: 127.0.0.1@$port
  udp-workers: 1
  tcp-workers: 1
  background-workers: 1
$(interop_raised "  tcp-max-clients: 1000")
log:
  - target: stderr
    any: notice
database:
  storage: "$dir/db"
control:
  listen: "$dir/knot.sock"
template:
  - id: default
    storage: "$dir"
    file: "%s.zone"
    zonefile-sync: -1
    journal-content: none
zone:
  - domain: $INTEROP_ZONE
EOF
  SRV_CMD=(knotd -c "$dir/knot.conf")
  SRV_TLS_REASON="Knot DNS $(interop_version knot) has no DNS-over-TLS listener (UDP and TCP only; its one encrypted transport is DNS-over-QUIC in XDP mode)"
  SRV_RESUME_REASON=$SRV_TLS_REASON
  SRV_DOH_REASON="Knot DNS $(interop_version knot) has no DNS-over-HTTPS listener (an authoritative server: UDP and TCP only)"
}

interop_write_kresd() {
  local dir=$1 port=$2 tls=$3 doh=${4:-} r name type data prev="" lua=""
  mkdir -p "$dir/cache"
  # One policy.ANSWER rule per name, built from the record table; NODATA for other types.
  local -A rrsets=()
  local -a names=()
  for r in "${INTEROP_RECORDS[@]}"; do
    read -r name type data <<<"$r"
    case $type in
      A | AAAA) data="kres.str2ip('$data')" ;;
      TXT) data="string.char(${#data}) .. '$data'" ;;
    esac
    [ -n "${rrsets[$name]+x}" ] || names+=("$name")
    rrsets[$name]+="$type $data"$'\n'
  done
  for name in "${names[@]}"; do
    lua+="policy.add(policy.domains(policy.ANSWER({"$'\n'
    prev=""
    while read -r type data; do
      [ -n "$type" ] || continue
      if [ "$type" != "$prev" ]; then
        [ -z "$prev" ] || lua+="}, ttl = 300 },"$'\n'
        lua+="  [kres.type.$type] = { rdata = { $data"
      else
        lua+=", $data"
      fi
      prev=$type
    done <<<"${rrsets[$name]}"
    lua+="}, ttl = 300 },"$'\n'"}, true), policy.todnames({'$name.$INTEROP_ZONE'})))"$'\n'
  done
  cat >"$dir/kresd.conf" <<EOF
-- Loopback only, one process, no outgoing queries at all.
net.ipv6 = false
net.listen('127.0.0.1', $port, { kind = 'dns' })
net.listen('127.0.0.1', $tls, { kind = 'tls' })
$([ -z "$doh" ] || echo "net.listen('127.0.0.1', $doh, { kind = 'doh2' })  -- serves $INTEROP_DOH_PATH (and /doh)")
net.tls('$INTEROP_CERT', '$INTEROP_KEY')
cache.open(10 * MB, 'lmdb://$dir/cache')
$(interop_raised "net.tcp_in_idle(30000)")
trust_anchors.remove('.')
modules.unload('priming')
modules.unload('detect_time_skew')
modules.unload('detect_time_jump')
modules.unload('ta_signal_query')
modules.unload('ta_sentinel')
$lua
-- Every other name, in the zone or not: NXDOMAIN, answered here.
policy.add(policy.all(policy.DENY))
EOF
  SRV_CMD=(kresd -n -q -c "$dir/kresd.conf" "$dir")
  SRV_TLS_REASON=""
  SRV_RESUME_REASON=""
  SRV_DOH_REASON=""
  # kresd 5.6 (daemon/http.c) assembles POST bodies in one buffer per connection and does
  # not take DATA of two streams interleaved: a stream whose HEADERS arrive while another
  # stream's DATA is still to come is refused with RST_STREAM(REFUSED_STREAM), unprocessed
  # (knot-resolver issue #619). An HTTP/2 client that sends several requests' HEADERS
  # before their DATA (nghttp2 queues HEADERS ahead of DATA) meets it on a busy connection.
  interop_no_doh_port "$doh"
}

interop_write_dnsdist() {
  local dir=$1 port=$2 tls=$3 doh=${4:-} r name type data key
  local -A addrs=()
  local -a keys=()
  {
    cat <<EOF
-- Loopback only, no backend: every answer is made here by a rule.
setSecurityPollSuffix('')
setLocal('127.0.0.1:$port', { reusePort = false })
addTLSLocal('127.0.0.1:$tls', '$INTEROP_CERT', '$INTEROP_KEY', { provider = 'openssl' })
$([ -z "$doh" ] || echo "addDOHLocal('127.0.0.1:$doh', '$INTEROP_CERT', '$INTEROP_KEY', '$INTEROP_DOH_PATH', { reusePort = false })")
setMaxTCPClientThreads(1)
$(interop_raised "setTCPRecvTimeout(30)")
EOF
    for r in "${INTEROP_RECORDS[@]}"; do
      read -r name type data <<<"$r"
      key="$name $type"
      if [ "$type" = TXT ]; then
        # Raw RDATA: one character-string, its length as a Lua decimal escape.
        printf "addAction(AndRule({ QNameRule('%s.%s'), QTypeRule(DNSQType.TXT) }), SpoofRawAction('\\\\%03d%s'))\n" \
          "$name" "$INTEROP_ZONE" "${#data}" "$data"
        continue
      fi
      [ -n "${addrs[$key]+x}" ] || keys+=("$key")
      addrs[$key]+="'$data', "
    done
    for key in "${keys[@]}"; do
      read -r name type <<<"$key"
      printf "addAction(AndRule({ QNameRule('%s.%s'), QTypeRule(DNSQType.%s) }), SpoofAction({ %s }))\n" \
        "$name" "$INTEROP_ZONE" "$type" "${addrs[$key]%, }"
    done
    cat <<EOF
addAction(makeRule('$INTEROP_ZONE'), RCodeAction(DNSRCode.NXDOMAIN))
addAction(AllRule(), RCodeAction(DNSRCode.REFUSED))
EOF
  } >"$dir/dnsdist.conf"
  SRV_CMD=(dnsdist --supervised --disable-syslog -C "$dir/dnsdist.conf")
  SRV_TLS_REASON=""
  SRV_RESUME_REASON=""
  SRV_DOH_REASON=""
  # Its spoofed answers (dnsdist 1.7) carry neither keepalive nor padding; queries with both
  # are answered all the same.
  SRV_KEEPALIVE=none
  SRV_PADS=""
  interop_no_doh_port "$doh"
}

interop_write_named() {
  local dir=$1 port=$2 tls=$3 doh=${4:-}
  interop_zone_file >"$dir/interop.test.zone"
  cat >"$dir/named.conf" <<EOF
options {
  directory "$dir";
  pid-file "$dir/named.pid";
  session-keyfile none;
  managed-keys-directory "$dir";
  listen-on port $port { 127.0.0.1; };
  listen-on port $tls tls local-tls { 127.0.0.1; };
$([ -z "$doh" ] || echo "  listen-on port $doh tls local-tls http local-http-server { 127.0.0.1; };")
  listen-on-v6 { none; };
  recursion no;
  notify no;
  dnssec-validation no;
  allow-query { any; };
$(interop_raised "  tcp-clients 1000;")
};
tls local-tls {
  key-file "$INTEROP_KEY";
  cert-file "$INTEROP_CERT";
};
http local-http-server {
  endpoints { "$INTEROP_DOH_PATH"; };
};
controls { };
zone "$INTEROP_ZONE" {
  type primary;
  file "$dir/interop.test.zone";
};
EOF
  SRV_CMD=(named -g -n 1 -c "$dir/named.conf")
  SRV_TLS_REASON=""
  SRV_RESUME_REASON=""
  SRV_DOH_REASON=""
  interop_no_doh_port "$doh"
}

interop_write_pdns_recursor() {
  local dir=$1 port=$2
  interop_zone_file >"$dir/interop.test.zone"
  # The zone is served from its file (auth-zones); nothing else is ever asked of anyone:
  # no root priming (hint-file=no), no version polling (security-poll-suffix empty),
  # and every address is in dont-query, so that a query that would leave is dropped.
  cat >"$dir/recursor.conf" <<EOF
config-dir=$dir
socket-dir=$dir
daemon=no
write-pid=no
disable-syslog=yes
local-address=127.0.0.1
local-port=$port
reuseport=no
threads=1
pdns-distributes-queries=no
allow-from=127.0.0.0/8
auth-zones=${INTEROP_ZONE%.}=$dir/interop.test.zone
hint-file=no
dont-query=0.0.0.0/0, ::/0
security-poll-suffix=
dnssec=off
$(interop_raised "max-tcp-clients=1000")
$(interop_raised "client-tcp-timeout=30")
EOF
  SRV_CMD=(pdns_recursor --config-dir="$dir")
  SRV_TLS_REASON="PowerDNS Recursor $(interop_version pdns_recursor) has no DNS-over-TLS listener (UDP and TCP only; it speaks DoT only to authoritative servers, dot-to-auth-names)"
  SRV_RESUME_REASON=$SRV_TLS_REASON
  SRV_DOH_REASON="PowerDNS Recursor $(interop_version pdns_recursor) has no DNS-over-HTTPS listener (UDP and TCP only)"
}

# For a server that has DoH: when the caller gave no DoH port, say so in SRV_DOH_REASON.
interop_no_doh_port() {
  [ -n "$1" ] || SRV_DOH_REASON=${SRV_DOH_REASON:-"no DoH port given: no DoH listener configured"}
}

interop_write_config() {  # SERVER DIR UDP_TCP_PORT TLS_PORT [DOH_PORT]
  local server=$1
  mkdir -p "$2"
  SRV_KEEPALIVE=""
  SRV_PADS=""
  SRV_TLS_OUTSTANDING=""
  "interop_write_$server" "${@:2}"
}

# Starts the configured server pinned to CPU $2 with its output in $3; sets SRV_PID.
interop_start() {
  local cpu=$1 log=$2
  taskset -c "$cpu" "${SRV_CMD[@]}" </dev/null >"$log" 2>&1 &
  SRV_PID=$!
}

# Waits (at most $4 seconds) until 127.0.0.1:$1 answers one query over transport $2 with
# query file $3 (more flags of `run` after it); returns non-zero, with the reason on stdout,
# if it never does.
interop_wait_ready() {
  local port=$1 transport=$2 queries=$3 limit=$4 start=$SECONDS
  local extra=("${@:5}")
  while [ $((SECONDS - start)) -lt "$limit" ]; do
    if ! kill -0 "$SRV_PID" 2>/dev/null; then
      echo "the server exited while starting"
      return 1
    fi
    if "$DNSTRANSPORT" run --server "127.0.0.1:$port" --transport "$transport" --queries "$queries" \
      --clients 1 --outstanding 1 --count 1 --timeout 0.5 --quiet "${extra[@]}" >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.2
  done
  echo "no answer over $transport on 127.0.0.1:$port within ${limit}s"
  return 1
}

# Stops the server by its process id: SIGTERM, at most 10 s, then SIGKILL.
interop_stop() {
  local pid=${1:-$SRV_PID} i
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "   (pid $pid ignored SIGTERM for 10 s; SIGKILL)" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

# Fails when a TCP or UDP port of 127.0.0.1 is already in use, naming it.
interop_ports_free() {
  local p
  for p in "$@"; do
    if ss -Hlntu "( sport = :$p )" | grep -q .; then
      echo "port $p is already in use on this machine"
      return 1
    fi
  done
}
