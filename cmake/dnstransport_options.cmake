# Compiler flags shared by every target of the project (not exported to consumers).
add_library(dnstransport_flags INTERFACE)
target_compile_options(dnstransport_flags INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>
  $<$<AND:$<CXX_COMPILER_ID:GNU,Clang>,$<BOOL:${DNSTRANSPORT_WARNINGS_AS_ERRORS}>>:-Werror>)
if(DNSTRANSPORT_SANITIZE)
  target_compile_options(dnstransport_flags INTERFACE
    -fsanitize=${DNSTRANSPORT_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(dnstransport_flags INTERFACE -fsanitize=${DNSTRANSPORT_SANITIZE})
  # GCC warns (-Wtsan) that ThreadSanitizer does not model atomic_thread_fence, which
  # Boost.Asio's std_fenced_block uses in every handler it completes: a note about
  # third-party code that would stop a TSan build with -Werror. The TSan instrumentation also
  # makes GCC 12 report false maybe-uninitialized (std::optional) and array-bounds
  # (std::string operator+) warnings; they stay warnings there, and errors in the Release and
  # ASan builds.
  if(DNSTRANSPORT_SANITIZE MATCHES "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(dnstransport_flags INTERFACE
      -Wno-tsan -Wno-error=maybe-uninitialized -Wno-error=array-bounds)
  endif()
endif()
