# Compiler flags shared by every target of the project (not exported to consumers).
add_library(dnstransport_flags INTERFACE)
target_compile_options(dnstransport_flags INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>
  $<$<AND:$<CXX_COMPILER_ID:GNU,Clang>,$<BOOL:${DNSTRANSPORT_WARNINGS_AS_ERRORS}>>:-Werror>)
if(DNSTRANSPORT_SANITIZE)
  target_compile_options(dnstransport_flags INTERFACE
    -fsanitize=${DNSTRANSPORT_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(dnstransport_flags INTERFACE -fsanitize=${DNSTRANSPORT_SANITIZE})
  # The sanitizers' instrumentation makes GCC 12 report maybe-uninitialized where nothing is
  # (std::optional in message parsing, std::regex in the CLI tests, at -O1): in sanitizer
  # builds these stay warnings; the Release build keeps them errors.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(dnstransport_flags INTERFACE -Wno-error=maybe-uninitialized)
  endif()
  # GCC warns (-Wtsan) that ThreadSanitizer does not model atomic_thread_fence, which
  # Boost.Asio's std_fenced_block uses in every handler it completes: a note about
  # third-party code that would stop a TSan build with -Werror. TSan also brings false
  # array-bounds warnings (std::string operator+), which stay warnings there.
  if(DNSTRANSPORT_SANITIZE MATCHES "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(dnstransport_flags INTERFACE -Wno-tsan -Wno-error=array-bounds)
  endif()
  # Clang before 15 cannot compile a C++20 coroutine with UBSan's function-type check (its
  # prologue data in the coroutine's split parts: "error in backend: Cannot represent a
  # difference across sections", LLVM issue 49689); async_load_test's coroutines need it off.
  if(DNSTRANSPORT_SANITIZE MATCHES "undefined" AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang"
     AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 15)
    target_compile_options(dnstransport_flags INTERFACE -fno-sanitize=function)
  endif()
endif()
