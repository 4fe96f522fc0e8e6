#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora into tests/fuzz/corpus/<target>/ (run by hand; the
files are committed). A handful of small, valid or nearly valid inputs per target: the
fuzzer finds its way from there. The TLS target's seeds (tests/fuzz/corpus/tls) are real
handshake bytes, written by the target itself, and so are the DoQ client's (its packet lists):
  FUZZ_TLS_WRITE_SEEDS=tests/fuzz/corpus/tls build-fuzz/tests/fuzz/fuzz_tls
  FUZZ_DOQ_CLIENT_WRITE_SEEDS=tests/fuzz/corpus/doq_client build-fuzz/tests/fuzz/fuzz_doq_client"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def name(text):
    out = b""
    for label in text.rstrip(".").split("."):
        if label:
            out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def query(qname, qtype=1, qid=0x1234, opt=False):
    header = struct.pack(">HBBHHHH", qid, 0x01, 0, 1, 0, 0, 1 if opt else 0)
    body = name(qname) + struct.pack(">HH", qtype, 1)
    if opt:
        body += b"\0" + struct.pack(">HHIH", 41, 1232, 0, 0)
    return header + body


def response(q, answers=b"", ancount=0, flags=0x8180):
    qid, _, qd, _, ns, ar = struct.unpack(">HHHHHH", q[:12])
    return struct.pack(">HHHHHH", qid, flags, qd, ancount, ns, ar) + q[12:] + answers


A_RECORD = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 300, 4) + bytes([192, 0, 2, 1])
LOOP = b"\x01x\xc0\x21" + struct.pack(">HHIH", 1, 1, 300, 4) + bytes(4)


def frames(*messages):
    return b"".join(struct.pack(">H", len(m)) + m for m in messages)


def write(target, files):
    directory = os.path.join(HERE, "corpus", target)
    os.makedirs(directory, exist_ok=True)
    for file_name, data in files.items():
        with open(os.path.join(directory, file_name), "wb") as f:
            f.write(data)


q = query("www.example.com")
q_opt = query("Mixed.Case.Example", qtype=28, opt=True)
ok = response(q, A_RECORD, 1)
write("check_response", {
    "answer": ok,
    "answer_edns": response(q_opt, A_RECORD, 1),
    "compression_loop": response(q, LOOP, 1),
    "truncated": response(q, flags=0x8380),
    "split_query_response": bytes([len(q)]) + q + ok,
    # Found by fuzzing (a flaw in the harness's own check): a name pointing into the header.
    "name_into_header": struct.pack(">HHHHHH", 0x1234, 0x6C9B, 1, 0, 0, 0) + b"\3www\xc0\x01"
    + struct.pack(">HH", 1, 1),
})
write("frame_reader", {
    "one_byte_chunks": b"\x00\x01" + frames(q, ok, q_opt),
    "random_chunks": b"\x06\x01" + frames(ok, ok, q),
    "zero_length": b"\x03\x01" + frames(q) + b"\x00\x00" + frames(ok),
    "partial": b"\x01\x10" + frames(q) + b"\x01\x00abc",
})
write("query_parsers", {
    "text": b"\x01www.example.com A\nexample.org AAAA ; comment\n\n; only a comment\n",
    "text_escapes": b"\x07a\\.b.example. TXT\n\\065\\066.example MX\nexample.net TYPE65\r\n",
    "wire": b"\x01" + frames(q, q_opt),
    "wire_truncated": b"\x00" + frames(q)[:-3],
})
write("encode_name", {
    "plain": b"www.example.com",
    "root": b".",
    "escapes": b"a\\.b\\032c.\\255\\000.example.",
    "long_label": b"x" * 63 + b".example",
    "empty_label": b"a..b",
})
write("doq_stream", {
    "whole_answer": b"\x03\x00" + frames(ok),
    "one_byte_chunks_fin_alone": b"\x00\x01" + frames(q),
    "random_chunks": b"\x06\x00" + frames(q_opt),
    "length_lies_long": b"\x03\x00" + struct.pack(">H", len(ok) + 1) + ok,
    "overrun": b"\x02\x00" + frames(ok) + b"\x00",
    "too_short": b"\x03\x01\x05",
})


def ip_udp(src, dst, sport, dport, payload):
    udp = struct.pack(">HHHH", sport, dport, 8 + len(payload), 0) + payload
    return struct.pack(">BBHIBBH4s4s", 0x45, 0, 20 + len(udp), 0x00014000, 64, 17, 0,
                       bytes(src), bytes(dst)) + udp


def ip6_tcp(src, dst, sport, dport, seq, payload):
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq, 1, 0x50, 0x18, 65535, 0, 0) + payload
    return struct.pack(">IHBB16s16s", 0x60000000, len(tcp), 6, 64, bytes(src), bytes(dst)) + tcp


def ether(packet, ethertype=0x0800, vlan=None):
    head = bytes([2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1])
    if vlan is not None:
        return head + struct.pack(">HHH", 0x8100, vlan, ethertype) + packet
    return head + struct.pack(">H", ethertype) + packet


def pcap(link, *frames_, magic=0xA1B2C3D4):
    out = struct.pack("<IHHiIII", magic, 2, 4, 0, 0, 65535, link)
    for i, f in enumerate(frames_):
        out += struct.pack("<IIII", 1700000000, i * 1000, len(f), len(f)) + f
    return out


def pcapng(link, *frames_):
    out = struct.pack("<IIIHHqI", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1, 28)
    out += struct.pack("<IIHHII", 1, 20, link, 0, 65535, 20)
    for f in frames_:
        padded = f + bytes(-len(f) % 4)
        total = 32 + len(padded)
        out += struct.pack("<IIIIIII", 6, total, 0, 0, 1000, len(f), len(f)) + padded
        out += struct.pack("<I", total)
    return out


C4, S4 = [192, 0, 2, 1], [192, 0, 2, 53]
C6, S6 = [0x20, 1, 0xd, 0xb8] + [0] * 11 + [1], [0x20, 1, 0xd, 0xb8] + [0] * 11 + [0x53]
udp_query = ip_udp(C4, S4, 40000, 53, q)
write("pcap", {
    "ethernet_udp": pcap(1, ether(udp_query), ether(ip_udp(S4, C4, 53, 40000, ok))),
    "vlan_tcp_ipv6": pcap(1, ether(ip6_tcp(C6, S6, 50000, 53, 7, frames(q, q_opt)[:20]), 0x86DD,
                                   100),
                          ether(ip6_tcp(C6, S6, 50000, 53, 27, frames(q, q_opt)[20:]), 0x86DD,
                                100)),
    "raw_nanoseconds": pcap(101, udp_query, magic=0xA1B23C4D),
    "pcapng_sll": pcapng(113, struct.pack(">HHH8sH", 4, 772, 6, bytes(8), 0x0800) + udp_query),
})


write("responder", {
    "a": b"\x00" + q,
    "aaaa_edns": b"\x00" + q_opt,
    "keepalive_padding": b"\x06" + query("pad.example", opt=True)[:-2]
    + struct.pack(">H", 8) + struct.pack(">HH", 11, 0) + struct.pack(">HH", 12, 0),
    "echo": b"\x01" + q,
    "formerr_two_questions": b"\x00" + q[:4] + b"\x00\x02" + q[6:],
    "response_dropped": b"\x00" + ok,
})
write("monitor_line", {
    "reading": b'{"time": 1795460181.381, "pid": 321, "cpu_user_seconds": 1.25, '
    b'"cpu_system_seconds": 0.50, "rss_bytes": 14422016, "fds": 26, "threads": 2, '
    b'"tcp_connections": 16}',
    "exited": b'{"time": 5.000, "pid": 9, "exited": true}',
    "no_connections": b'{"time": 1e9, "pid": 2147483647, "cpu_user_seconds": 0, '
    b'"cpu_system_seconds": 1e-3, "rss_bytes": 0, "fds": 0, "threads": 1}',
    "missing": b'{"time": 1, "pid": 3, "cpu_user_seconds": 1}',
})
write("doh_message", {
    "query": b"AAABAAABAAAAAAAAA3d3dwdleGFtcGxlA2NvbQAAAQAB",
    "padded": b"AAABAAABAAAAAAAAA3d3dw==",
    "target": b"/dns-query?ct=application/dns-message&dns=AAABAAABAAAAAAAAAAABAAE&x=1",
    "media_type": b"Application/DNS-Message ; charset=x",
})


def h2_frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) \
        + payload


def hpack_literal(index, value):
    # Literal without indexing, name from the static table (index < 15), no Huffman.
    assert index < 15 and len(value) < 127
    return bytes([index, len(value)]) + value


def hpack_literal_big(index, value):
    # The same for a static-table index of 15 or more.
    return bytes([0x0f, index - 15, len(value)]) + value


import base64  # noqa: E402

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + h2_frame(4, 0, 0)
AUTHORITY = hpack_literal(1, b"fuzz.test")
POST = b"\x83\x87" + AUTHORITY + hpack_literal(4, b"/dns-query") \
    + hpack_literal_big(31, b"application/dns-message") + hpack_literal_big(28, str(len(q)).encode())


def get(message, path=b"/dns-query"):
    dns = base64.urlsafe_b64encode(message).rstrip(b"=")
    return b"\x82\x87" + AUTHORITY + hpack_literal(4, path + b"?dns=" + dns) \
        + hpack_literal_big(19, b"application/dns-message")


post_request = h2_frame(1, 4, 1, POST) + h2_frame(0, 1, 1, q)
write("doh_server", {
    "post": b"\x03\x03\x00" + H2_PREFACE + post_request,
    "get": b"\x03\x03\x00" + H2_PREFACE + h2_frame(1, 5, 1, get(q)),
    "post_and_gets_one_octet_reads": b"\x00\x02\x02" + H2_PREFACE + post_request
    + h2_frame(1, 5, 3, get(q_opt)) + h2_frame(1, 5, 5, get(q))
    + h2_frame(4, 1, 0) + h2_frame(6, 0, 0, bytes(8)),
    "wrong_path_and_reset": b"\x06\x07\x08" + H2_PREFACE + h2_frame(1, 5, 1, get(q))
    + h2_frame(1, 4, 3, POST) + h2_frame(3, 0, 3, struct.pack(">I", 8)),
    "not_http2": b"\x03\x03\x00GET /dns-query HTTP/1.1\r\nHost: x\r\n\r\n",
})
