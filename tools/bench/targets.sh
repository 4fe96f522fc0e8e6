# Sourced by tools/bench/peers and tools/bench/latency-accuracy: the targets they measure
# (the built-in responder, dnsdist spoofing answers, unbound answering from local data), each
# started on CPU 1 on 127.0.0.1 (UDP and TCP on $udp_port, DoT on $tls_port, DoH on
# $doh_port; DoQ on $doq_port, built-in responder only), and the set-up they share:
#   bench_setup PACKAGE...   needs 2 CPUs; installs the Debian packages missing (no service
#                            starts), builds dnstransport if needed, raises the socket buffer
#                            limits for the run, makes $work (queries, a certificate); all
#                            undone at exit
#   start_target NAME / stop_target
# $bin is the generator (DNSTRANSPORT_BIN, or this checkout's build), $server_bin this
# checkout's build (the built-in responder; DNSTRANSPORT=PATH: that binary in its place, as
# tools/docs/measure sets it).

if [ "$(nproc)" -lt 2 ]; then
  echo "needs 2 CPUs: the target is pinned to CPU 1 and the generator to CPU 0" >&2
  exit 2
fi
server_bin=${DNSTRANSPORT:-build/tools/dnstransport/dnstransport}
bin=${DNSTRANSPORT_BIN:-$server_bin}

remove_policy=   # the policy-rc.d written here (no service starts while installing), removed at exit
restore_sysctl=()
target_pid=
work=
cleanup() {
  [ -n "$target_pid" ] && kill "$target_pid" 2>/dev/null && wait "$target_pid" 2>/dev/null
  if [ -n "$work" ]; then
    [ -n "${PEERS_KEEP:-}" ] && echo "kept $work" >&2 || rm -rf "$work"
  fi
  for setting in "${restore_sysctl[@]}"; do sysctl -q -w "$setting" || true; done
  [ -n "$remove_policy" ] && rm -f /usr/sbin/policy-rc.d
  return 0
}

bench_setup() {  # PACKAGE...
  trap cleanup EXIT
  local missing=() p key old
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing ${missing[*]}"
    [ -e /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; remove_policy=1; }
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
  [ -x "$server_bin" ] || [ -n "${DNSTRANSPORT:-}" ] || ./tools/dev build

  # The 4 MiB socket buffers asked for below (dnsdist's setUDPSocketBufferSizes, the clients'
  # own) are capped by net.core.rmem_max / wmem_max, 208 KiB on a stock kernel, where dnsdist
  # overflows and both tools lose queries: raised to 4 MiB for the run where lower, restored at
  # exit.
  for key in net.core.rmem_max net.core.wmem_max; do
    old=$(sysctl -n "$key")
    if [ "$old" -lt 4194304 ]; then
      if sysctl -q -w "$key=4194304"; then
        restore_sysctl+=("$key=$old")
        echo "== $key raised from $old to 4194304 for the run"
      else
        echo "warning: could not raise $key ($old): UDP targets may drop queries" >&2
      fi
    fi
  done

  work=$(mktemp -d)
  "$bin" queries --format wire --out "$work/queries.raw" >/dev/null
  "$bin" queries --format text --out "$work/queries.txt" >/dev/null
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 7 \
    -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:localhost \
    -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
}

udp_port=5391
tls_port=8591
doh_port=8592
doq_port=8591  # UDP, beside DoT's TCP port: the built-in responder only

# unbound answers from local data only: A and AAAA for every name of the query set (as
# dnsdist's spoofed answers), NODATA for the other types; nothing is ever sent upstream.
write_unbound_conf() {
  {
    cat <<EOF
server:
  directory: "$work"
  chroot: ""
  username: ""
  use-syslog: no
  logfile: ""
  verbosity: 1
  num-threads: 1
  so-reuseport: no
  so-rcvbuf: 4m
  so-sndbuf: 4m
  do-ip4: yes
  do-ip6: no
  do-udp: yes
  do-tcp: yes
  port: $udp_port
  interface: 127.0.0.1@$udp_port
  interface: 127.0.0.1@$tls_port
  interface: 127.0.0.1@$doh_port
  tls-port: $tls_port
  https-port: $doh_port
  http-endpoint: "/dns-query"
  tls-service-key: "$work/key.pem"
  tls-service-pem: "$work/cert.pem"
  incoming-num-tcp: 1000
  access-control: 127.0.0.0/8 allow
  module-config: "iterator"
  local-zone: "." static
EOF
    awk '!seen[$1]++ {
      printf "  local-data: \"%s 300 IN A 192.0.2.1\"\n", $1
      printf "  local-data: \"%s 300 IN AAAA 2001:db8::1\"\n", $1
    }' "$work/queries.txt"
    cat <<EOF
remote-control:
  control-enable: no
EOF
  } >"$work/unbound.conf"
}

start_target() {  # builtin | dnsdist | unbound
  # Something already answering there would be measured in the target's place.
  if "$bin" run --server 127.0.0.1:$udp_port --count 1 --timeout 0.2 --quiet 2>/dev/null; then
    echo "a server already answers on 127.0.0.1:$udp_port; stop it first" >&2
    return 1
  fi
  case $1 in
    builtin)
      taskset -c 1 "$server_bin" serve --listen 127.0.0.1:$udp_port --tcp 127.0.0.1:$udp_port \
        --tls 127.0.0.1:$tls_port --doh 127.0.0.1:$doh_port --doq 127.0.0.1:$doq_port \
        --cert "$work/cert.pem" \
        --key "$work/key.pem" --cpus 1 \
        >"$work/target.log" 2>&1 &
      ;;
    dnsdist)
      cat >"$work/dnsdist.conf" <<EOF
setSecurityPollSuffix('')
setLocal('127.0.0.1:$udp_port')
addTLSLocal('127.0.0.1:$tls_port', '$work/cert.pem', '$work/key.pem', { provider = 'openssl' })
addDOHLocal('127.0.0.1:$doh_port', '$work/cert.pem', '$work/key.pem', '/dns-query')
setMaxTCPConnectionsPerClient(0)
setMaxTCPQueuedConnections(100000)
-- 4 MiB socket buffers, as unbound's so-rcvbuf/so-sndbuf: with the default 208 KiB the 800
-- queries in flight overflowed dnsdist's receive buffer, and both tools lost queries.
setUDPSocketBufferSizes(4194304, 4194304)
-- A and AAAA get addresses; every other type an empty NOERROR answer, made here too.
addAction(OrRule({ QTypeRule(DNSQType.A), QTypeRule(DNSQType.AAAA) }), SpoofAction({ '192.0.2.1', '2001:db8::1' }))
addAction(AllRule(), RCodeAction(DNSRCode.NOERROR))
EOF
      taskset -c 1 dnsdist --supervised --disable-syslog -C "$work/dnsdist.conf" \
        >"$work/target.log" 2>&1 &
      ;;
    unbound)
      write_unbound_conf
      taskset -c 1 unbound -d -p -c "$work/unbound.conf" >"$work/target.log" 2>&1 &
      ;;
  esac
  target_pid=$!
  for _ in $(seq 50); do
    if "$bin" run --server 127.0.0.1:$udp_port --count 1 --timeout 0.2 --quiet 2>/dev/null; then
      return 0
    fi
    sleep 0.2
  done
  echo "target $1 did not answer; its output:" >&2
  cat "$work/target.log" >&2
  return 1
}

stop_target() {
  kill "$target_pid" 2>/dev/null || true
  wait "$target_pid" 2>/dev/null || true
  target_pid=
}

