#pragma once
// Internal: the fixed table of queries in flight for one client. A slot's index sits in the
// low bits of the DNS id and a per-slot generation in the high bits, so matching a response
// is an array index and a compare: no hashing, no allocation per query. Slots in flight are
// kept on an intrusive list in send order, so expiring timed-out queries touches only the
// expired ones and the oldest query in flight is always at hand.

#include <bit>
#include <cstdint>
#include <vector>

namespace dnstransport::detail {

class slot_table {
 public:
  static constexpr std::uint32_t none = UINT32_MAX;

  enum class past : std::uint8_t { nothing, answered, expired };

  struct slot {
    std::uint64_t sent_ns = 0;   // open loop: the scheduled time, which latency runs from
    std::uint64_t taken_ns = 0;  // when it was handed to the transport to send
    std::uint64_t sequence = 0;  // send order within the client
    std::uint32_t query_index = 0;
    std::uint32_t prev = none;  // in-flight list, in send order
    std::uint32_t next = none;
    std::uint16_t id = 0;
    std::uint16_t previous_id = 0;  // id of the last completed query of this slot
    // Its question's letter case as sent, when the client tells queries of one question
    // apart by it (in_flight_questions.hpp): bit k set, the k-th letter in upper case.
    std::uint16_t case_pattern = 0;
    past previous = past::nothing;
    bool in_flight = false;
    bool counted = false;  // sent after the warm-up
    bool first_on_connection = false;
    // Sent, but on no connection now: the transport sends it again (a stream the server did
    // not process). A connection's end does not lose it; its timeout still runs.
    bool waiting_resend = false;
  };

  // `seed` varies the ids between clients so the server does not see the same few ids.
  slot_table(std::uint32_t capacity, std::uint16_t seed)
      : slots_(capacity),
        index_bits_(capacity <= 1 ? 0 : static_cast<unsigned>(std::bit_width(capacity - 1))) {
    free_.reserve(capacity);
    for (std::uint32_t i = capacity; i-- > 0;) free_.push_back(i);
    for (std::uint32_t i = 0; i < capacity; ++i) {
      slots_[i].id =
          static_cast<std::uint16_t>((i + (std::uint32_t{seed} << index_bits_)) & 0xffff);
      slots_[i].previous_id = static_cast<std::uint16_t>(~slots_[i].id);
    }
  }

  std::uint32_t capacity() const noexcept { return static_cast<std::uint32_t>(slots_.size()); }
  std::uint32_t in_flight() const noexcept { return capacity() - free_count(); }
  std::uint32_t free_count() const noexcept { return static_cast<std::uint32_t>(free_.size()); }
  bool empty() const noexcept { return head_ == none; }

  // Takes a free slot (the caller checked free_count() > 0) and gives it a fresh id.
  slot& acquire(std::uint64_t now, std::uint32_t query_index, bool counted) noexcept {
    const std::uint32_t index = free_.back();
    free_.pop_back();
    slot& s = slots_[index];
    const std::uint32_t generation_step = 1u << index_bits_;
    s.id = static_cast<std::uint16_t>((s.id + generation_step) & 0xffff);
    s.sent_ns = now;
    s.taken_ns = now;
    s.sequence = next_sequence_++;
    s.query_index = query_index;
    s.in_flight = true;
    s.counted = counted;
    s.first_on_connection = false;
    s.waiting_resend = false;
    s.prev = tail_;
    s.next = none;
    if (tail_ != none) {
      slots_[tail_].next = index;
    } else {
      head_ = index;
    }
    tail_ = index;
    return s;
  }

  // The slot a response id points at, if that query is in flight.
  slot* find(std::uint16_t id) noexcept {
    slot& s = slots_[index_of(id)];
    return s.in_flight && s.id == id ? &s : nullptr;
  }

  // What the id meant in the past, for a response that matched nothing in flight.
  past history(std::uint16_t id) const noexcept {
    const slot& s = slots_[index_of(id)];
    return s.previous_id == id ? s.previous : past::nothing;
  }

  void release(slot& s, past outcome) noexcept {
    const auto index = static_cast<std::uint32_t>(&s - slots_.data());
    if (s.prev != none) {
      slots_[s.prev].next = s.next;
    } else {
      head_ = s.next;
    }
    if (s.next != none) {
      slots_[s.next].prev = s.prev;
    } else {
      tail_ = s.prev;
    }
    s.in_flight = false;
    s.previous_id = s.id;
    s.previous = outcome;
    free_.push_back(index);
  }

  // The oldest query in flight, or null.
  slot* oldest() noexcept { return head_ == none ? nullptr : &slots_[head_]; }
  // The query sent after `s` that is still in flight, or null.
  slot* next_of(const slot& s) noexcept { return s.next == none ? nullptr : &slots_[s.next]; }

  std::uint64_t sequence_floor() const noexcept {
    return head_ == none ? next_sequence_ : slots_[head_].sequence;
  }

 private:
  std::uint32_t index_of(std::uint16_t id) const noexcept {
    return (id & ((1u << index_bits_) - 1)) % capacity();
  }

  std::vector<slot> slots_;
  std::vector<std::uint32_t> free_;
  unsigned index_bits_;
  std::uint32_t head_ = none;
  std::uint32_t tail_ = none;
  std::uint64_t next_sequence_ = 0;
};

}  // namespace dnstransport::detail
