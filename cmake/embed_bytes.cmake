# cmake -DIN=FILE -DOUT=FILE.cpp -P embed_bytes.cmake: FILE's octets as
# dnstransport::detail::xdp_answers_object (a std::span), for the library to load.
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}" "// Generated from ${IN} by cmake/embed_bytes.cmake.
#include \"transport/xdp/xdp_program.hpp\"
namespace dnstransport::detail {
namespace {
alignas(8) const unsigned char object_bytes[] = {${bytes}};
}  // namespace
const std::span<const unsigned char> xdp_answers_object(object_bytes, sizeof object_bytes);
}  // namespace dnstransport::detail
")
