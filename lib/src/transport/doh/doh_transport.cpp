#include "transport/doh/doh_transport.hpp"

#include <new>

#include "transport/doh/doh_client.hpp"

namespace dnstransport::detail {

doh_transport::doh_transport(const stream_settings& stream, doh_settings doh,
                             std::unique_ptr<stream_connector> connector,
                             stream_socket_factory make_socket)
    : stream_(stream, std::move(connector), std::move(make_socket)), doh_(std::move(doh)) {
  if (nghttp2_session_callbacks_new(&callbacks_) != 0) throw std::bad_alloc();
  nghttp2_session_callbacks_set_on_header_callback(callbacks_, &doh_session::on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks_,
                                                            &doh_session::on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks_, &doh_session::on_frame);
  nghttp2_session_callbacks_set_on_begin_frame_callback(callbacks_, &doh_session::on_begin_frame);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks_, &doh_session::on_stream_close);
  nghttp2_session_callbacks_set_error_callback2(callbacks_, &doh_session::on_error);
  if (nghttp2_option_new(&options_) != 0) {
    nghttp2_session_callbacks_del(callbacks_);
    throw std::bad_alloc();
  }
  // The client checks what it needs of a response itself (:status, content-type,
  // content-length against the body): nghttp2's general HTTP checks of every header cost
  // more than the rest of an answer's handling.
  nghttp2_option_set_no_http_messaging(options_, 1);
}

doh_transport::~doh_transport() {
  nghttp2_option_del(options_);
  nghttp2_session_callbacks_del(callbacks_);
}

std::unique_ptr<client_base> doh_transport::make_client(worker& owner, unsigned index,
                                                        std::uint64_t quota) const {
  auto client = std::make_unique<stream_client>(owner, index, quota, stream_);
  client->set_session(std::make_unique<doh_session>(*client, *this));
  return client;
}

}  // namespace dnstransport::detail
