# shellcheck shell=bash
# Sourced by ci-hook: real servers behind the PROXY protocol (issue #39). A server is started
# again, trusting PROXY version 2 headers from loopback, and `dnstransport run
# --proxy-protocol v2` loads it from four client addresses of 10.9.0.0/29 over UDP, TCP and,
# where the server reads headers there, DoT: every query must be answered, and where the
# server logs its clients (unbound's log-queries, dnsdist's LogAction, knotd's mod-dnstap,
# the recursor's quiet=no) every one of the four addresses must be in its log, and no query
# from 127.0.0.1. A run without headers against the same listener must then get nothing
# answered where the server requires them.
#   unbound   proxy-protocol-port on its UDP/TCP and DoT ports (unbound 1.13 and later), the
#             claimed addresses allowed by its access-control; over DoT it reads the header
#             inside TLS (--proxy-inside-tls)
#   dnsdist   setProxyProtocolACL for 127.0.0.0/8 (dnsdist 1.5 and later); over DoT it reads
#             the header inside TLS too (outside only from 1.9, if asked)
#   kresd     net.proxy_allowed for 127.0.0.0/8 (Knot Resolver 5.5 and later): it takes
#             headers from there but does not require them, and logs no clients. Not over
#             DoT: Debian's 5.6 fails an assertion (tls_process_input_data, daemon/tls.c) on
#             a DoT connection that starts with a header, and one sent inside TLS is not read.
#   knot      proxy-allowlist for 127.0.0.0/8 (Knot DNS 3.2 and later): over UDP only, taking
#             headers without requiring them; a header on TCP is read as a DNS message
#             length and nothing is answered (knot.conf(5): "TCP is not supported"), and 3.2
#             has no DoT. Its clients are the addresses of mod-dnstap's answers, read with
#             kdig -G (needs knot-module-dnstap and kdig).
#   pdns_recursor  proxy-protocol-from for 127.0.0.0/8 (PowerDNS Recursor 4.4 and later) on
#             UDP and TCP, the claimed addresses allowed by its allow-from; 4.8 has no DoT
#             listener. quiet=no logs each question's client, the packet cache turned off.
# Uses ci-hook's row, run_case, work, DNSTRANSPORT, rate, duration, client_cpu, in_ci,
# KDIG, kdig_reason.

PROXY_SERVERS=(unbound dnsdist kresd knot pdns_recursor)

# proxy_config SERVER DIR PORT TLS_PORT: rewrites the server's configuration in DIR (written
# by interop_write_config) to require headers from loopback and log its clients.
proxy_config() {
  local server=$1 dir=$2 port=$3 tls=$4
  case $server in
    unbound)
      # Its access control applies to the claimed addresses: they must be allowed too.
      sed -i "s|^server:\$|server:\n  proxy-protocol-port: $port\n  proxy-protocol-port: $tls\n  log-queries: yes\n  access-control: 10.9.0.0/29 allow|" \
        "$dir/unbound.conf"
      ;;
    dnsdist)
      sed -i "s|^setSecurityPollSuffix('')\$|setSecurityPollSuffix('')\nsetProxyProtocolACL({ '127.0.0.0/8' })\naddAction(AllRule(), LogAction('$dir/queries.log', false, true, false))|" \
        "$dir/dnsdist.conf"
      ;;
    kresd)
      # All of loopback: over TCP the clients spread over 127.0.0.1 to 127.0.0.16.
      printf "net.proxy_allowed('127.0.0.0/8')\n" >>"$dir/kresd.conf"
      ;;
    knot)
      # knotd logs no queries; mod-dnstap (a module of its own, knot-module-dnstap) writes
      # every answer with the address it went to, the claimed one, and kdig -G reads the file.
      # Answers only: kdig prints no dnstap query messages.
      sed -i -e "s|^server:\$|server:\n  proxy-allowlist: 127.0.0.0/8|" \
        -e "s|^zone:\$|mod-dnstap:\n  - id: clients\n    sink: \"$dir/answers.tap\"\n    log-queries: off\n    log-responses: on\nzone:|" \
        -e "s|^  - domain: .*|&\n    module: mod-dnstap/clients|" "$dir/knot.conf"
      ;;
    pdns_recursor)
      # Its allow-from applies to the claimed addresses. quiet=no logs each question with its
      # client; the packet cache answers before that log, so it is turned off here: a client
      # that only asked what another had asked would not be logged at all.
      sed -i "s|^allow-from=.*|allow-from=127.0.0.0/8, 10.9.0.0/29|" "$dir/recursor.conf"
      printf 'proxy-protocol-from=127.0.0.0/8\nquiet=no\ndisable-packetcache=yes\n' >>"$dir/recursor.conf"
      ;;
  esac
}

# proxy_missing_reason SERVER: why the server's PROXY cases cannot run here (empty: they can).
proxy_missing_reason() {
  [ "$1" = knot ] || return 0
  if ! dpkg-query -W -f='${Status}' knot-module-dnstap 2>/dev/null | grep -q "install ok installed"; then
    echo "Debian package knot-module-dnstap is not installed (knotd's log of its clients; tools/packages/optional-servers.txt)"
  elif [ -n "$kdig_reason" ]; then
    echo "$kdig_reason: it reads knotd's log of its clients"
  fi
}

# proxy_unsupported SERVER TRANSPORT: why the server reads no PROXY header over TRANSPORT
# (empty: it does).
proxy_unsupported() {
  case $1/$2 in
    kresd/tls) echo "Knot Resolver 5.6 fails an assertion on DoT with a PROXY header" ;;
    knot/tcp) echo "Knot DNS 3.2 reads PROXY v2 headers over UDP only (knot.conf(5), proxy-allowlist: TCP is not supported)" ;;
    knot/tls) echo "Knot DNS 3.2 has no DoT listener" ;;
    pdns_recursor/tls) echo "PowerDNS Recursor 4.8 has no DoT listener" ;;
  esac
}

# proxy_log SERVER DIR: where the server wrote its clients' addresses (empty: nowhere).
proxy_log() {
  case $1 in
    unbound) echo "$2/server.log" ;;
    dnsdist) echo "$2/queries.log" ;;
    knot) echo "$2/answers.tap" ;;
    pdns_recursor) echo "$2/server.log" ;;
    *) echo "" ;;
  esac
}

# proxy_log_clients SERVER LOG: the server's log as text in which the clients' addresses are
# found, with no other address in it (the answers' data and the proxies' own addresses left
# out). knotd's is a dnstap file, written in blocks: a block still being written is not read.
proxy_log_clients() {
  case $1 in
    knot)
      { "$KDIG" -G "$2" 2>/dev/null || true; } | sed -n 's/^;; To \(.*\)@[0-9]*(.*$/\1/p'
      ;;
    pdns_recursor)
      # remote="10.9.0.1:1024 (proxied by 127.0.0.1:40000)": the client before the proxy.
      sed -n 's/^.*msg="Question".* remote="\([^" ]*\).*$/\1/p' "$2" 2>/dev/null || true
      ;;
    *) cat "$2" 2>/dev/null || true ;;
  esac
}

# proxy_case SERVER PORT TRANSPORT: a run whose four clients claim 10.9.0.1 to 10.9.0.4,
# every query answered, the addresses in what the server logged during the run.
proxy_case() {
  local server=$1 port=$2 transport=$3 dir=$work/$server-proxy log address missing="" from=0
  local name="$server-proxy-$transport"
  local args=(run --server "127.0.0.1:$port" --transport "$transport" --queries
    "$work/present.txt" --clients 4 --outstanding 5 --rate "$rate" --duration "$duration"
    --timeout 1 --cpus "$client_cpu" --quiet --json "$dir/$name.json" --proxy-protocol v2
    --proxy-source 10.9.0.0/29)
  [ "$transport" != tls ] || args+=(--verify --ca-file "$INTEROP_CERT" --sni interop.test)
  [ "$transport" != tls ] || args+=(--proxy-inside-tls)
  local status=0 line logged="$dir/$name.logged"
  log=$(proxy_log "$server" "$dir")
  [ -z "$log" ] || from=$(($(proxy_log_clients "$server" "$log" | wc -l) + 1))
  timeout $((duration + 20)) "$DNSTRANSPORT" "${args[@]}" >"$dir/$name.err" 2>&1 || status=$?
  if [ ! -s "$dir/$name.json" ]; then
    line=$'-\t-\t-\t'"FAIL: dnstransport exited $status without a result: $(tail -n 3 "$dir/$name.err" | tr '\n' ' ')"
  else
    line=$(python3 "$here/check_run.py" "$dir/$name.json" --rcode NOERROR) || true
    [ "$status" -eq 0 ] || [[ $line != *$'\t'ok ]] || line="${line%ok}FAIL: dnstransport exited $status"
  fi
  if [ -n "$log" ] && [[ $line == *$'\t'ok ]]; then
    # unbound, dnsdist and the recursor log a query as it arrives, before its answer; knotd's
    # dnstap file is written a block at a time, by a thread of its own. At most 5 s for a log
    # that is written late.
    local deadline=$((SECONDS + 5))
    while :; do
      proxy_log_clients "$server" "$log" | tail -n +"$from" >"$logged"
      missing=""
      for address in 10.9.0.1 10.9.0.2 10.9.0.3 10.9.0.4; do
        grep -q -E "(^|[^0-9])${address//./\\.}([^0-9]|\$)" "$logged" || missing+=" $address"
      done
      [ -n "$missing" ] && [ $SECONDS -lt $deadline ] || break
      sleep 0.1
    done
    if [ -n "$missing" ]; then
      line="${line%ok}FAIL: the server's log ($log) has no query from$missing"
    elif grep -q -E '(^|[^0-9])127\.0\.0\.1([^0-9]|$)' "$logged"; then
      line="${line%ok}FAIL: the server's log has queries from 127.0.0.1: a header was not read"
    fi
  fi
  row "$server" "$transport+proxy" "${transport/tls/openssl}" "-" present "$line"
  echo "   $transport+proxy: ${line##*$'\t'}${log:+ (clients checked in the log of the server)}"
}

# proxy_refused SERVER PORT: a run without headers gets nothing answered.
proxy_refused() {
  local server=$1 port=$2 dir=$work/$server-proxy answered
  timeout 20 "$DNSTRANSPORT" run --server "127.0.0.1:$port" --transport tcp --count 20 \
    --timeout 0.5 --quiet --json "$dir/no-header.json" >"$dir/no-header.err" 2>&1 || true
  answered=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["responses_received"])' \
    "$dir/no-header.json" 2>/dev/null || echo "?")
  if [ "$answered" = 0 ]; then
    row "$server" "tcp-no-header" "-" "-" present "-" "-" "-" "ok"
    echo "   tcp without a header: nothing answered, as required"
  else
    row "$server" "tcp-no-header" "-" "-" present "-" "-" "-" \
      "FAIL: $answered answers without a PROXY header (the server does not require one)"
  fi
}

# proxy_protocol_cases SERVER PORT TLS_PORT: the server again, behind the PROXY protocol.
proxy_protocol_cases() {
  local server=$1 port=$2 tls=$3 dir=$work/$1-proxy transport reason ready
  [[ " ${PROXY_SERVERS[*]} " == *" $server "* ]] || return 0
  echo " - $server behind the PROXY protocol"
  reason=$(proxy_missing_reason "$server")
  if [ -n "$reason" ]; then
    if [ "$in_ci" = 1 ]; then
      row "$server" "proxy" "-" "-" "-" "-" "-" "-" "FAIL: $reason (CI=true: nothing may be skipped)"
    else
      echo "   SKIP: $reason"
      row "$server" "proxy" "-" "-" "-" "-" "-" "-" "SKIP: $reason"
    fi
    return 0
  fi
  mkdir -p "$dir"
  interop_write_config "$server" "$dir" "$port" "$tls"
  proxy_config "$server" "$dir" "$port" "$tls"
  interop_start "$server_cpu" "$dir/server.log"
  # Ready when a query with a header is answered: over TCP, or UDP where only UDP reads them.
  ready=tcp
  [ -z "$(proxy_unsupported "$server" tcp)" ] || ready=udp
  if ! interop_wait_ready "$port" "$ready" "$work/present.txt" 20 --proxy-protocol v2 \
    --proxy-source 10.9.0.6 >"$dir/ready.log" 2>&1; then
    row "$server" "proxy" "-" "-" "-" "-" "-" "-" \
      "FAIL: did not answer PROXY queries: $(tail -n 2 "$dir/ready.log" | tr '\n' ' ')"
    sed 's/^/   | /' "$dir/server.log" | tail -n 10
    stop_server
    return 0
  fi
  for transport in udp tcp tls; do
    reason=$(proxy_unsupported "$server" "$transport")
    if [ -n "$reason" ]; then
      row "$server" "$transport+proxy" "-" "-" "-" "-" "-" "-" "not supported by the server: $reason"
      echo "   $transport+proxy: not supported by the server: $reason"
      continue
    fi
    proxy_case "$server" "$([ "$transport" = tls ] && echo "$tls" || echo "$port")" "$transport"
  done
  # kresd and knotd take headers from the allowed addresses without requiring them (and knotd
  # reads none over TCP): a query without one is answered as coming from the proxy.
  case $server in
    kresd | knot) ;;
    *) proxy_refused "$server" "$port" ;;
  esac
  stop_server
}
