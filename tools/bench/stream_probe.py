#!/usr/bin/env python3
"""Observes what limits a DNS server puts on TCP/TLS clients, for tools/bench/probe-stream-limits.

  idle      seconds until the server closes a connection that answered one query and then
            stays idle (capped by --idle-cap)
  conns     of N connections opened at once, each sending one query: how many are answered,
            closed or reset by the server, or left silent
  pipeline  K queries written at once on one connection: how many answers, and whether
            they came back in another order than asked

Prints one JSON object. Uses the query encoder of tests/interop/answer_check.py.
"""
import argparse
import json
import os
import selectors
import socket
import ssl
import struct
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "interop"))
from answer_check import query  # noqa: E402

NAME = "a.interop.test."


def connect(args, timeout):
    raw = socket.create_connection((args.server, args.port), timeout=timeout)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if args.transport == "tls":
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        raw = ctx.wrap_socket(raw, server_hostname="interop.test")
    return raw


def framed(qid):
    wire = query(qid, NAME, 1)
    return struct.pack("!H", len(wire)) + wire


def read_answers(sock, count, deadline):
    """Reads up to count framed answers; returns (ids in arrival order, how it ended)."""
    buf, ids = b"", []
    while len(ids) < count:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65535)
        except (socket.timeout, TimeoutError):
            return ids, "timeout"
        except (ConnectionResetError, ssl.SSLError, OSError) as e:
            return ids, f"reset ({type(e).__name__})"
        if not chunk:
            return ids, "closed"
        buf += chunk
        while len(buf) >= 2 and len(buf) >= 2 + struct.unpack("!H", buf[:2])[0]:
            n = struct.unpack("!H", buf[:2])[0]
            ids.append(struct.unpack("!H", buf[2:4])[0])
            buf = buf[2 + n:]
    return ids, "ok"


def probe_idle(args):
    sock = connect(args, 5)
    start = time.monotonic()
    sock.sendall(framed(1))
    ids, how = read_answers(sock, 1, start + 5)
    if how != "ok":
        return {"error": f"first query not answered: {how}"}
    answered = time.monotonic()
    _, how = read_answers(sock, 1, answered + args.idle_cap)
    sock.close()
    if how == "timeout":
        return {"closed_after_seconds": None, "note": f"still open after {args.idle_cap} s"}
    return {"closed_after_seconds": round(time.monotonic() - answered, 2), "how": how}


def probe_conns(args):
    """All connections are set up and driven at once (non-blocking), within 3 s."""
    ctx = None
    if args.transport == "tls":
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    result = {"opened": 0, "connect_or_handshake_failed": 0, "handshake_pending": 0,
              "answered": 0, "closed": 0, "reset": 0, "silent": 0}
    sel = selectors.DefaultSelector()
    for i in range(args.conns):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.connect_ex((args.server, args.port))
        # state: "connecting", "handshake", "send", "waiting"
        sel.register(s, selectors.EVENT_WRITE, {"state": "connecting", "id": i + 1})
    deadline = time.monotonic() + 3
    while sel.get_map() and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=0.1):
            s, st = key.fileobj, key.data
            try:
                if st["state"] == "connecting":
                    err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err:
                        raise ConnectionRefusedError(err)
                    result["opened"] += 1
                    st["state"] = "send"
                    if ctx:
                        sel.unregister(s)
                        s = ctx.wrap_socket(s, server_hostname="interop.test",
                                            do_handshake_on_connect=False)
                        sel.register(s, selectors.EVENT_WRITE, st)
                        st["state"] = "handshake"
                if st["state"] == "handshake":
                    try:
                        s.do_handshake()
                        st["state"] = "send"
                    except ssl.SSLWantReadError:
                        sel.modify(s, selectors.EVENT_READ, st)
                        continue
                    except ssl.SSLWantWriteError:
                        sel.modify(s, selectors.EVENT_WRITE, st)
                        continue
                if st["state"] == "send":
                    s.send(framed(st["id"]))
                    st["state"] = "waiting"
                    sel.modify(s, selectors.EVENT_READ, st)
                    continue
                data = s.recv(65535)
                result["answered" if data else "closed"] += 1
            except (ssl.SSLWantReadError, BlockingIOError):
                continue
            except (ConnectionResetError, ConnectionRefusedError, ssl.SSLError, OSError) as e:
                if st["state"] in ("connecting", "handshake"):
                    result["connect_or_handshake_failed"] += 1
                else:
                    result["reset"] += 1
            sel.unregister(s)
            s.close()
    for key in list(sel.get_map().values()):
        st = key.data["state"]
        result["handshake_pending" if st in ("connecting", "handshake") else "silent"] += 1
        key.fileobj.close()
    return result


def probe_pipeline(args):
    sock = connect(args, 5)
    sock.sendall(b"".join(framed(i + 1) for i in range(args.pipeline)))
    ids, how = read_answers(sock, args.pipeline, time.monotonic() + 5)
    sock.close()
    return {"sent": args.pipeline, "answered": len(ids), "ended": how,
            "in_order": ids == sorted(ids)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--server", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--transport", choices=["tcp", "tls"], default="tcp")
    p.add_argument("--idle-cap", type=float, default=35)
    p.add_argument("--conns", type=int, default=300)
    p.add_argument("--pipeline", type=int, default=200)
    p.add_argument("--what", default="pipeline,conns,idle")
    args = p.parse_args()
    out = {}
    for what in args.what.split(","):
        out[what] = {"pipeline": probe_pipeline, "conns": probe_conns, "idle": probe_idle}[what](args)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
