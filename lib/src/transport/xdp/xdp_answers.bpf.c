// The XDP program of --xdp (compiled for the BPF target by clang, kept in the library as
// bytes): a frame that is a UDP datagram (or a TCP segment, in a run over TCP) from the
// server's address and port goes to the AF_XDP socket of the queue it came in on
// (dnstransport_xsks, one socket per queue); every other frame (ARP, neighbour discovery,
// the other protocol, anything not from the server) goes on to the kernel, as does an answer
// for a queue with no socket.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

// Before each frame steered to a socket: when the kernel received it (CLOCK_MONOTONIC), which
// answers are timed to (xdp_port.cpp reads it back).
struct dnstransport_meta {
  __u64 magic;
  __u64 received_ns;
};
#define DNSTRANSPORT_META_MAGIC 0x64747864707473ULL  // "dtxdpts"

// The server, written by the library before the program is attached (xdp_program.cpp).
struct dnstransport_server {
  __u32 family;      // 4 or 6
  __u32 address[4];  // network order; IPv4 in the first word
  __u32 port;        // network order, in the low 16 bits
  __u32 protocol;    // IPPROTO_UDP or IPPROTO_TCP
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct dnstransport_server);
} dnstransport_target SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_XSKMAP);
  __uint(max_entries, 256);
  __type(key, __u32);
  __type(value, __u32);
} dnstransport_xsks SEC(".maps");

SEC("xdp")
int dnstransport_answers(struct xdp_md* ctx) {
  void* data = (void*)(long)ctx->data;
  void* end = (void*)(long)ctx->data_end;
  struct ethhdr* eth = data;
  if ((void*)(eth + 1) > end) return XDP_PASS;
  __u32 key = 0;
  struct dnstransport_server* server = bpf_map_lookup_elem(&dnstransport_target, &key);
  if (!server) return XDP_PASS;
  void* transport;
  if (eth->h_proto == bpf_htons(ETH_P_IP) && server->family == 4) {
    struct iphdr* ip = (void*)(eth + 1);
    if ((void*)(ip + 1) > end || ip->ihl != 5 || ip->protocol != server->protocol) return XDP_PASS;
    if (ip->saddr != server->address[0]) return XDP_PASS;
    transport = ip + 1;
  } else if (eth->h_proto == bpf_htons(ETH_P_IPV6) && server->family == 6) {
    struct ipv6hdr* ip6 = (void*)(eth + 1);
    if ((void*)(ip6 + 1) > end || ip6->nexthdr != server->protocol) return XDP_PASS;
    if (ip6->saddr.in6_u.u6_addr32[0] != server->address[0] ||
        ip6->saddr.in6_u.u6_addr32[1] != server->address[1] ||
        ip6->saddr.in6_u.u6_addr32[2] != server->address[2] ||
        ip6->saddr.in6_u.u6_addr32[3] != server->address[3]) {
      return XDP_PASS;
    }
    transport = ip6 + 1;
  } else {
    return XDP_PASS;
  }
  // The source port is the first field of both headers.
  if (server->protocol == IPPROTO_TCP) {
    struct tcphdr* tcp = transport;
    if ((void*)(tcp + 1) > end || tcp->source != (__u16)server->port) return XDP_PASS;
  } else {
    struct udphdr* udp = transport;
    if ((void*)(udp + 1) > end || udp->source != (__u16)server->port) return XDP_PASS;
  }
  const __u64 now = bpf_ktime_get_ns();
  if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(struct dnstransport_meta)) == 0) {
    struct dnstransport_meta* meta = (void*)(long)ctx->data_meta;
    if ((void*)(meta + 1) <= (void*)(long)ctx->data) {
      meta->magic = DNSTRANSPORT_META_MAGIC;
      meta->received_ns = now;
    }
  }
  return bpf_redirect_map(&dnstransport_xsks, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Dual BSD/GPL";
