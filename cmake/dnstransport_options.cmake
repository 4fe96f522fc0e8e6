# Compiler flags shared by every target of the project (not exported to consumers).
add_library(dnstransport_flags INTERFACE)
target_compile_options(dnstransport_flags INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>
  $<$<AND:$<CXX_COMPILER_ID:GNU,Clang>,$<BOOL:${DNSTRANSPORT_WARNINGS_AS_ERRORS}>>:-Werror>)
if(DNSTRANSPORT_SANITIZE)
  target_compile_options(dnstransport_flags INTERFACE
    -fsanitize=${DNSTRANSPORT_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(dnstransport_flags INTERFACE -fsanitize=${DNSTRANSPORT_SANITIZE})
endif()
