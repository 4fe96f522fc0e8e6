// A handshake step's outcome, for the stream client and the responder alike.
#include "transport/stream/byte_stream.hpp"

namespace dnstransport::detail {

handshake_step advance_handshake(byte_stream& stream) {
  handshake_step step;
  switch (stream.handshake()) {
    case stream_io::done:
      step.result = handshake_step::outcome::done;
      if (const tls_connection* tls = stream.tls()) {
        step.resumed = tls->resumed();
        step.early_data_accepted = tls->early_data() == early_data_status::accepted;
      }
      break;
    case stream_io::want_read:
      step.result = handshake_step::outcome::want_read;
      break;
    case stream_io::want_write:
      step.result = handshake_step::outcome::want_write;
      break;
    case stream_io::closed:
    case stream_io::failed:
      step.result = handshake_step::outcome::failed;
      break;
  }
  return step;
}

}  // namespace dnstransport::detail
