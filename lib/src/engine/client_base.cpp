// client_base: what every transport's client shares (slots, the query cursor, the send
// budget, answers classified and counted, timeouts); the arrivals are arrival_schedule.cpp's,
// the answers' EDNS options and the client subnet client_edns.cpp's, the worker that runs
// the clients worker.cpp's.
#include "engine/engine.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>

#include <dnstransport/client.hpp>

#include "engine/query_feed.hpp"
#include "util/clock.hpp"

namespace dnstransport::detail {

client_base::client_base(worker& owner, unsigned index, std::uint64_t quota)
    : owner_(owner),
      index_(index),
      slots_(owner.plan().outstanding, static_cast<std::uint16_t>(index * 7919u)),
      // Clients start at different places in the query set so they do not all send the
      // same name at the same moment.
      next_query_(static_cast<std::uint32_t>((static_cast<std::uint64_t>(index) * 7919u) %
                                             owner.plan().queries->size())),
      quota_(quota),
      pace_phase_(static_cast<double>(index) / owner.plan().clients),
      question_of_(owner.plan().question_of.data()),
      query_count_(static_cast<std::uint32_t>(owner.plan().question_of.size())),
      questions_(
          owner.plan().questions_apart == in_flight_questions::mode::one_each
              ? in_flight_questions(owner.plan().outstanding, owner.plan().distinct_questions)
              : in_flight_questions(owner.plan().outstanding, owner.plan().questions_apart,
                                    owner.plan().question_patterns)),
      question_room_(owner.plan().in_flight_limit()) {
  // A piece per query of a batch: a batch never holds more queries than the client may have
  // in flight. DoH and DoQ (each answer on its own stream) copy their queries themselves.
  if (questions_.how() == in_flight_questions::mode::letter_case ||
      (owner.plan().client_subnet.on() &&
       questions_.how() != in_flight_questions::mode::unlimited)) {
    case_scratch_.resize(std::size_t{std::min(case_pieces, owner.plan().outstanding)} *
                         owner.plan().max_query_size());
  }
  const client_subnets& subnets = owner.plan().client_subnet;
  if (subnets.on() && !subnets.per_query) {
    subnets.write_address(subnets.subnet_of(index, 0), own_subnet_.data());
  }
}

std::span<const std::uint8_t> client_base::query_to_send(const slot_table::slot& s,
                                                         unsigned piece) noexcept {
  const auto query = plan().query(s.query_index);
  const std::uint32_t flips = case_flips(s);
  const bool subnet = plan().client_subnet.on();
  if (flips == 0 && !subnet) return query;
  const std::size_t size = plan().max_query_size();
  const auto scratch = std::span(case_scratch_).subspan(piece * size, size);
  if (flips != 0) {
    vary_letter_case(query, flips, scratch);
  } else {
    std::copy(query.begin(), query.end(), scratch.begin());
  }
  const auto copy = scratch.first(query.size());
  if (subnet) write_client_subnet(s, copy);
  return copy;
}

std::uint32_t client_base::case_flips(const slot_table::slot& s) const noexcept {
  if (questions_.how() != in_flight_questions::mode::letter_case) return 0;
  return s.case_pattern ^ plan().query_case[s.query_index];
}

std::uint32_t client_base::take_question(std::uint32_t query) noexcept {
  counts().in_flight_max = std::max(counts().in_flight_max, slots_.in_flight() + 1);
  const std::uint32_t own =
      questions_.how() == in_flight_questions::mode::letter_case ? plan().query_case[query] : 0;
  return questions_.take(question_of_[query], own);
}

bool client_base::may_send(std::uint64_t now) const noexcept {
  if (plan().feed != nullptr) return plan().feed->may_send();
  if (feeder_ != nullptr) {
    return !retries_.empty() || feeder_->may_send(now) || !feeder_->slots_.empty();
  }
  if (schedule_) {
    // A client whose next scheduled query falls after the end still may send (and keeps its
    // connection) until the end: it does not leave early, emptying the last row's connections.
    // A replay whose client has no query left (next is UINT64_MAX) is done.
    const std::uint64_t next = schedule_->next();
    return !schedule_->waiting_empty() || (arrivals_open_ && quota_ > 0 && next != UINT64_MAX &&
                                           (next < plan().send_end_ns || now < plan().send_end_ns));
  }
  return quota_ > 0 && now < plan().send_end_ns;
}

std::uint32_t client_base::send_allowance(std::uint64_t now) noexcept {
  if (!may_send(now)) return 0;
  const std::uint32_t room = std::min(slots_.free_count(), question_room_ - slots_.in_flight());
  if (plan().feed != nullptr) return std::min(room, plan().feed->ready());
  if (feeder_ != nullptr) {
    // In order; a retry whose question is still in flight waits for it.
    if (retries_.empty() || !questions_.has_room(question_of_[retries_.front().query_index]))
      return 0;
    return std::min<std::uint32_t>(room, 1);
  }
  if (schedule_) {
    admit_arrivals(now);
    return schedule_->replays() ? replay_allowance(room) : std::min(room, schedule_->waiting());
  }
  std::uint64_t allowance = std::min<std::uint64_t>(room, quota_);
  if (plan().rate_per_client > 0) {
    // Query k of this client is due at (k + phase) / rate: the phases spread the clients
    // evenly over one interval, so a paced load is smooth instead of one burst from every
    // client at the same instant.
    const double elapsed = static_cast<double>(now - plan().start_ns) / 1e9;
    const double due = elapsed * plan().rate_per_client - pace_phase_;
    const std::uint64_t permitted = due < 0 ? 0 : static_cast<std::uint64_t>(due) + 1;
    allowance = std::min(allowance, permitted > sent_ ? permitted - sent_ : 0);
  }
  return static_cast<std::uint32_t>(allowance);
}

std::uint32_t client_base::replay_allowance(std::uint32_t room) const noexcept {
  // The waiting queries whose question is not in flight, each question once: a client that
  // asks again waits for its first answer, and its other queries do not wait behind it. The
  // waiting list is at most --outstanding long, so the scan stays short.
  if (questions_.how() != in_flight_questions::mode::one_each) {
    return std::min(room, schedule_->waiting());
  }
  std::uint32_t n = 0;
  for (std::uint32_t i = 0; i < schedule_->waiting() && n < room; ++i) {
    const std::uint32_t question = question_of_[schedule_->waiting_at(i).query];
    if (questions_.contains(question)) continue;
    bool repeated = false;
    for (std::uint32_t k = 0; k < i && !repeated; ++k) {
      repeated = question_of_[schedule_->waiting_at(k).query] == question;
    }
    if (!repeated) ++n;
  }
  return n;
}

slot_table::slot& client_base::take_slot(std::uint64_t now) noexcept {
  if (plan().feed != nullptr) {
    // Each fed query is its own question (query_feed keeps one of a question in flight).
    owner_.roll_timeline(now);
    const std::uint32_t cell = plan().feed->take();
    const bool counted = measuring(now);
    slot_table::slot& s = slots_.acquire(now, cell, counted);
    s.case_pattern = static_cast<std::uint16_t>(take_question(cell));
    ++sent_;
    if (counted) ++counts().queries_sent;
    return s;
  }
  if (feeder_ != nullptr) {
    const retry r = retries_.front();
    retries_.pop_front();
    const std::uint32_t pattern = take_question(r.query_index);
    slot_table::slot& s = slots_.acquire(now, r.query_index, r.counted);
    s.sent_ns = r.sent_ns;
    s.case_pattern = static_cast<std::uint16_t>(pattern);
    return s;
  }
  std::uint32_t query = next_query_;
  std::uint64_t scheduled = 0;
  if (schedule_ && schedule_->replays()) {
    // The oldest waiting query of the capture whose question is not in flight
    // (send_allowance counted it, so the search ends).
    std::uint32_t i = 0;
    while (!questions_.has_room(question_of_[schedule_->waiting_at(i).query])) ++i;
    const arrival_schedule::arrival a = schedule_->take(i);
    query = a.query;
    scheduled = a.at;
  } else {
    // The next query of the cycle whose question has room for one more in flight
    // (send_allowance left room for one, so the search ends).
    while (!questions_.has_room(question_of_[query])) {
      if (++query == query_count_) query = 0;
    }
    next_query_ = query + 1 == query_count_ ? 0 : query + 1;
    if (schedule_) scheduled = schedule_->pop_front().at;
  }
  const auto pattern = static_cast<std::uint16_t>(take_question(query));
  owner_.roll_timeline(now);
  if (schedule_) {
    // Open loop: the query's time is its schedule's (the quota was taken when it came).
    const bool counted = scheduled >= plan().measure_start_ns;
    slot_table::slot& s = slots_.acquire(now, query, counted);
    s.sent_ns = scheduled;
    s.case_pattern = pattern;
    ++sent_;
    if (counted) ++counts().queries_sent;
    return s;
  }
  const bool counted = measuring(now);
  slot_table::slot& s = slots_.acquire(now, query, counted);
  s.case_pattern = pattern;
  ++sent_;
  // The count is of measured queries: the warm-up's do not use it up.
  if (quota_ != UINT64_MAX && counted) --quota_;
  if (counted) ++counts().queries_sent;
  return s;
}

void client_base::return_slot(slot_table::slot& s) noexcept {
  if (plan().feed != nullptr) {
    plan().feed->put_back(s.query_index);
    --sent_;
    if (s.counted) --counts().queries_sent;
  } else if (feeder_ != nullptr) {
    retries_.push_front({s.query_index, s.sent_ns, s.counted});
  } else if (schedule_) {
    schedule_->push_front({s.sent_ns, s.query_index});
    --sent_;
    if (s.counted) --counts().queries_sent;
    next_query_ = s.query_index;
  } else {
    --sent_;
    if (quota_ != UINT64_MAX && s.counted) ++quota_;
    if (s.counted) --counts().queries_sent;
    next_query_ = s.query_index;
  }
  release(s, slot_table::past::nothing);
}

void client_base::release(slot_table::slot& s, slot_table::past outcome) noexcept {
  if (schedule_ && s.counted && outcome != slot_table::past::nothing) {
    counts().send_lag.record(s.taken_ns - s.sent_ns);
  }
  questions_.release(question_of_[s.query_index], s.case_pattern);
  slots_.release(s, outcome);
}

void client_base::finish(slot_table::slot& s, slot_table::past outcome,
                         query_outcome how) noexcept {
  if (plan().feed != nullptr) plan().feed->ended(s.query_index, how);
  release(s, outcome);
}

void client_base::connection_up() noexcept {
  if (connection_live_) return;
  connection_live_ = true;
  owner_.count_open_connection(1);
}

void client_base::connection_down() noexcept {
  if (!connection_live_) return;
  connection_live_ = false;
  owner_.count_open_connection(-1);
}

slot_table::slot* client_base::in_flight(std::uint16_t id, std::uint64_t now) noexcept {
  query_counters& r = counts();
  slot_table::slot* s = slots_.find(id);
  if (s == nullptr) {
    if (measuring(now)) {
      switch (slots_.history(id)) {
        case slot_table::past::answered:
          ++r.duplicates;
          break;
        case slot_table::past::expired:
          ++r.late;
          break;
        case slot_table::past::nothing:
          ++r.unexpected;
          break;
      }
    }
    return nullptr;
  }
  if (now - s->sent_ns >= plan().timeout_ns) {
    // Its timeout passed before this answer was read (the tick that would have expired it
    // had not run yet): lost, and the answer late, exactly as if the tick had come first.
    if (s->counted) ++r.lost;
    if (measuring(now)) ++r.late;
    finish(*s, slot_table::past::expired, query_outcome::timed_out);
    return nullptr;
  }
  return s;
}

client_base::completion client_base::on_message(std::span<const std::uint8_t> message,
                                                std::uint64_t now, bool datagram,
                                                std::uint64_t received_ns) noexcept {
  if (message.size() < 2) {
    if (measuring(now)) ++counts().unexpected;
    return {};
  }
  const std::uint16_t id = read_id(message.data());
  slot_table::slot* s = in_flight(id, now);
  return s == nullptr ? completion{} : complete(*s, message, now, id, datagram, received_ns);
}

client_base::completion client_base::on_answer(std::uint16_t id,
                                               std::span<const std::uint8_t> message,
                                               std::uint64_t now, std::uint16_t wire_id,
                                               std::uint64_t received_ns) noexcept {
  slot_table::slot* s = in_flight(id, now);
  return s == nullptr ? completion{} : complete(*s, message, now, wire_id, false, received_ns);
}

void client_base::fail_exchange(std::uint16_t id, std::uint64_t now, std::string_view cause,
                                exchange_layer layer) noexcept {
  slot_table::slot* s = in_flight(id, now);
  if (s == nullptr) return;
  if (s->counted) {
    const bool quic = layer == exchange_layer::quic;
    ++(quic ? counts().quic_failed : counts().http_failed);
    try {
      ++(quic ? counts().quic_failures : counts().http_failures)[std::string(cause)];
    } catch (...) {  // out of memory: the total still counts it
    }
  }
  finish(*s, slot_table::past::answered, query_outcome::exchange_failed);
}

void client_base::lose_on_close(std::uint16_t id) noexcept {
  slot_table::slot* s = slots_.find(id);
  if (s == nullptr) return;
  if (s->counted) ++counts().lost_on_close;
  finish(*s, slot_table::past::expired, query_outcome::connection_closed);
}

void client_base::count_stray(std::uint16_t id, std::uint64_t now) noexcept {
  if (slots_.find(id) != nullptr) {
    // Its query is in flight again (on another stream): this message is not its answer.
    if (measuring(now)) ++counts().unexpected;
    return;
  }
  in_flight(id, now);  // counts what the id was
}

client_base::completion client_base::complete(slot_table::slot& slot,
                                              std::span<const std::uint8_t> message,
                                              std::uint64_t now, std::uint16_t expected_id,
                                              bool datagram, std::uint64_t received_ns) noexcept {
  owner_.roll_timeline(now);
  // A kernel stamp outside (sent, now] (a clock stepped in between) is not believed.
  const std::uint64_t answered_ns =
      received_ns > slot.sent_ns && received_ns <= now ? received_ns : now;
  query_counters& r = counts();
  slot_table::slot* s = &slot;
  completion done{true, false, s->sequence, s->first_on_connection};
  bool handed_on = false;
  done.latency_ns = answered_ns - s->sent_ns;
  done.sent_ns = s->sent_ns;
  coalescing_.answered(done.latency_ns);
  if (datagram && message.size() > plan().udp_answer_limit(s->query_index)) {
    // A protocol violation, whatever the message holds: no stub would take it.
    if (s->counted) ++r.oversized;
  } else {
    const auto query = plan().query(s->query_index);
    response_summary summary =
        check_response(message, query, expected_id, plan().read_edns_options);
    // Told apart by letter case, a query is answered only by an answer that echoes its case:
    // one that does not may carry another query's id (or come from a server that does not
    // echo the case), and is mismatched, counted under its cause.
    const bool case_lost = summary.verdict == response_verdict::ok &&
                           questions_.how() == in_flight_questions::mode::letter_case &&
                           !echoes_letter_case(message, query, case_flips(*s));
    if (case_lost) summary.verdict = response_verdict::wrong_question;
    // An echo of another subnet is dropped, as RFC 7871 (section 7.3) has a resolver do.
    const bool subnet_wrong = summary.verdict == response_verdict::ok && summary.client_subnet &&
                              plan().client_subnet.on() &&
                              !echoes_client_subnet(*s, message, summary);
    if (subnet_wrong) summary.verdict = response_verdict::wrong_question;
    const bool ok = summary.verdict == response_verdict::ok;
    if (ok && summary.keepalive) done.keepalive_timeout = summary.keepalive_timeout;
    if (ok && summary.truncated && retry_truncated(*s)) {
      if (s->counted) ++r.tc_retried;
      handed_on = true;  // its query goes on over TCP
    } else if (s->counted) {
      switch (summary.verdict) {
        case response_verdict::ok:
          if (summary.truncated) {
            ++r.truncated;  // no answer was delivered
            break;
          }
          ++r.responses_received;
          done.answered = true;
          ++r.rcodes[summary.rcode & 0x0f];
          if (summary.authenticated) ++r.authenticated_answers;
          if (feeder_ != nullptr) ++r.tc_retry_answered;
          r.latency.record(answered_ns - s->sent_ns);
          if (plan().feed != nullptr) {
            plan().feed->answered(s->query_index, message,
                                  static_cast<std::uint8_t>(summary.rcode & 0x0f),
                                  answered_ns - s->sent_ns);
          }
          if (plan().on_answer != nullptr) {
            (*plan().on_answer)({index_, s->query_index, s->sent_ns, answered_ns - s->sent_ns,
                                 static_cast<std::uint8_t>(summary.rcode & 0x0f), message});
          }
          owner_.row_latency.record(answered_ns - s->sent_ns);
          owner_.last_answer_ns = std::max(owner_.last_answer_ns, now);
          if (summary.keepalive) count_keepalive(summary.keepalive_timeout);
          if (summary.padded) count_padded(message.size());
          if (summary.client_subnet && plan().client_subnet.on()) count_client_subnet(summary);
          break;
        case response_verdict::too_short:
        case response_verdict::malformed:
          ++r.malformed;
          break;
        case response_verdict::not_response:
        case response_verdict::wrong_id:
        case response_verdict::wrong_opcode:
        case response_verdict::wrong_question:
          ++r.mismatched;
          if (case_lost) ++r.case_not_echoed;
          if (subnet_wrong) ++r.client_subnet_wrong;
          break;
      }
    }
  }
  if (handed_on) {
    release(*s, slot_table::past::answered);
  } else {
    finish(*s, slot_table::past::answered,
           done.answered ? query_outcome::answered : query_outcome::bad_answer);
  }
  return done;
}

void client_base::expire_waiting_retries(std::uint64_t now) noexcept {
  while (!retries_.empty() && retries_.front().sent_ns + plan().timeout_ns <= now) {
    if (retries_.front().counted) ++counts().lost;
    retries_.pop_front();
  }
}

void client_base::expire(std::uint64_t now) noexcept {
  const std::uint64_t timeout = plan().timeout_ns;
  expire_waiting_retries(now);
  while (slot_table::slot* s = slots_.oldest()) {
    if (s->sent_ns + timeout > now) break;
    if (s->counted) ++counts().lost;
    finish(*s, slot_table::past::expired, query_outcome::timed_out);
  }
}

void client_base::fail_in_flight(bool abandoned) noexcept {
  for (slot_table::slot* s = slots_.oldest(); s != nullptr;) {
    slot_table::slot* const next = slots_.next_of(*s);
    if (s->waiting_resend && !abandoned) {
      s = next;
      continue;
    }
    if (s->counted) {
      if (abandoned) {
        ++counts().abandoned;
      } else {
        ++counts().lost_on_close;
      }
    }
    // A fed query whose connection ended goes again, once, on the next connection (a server
    // may close a kept connection at any time: RFC 7766, section 6.2.3).
    if (!abandoned && plan().feed != nullptr && plan().feed->send_again(s->query_index)) {
      release(*s, slot_table::past::expired);
      s = next;
      continue;
    }
    finish(*s, slot_table::past::expired,
           abandoned ? query_outcome::abandoned : query_outcome::connection_closed);
    s = next;
  }
}

}  // namespace dnstransport::detail
