#!/usr/bin/env python3
"""Answer-data check for the interop suite, independent of dnstransport.

Asks a server for every record of the test zone over one transport (udp, tcp, tls or doh)
and compares the answer RRset with the expected data; asks for names that do not exist and
expects NXDOMAIN. dnstransport counts rcodes but does not look at RDATA, so this is what
proves that the servers serve the zone the suite thinks they serve. DNS over HTTPS needs
HTTP/2, which Python's standard library does not speak: those questions are asked with
kdig (knot-dnsutils, +https, POST or GET by --doh-method) and its RFC 8427 JSON output is
read, so the DoH answer data is checked by a client independent of dnstransport too.

Records come from a tab-separated file: name, type, data (A, AAAA or TXT). Absent names
come from a query file ("name TYPE" per line). Prints one line per problem; exit 1 if any.
"""
import argparse
import ipaddress
import json
import random
import socket
import ssl
import struct
import subprocess
import sys

TYPES = {"A": 1, "AAAA": 28, "TXT": 16}
RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}


def encode_name(name: str) -> bytes:
    out = b""
    for label in name.rstrip(".").split("."):
        out += bytes([len(label)]) + label.encode("ascii")
    return out + b"\0"


def skip_name(msg: bytes, pos: int) -> int:
    while True:
        length = msg[pos]
        if length == 0:
            return pos + 1
        if length & 0xC0 == 0xC0:
            return pos + 2
        pos += 1 + length


def query(qid: int, name: str, qtype: int) -> bytes:
    header = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    return header + encode_name(name) + struct.pack("!HH", qtype, 1)


def parse(msg: bytes, qid: int, qtype: int):
    """Returns (rcode name, sorted list of answer data of qtype as text)."""
    rid, flags, qd, an, _, _ = struct.unpack("!HHHHHH", msg[:12])
    if rid != qid or not flags & 0x8000:
        raise ValueError(f"answer id {rid} / flags {flags:#x} do not match query id {qid}")
    pos = 12
    for _ in range(qd):
        pos = skip_name(msg, pos) + 4
    data = []
    for _ in range(an):
        pos = skip_name(msg, pos)
        rtype, _, _, rdlen = struct.unpack("!HHIH", msg[pos:pos + 10])
        rdata = msg[pos + 10:pos + 10 + rdlen]
        pos += 10 + rdlen
        if rtype == qtype:
            data.append(rdata_text(rtype, rdata))
    return RCODES.get(flags & 0xF, str(flags & 0xF)), sorted(data)


def rdata_text(rtype: int, rdata: bytes) -> str:
    if rtype in (1, 28):
        return str(ipaddress.ip_address(rdata))
    strings, i = [], 0  # TXT
    while i < len(rdata):
        strings.append(rdata[i + 1:i + 1 + rdata[i]].decode("ascii", "replace"))
        i += 1 + rdata[i]
    return "".join(strings)


def ask_kdig(args, name: str, qtype_name: str):
    """DoH through kdig: returns (rcode name, sorted answer data of qtype as text)."""
    cmd = [args.kdig, f"@{args.server}", "-p", str(args.port),
           f"+https={args.doh_path}", "+json", "+tls-hostname=" + args.sni,
           "+timeout=" + str(max(1, int(args.timeout))), "+retry=0", name, "-t", qtype_name]
    if args.doh_method == "get":
        cmd.insert(4, "+https-get")
    if args.ca_file:
        cmd.insert(4, "+tls-ca=" + args.ca_file)
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout + 5,
                             check=False)
    except subprocess.TimeoutExpired as e:
        raise OSError(f"kdig did not finish: {' '.join(cmd)}") from e
    try:
        msg = json.loads(run.stdout)
    except ValueError:
        msg = None
    if run.returncode != 0 or not isinstance(msg, dict) or "RCODE" not in msg:
        said = " ".join((run.stdout + run.stderr).split())[:300]
        raise OSError(f"kdig exited {run.returncode} without an answer: {said}")
    qtype = TYPES[qtype_name]
    data = [rdata_text(rr["TYPE"], bytes.fromhex(rr["RDATAHEX"]))
            for rr in msg.get("answerRRs", []) if rr.get("TYPE") == qtype]
    return RCODES.get(msg["RCODE"], str(msg["RCODE"])), sorted(data)


def exchange(args, wire: bytes) -> bytes:
    if args.transport == "udp":
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(args.timeout)
            s.sendto(wire, (args.server, args.port))
            return s.recv(65535)
    raw = socket.create_connection((args.server, args.port), timeout=args.timeout)
    if args.transport == "tls":
        ctx = ssl.create_default_context(cafile=args.ca_file)
        raw = ctx.wrap_socket(raw, server_hostname=args.sni)
    with raw as s:
        s.sendall(struct.pack("!H", len(wire)) + wire)
        buf = b""
        while len(buf) < 2 or len(buf) < 2 + struct.unpack("!H", buf[:2])[0]:
            chunk = s.recv(65535)
            if not chunk:
                raise ConnectionError("connection closed before the whole answer")
            buf += chunk
        return buf[2:2 + struct.unpack("!H", buf[:2])[0]]


def ask(args, name: str, qtype_name: str):
    qid = random.randrange(65536)
    qtype = TYPES[qtype_name]
    if args.transport == "doh":
        return ask_kdig(args, name, qtype_name)
    return parse(exchange(args, query(qid, name, qtype)), qid, qtype)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--server", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--transport", choices=["udp", "tcp", "tls", "doh"], default="udp")
    p.add_argument("--doh-method", choices=["post", "get"], default="post")
    p.add_argument("--doh-path", default="/dns-query")
    p.add_argument("--kdig", default="kdig", help="doh: the kdig binary (knot-dnsutils)")
    p.add_argument("--records", required=True)
    p.add_argument("--absent", required=True)
    p.add_argument("--ca-file")
    p.add_argument("--sni", default="interop.test")
    p.add_argument("--timeout", type=float, default=2.0)
    args = p.parse_args()

    expected = {}
    with open(args.records, encoding="utf-8") as f:
        for line in f:
            name, qtype, data = line.rstrip("\n").split("\t")
            if qtype == "AAAA":
                data = str(ipaddress.ip_address(data))
            expected.setdefault((name, qtype), []).append(data)
    absent = []
    with open(args.absent, encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if fields:
                absent.append((fields[0], fields[1] if len(fields) > 1 else "A"))

    problems = []
    for (name, qtype), want in expected.items():
        try:
            rcode, got = ask(args, name, qtype)
        except (OSError, ValueError) as e:
            problems.append(f"{name} {qtype}: {e}")
            continue
        if rcode != "NOERROR" or got != sorted(want):
            problems.append(f"{name} {qtype}: got {rcode} {got}, want NOERROR {sorted(want)}")
    for name, qtype in absent:
        try:
            rcode, got = ask(args, name, qtype)
        except (OSError, ValueError) as e:
            problems.append(f"{name} {qtype}: {e}")
            continue
        if rcode != "NXDOMAIN" or got:
            problems.append(f"{name} {qtype}: got {rcode} {got}, want NXDOMAIN")
    for line in problems:
        print(line)
    checked = len(expected) + len(absent)
    if not problems:
        print(f"{checked} names checked, answer data as expected")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
