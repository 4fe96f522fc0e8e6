# shellcheck shell=bash
# Sourced by ci-hook: real servers behind the PROXY protocol (issue #39). A server is started
# again, trusting PROXY version 2 headers from loopback, and `dnstransport run
# --proxy-protocol v2` loads it from four client addresses of 10.9.0.0/29 over UDP, TCP and,
# where the server reads headers there, DoT: every query must be answered, and where the
# server logs its clients (unbound's log-queries, dnsdist's LogAction) every one of the four
# addresses must be in its log, and no query from 127.0.0.1. A run without headers against
# the same listener must then get nothing answered where the server requires them.
#   unbound   proxy-protocol-port on its UDP/TCP and DoT ports (unbound 1.13 and later), the
#             claimed addresses allowed by its access-control; over DoT it reads the header
#             inside TLS (--proxy-inside-tls)
#   dnsdist   setProxyProtocolACL for 127.0.0.0/8 (dnsdist 1.5 and later); over DoT it reads
#             the header inside TLS too (outside only from 1.9, if asked)
#   kresd     net.proxy_allowed for 127.0.0.0/8 (Knot Resolver 5.5 and later): it takes
#             headers from there but does not require them, and logs no clients. Not over
#             DoT: Debian's 5.6 fails an assertion (tls_process_input_data, daemon/tls.c) on
#             a DoT connection that starts with a header, and one sent inside TLS is not read.
# Uses ci-hook's row, run_case, work, DNSTRANSPORT, rate, duration, client_cpu.

PROXY_SERVERS=(unbound dnsdist kresd)

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
  esac
}

# proxy_log SERVER DIR: where the server wrote its clients' addresses (empty: nowhere).
proxy_log() {
  case $1 in
    unbound) echo "$2/server.log" ;;
    dnsdist) echo "$2/queries.log" ;;
    *) echo "" ;;
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
  [ -z "$log" ] || from=$(($(stat -c %s "$log" 2>/dev/null || echo 0) + 1))
  timeout $((duration + 20)) "$DNSTRANSPORT" "${args[@]}" >"$dir/$name.err" 2>&1 || status=$?
  if [ ! -s "$dir/$name.json" ]; then
    line=$'-\t-\t-\t'"FAIL: dnstransport exited $status without a result: $(tail -n 3 "$dir/$name.err" | tr '\n' ' ')"
  else
    line=$(python3 "$here/check_run.py" "$dir/$name.json" --rcode NOERROR) || true
    [ "$status" -eq 0 ] || [[ $line != *$'\t'ok ]] || line="${line%ok}FAIL: dnstransport exited $status"
  fi
  if [ -n "$log" ] && [[ $line == *$'\t'ok ]]; then
    # Both servers log a query as it arrives, before its answer; at most 5 s for a log
    # that is written late all the same.
    local deadline=$((SECONDS + 5))
    while :; do
      tail -c +"$from" "$log" >"$logged" 2>/dev/null || true
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
  local server=$1 port=$2 tls=$3 dir=$work/$1-proxy transport
  [[ " ${PROXY_SERVERS[*]} " == *" $server "* ]] || return 0
  echo " - $server behind the PROXY protocol"
  mkdir -p "$dir"
  interop_write_config "$server" "$dir" "$port" "$tls"
  proxy_config "$server" "$dir" "$port" "$tls"
  interop_start "$server_cpu" "$dir/server.log"
  if ! interop_wait_ready "$port" tcp "$work/present.txt" 20 --proxy-protocol v2 \
    --proxy-source 10.9.0.6 >"$dir/ready.log" 2>&1; then
    row "$server" "proxy" "-" "-" "-" "-" "-" "-" \
      "FAIL: did not answer PROXY queries: $(tail -n 2 "$dir/ready.log" | tr '\n' ' ')"
    sed 's/^/   | /' "$dir/server.log" | tail -n 10
    stop_server
    return 0
  fi
  for transport in udp tcp tls; do
    if [ "$transport" = tls ] && [ "$server" = kresd ]; then
      row "$server" "tls+proxy" "-" "-" "-" "-" "-" "-" \
        "not supported by the server: Knot Resolver 5.6 fails an assertion on DoT with a PROXY header"
      continue
    fi
    proxy_case "$server" "$([ "$transport" = tls ] && echo "$tls" || echo "$port")" "$transport"
  done
  [ "$server" = kresd ] || proxy_refused "$server" "$port"
  stop_server
}
